package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	cpty "github.com/creack/pty"
)

// The raw baselines: the same work as a scenario asks of the host, done by this
// process straight on a pseudoterminal (creack/pty) or on pipes, as the host's own
// terminals are, with the same shell. They are the floor each host figure is held to.

// rawProc is a child started by the bench itself.
type rawProc struct {
	cmd *exec.Cmd
	out *os.File // the master, or the output pipe's read end
	in  *os.File // the master, or the stdin pipe's write end
}

// startRaw runs `shell -c script` under a pseudoterminal (80x24) or on pipes, in a
// session of its own like the host's children.
func startRaw(usePty bool, shell, script string) (*rawProc, error) {
	var args []string
	if script != "" {
		args = append(args, "-c", script)
	}
	return startRawCmd(usePty, exec.Command(shell, args...))
}

// startRawCmd starts cmd as startRaw does: under a pseudoterminal (80x24) or on
// pipes, in a session of its own.
func startRawCmd(usePty bool, cmd *exec.Cmd) (*rawProc, error) {
	shell := cmd.Path
	if usePty {
		master, err := cpty.StartWithSize(cmd, &cpty.Winsize{Cols: 80, Rows: 24})
		if err != nil {
			return nil, fmt.Errorf("raw: start %s under a pty: %w", shell, err)
		}
		return &rawProc{cmd: cmd, out: master, in: master}, nil
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = outW.Close()
	_ = inR.Close()
	if err != nil {
		_ = outR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("raw: start %s: %w", shell, err)
	}
	return &rawProc{cmd: cmd, out: outR, in: inW}, nil
}

// read reads output; a pseudoterminal whose slave is gone says EIO, which is EOF.
func (p *rawProc) read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if err != nil && errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// drain reads until the end of the output and returns how many bytes there were.
func (p *rawProc) drain(buf []byte) (int64, error) {
	var total int64
	for {
		n, err := p.read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readUntil reads until the output seen so far contains want.
func (p *rawProc) readUntil(buf []byte, want []byte) error {
	var seen []byte
	for !bytes.Contains(seen, want) {
		n, err := p.read(buf)
		seen = append(seen, buf[:n]...)
		if err != nil {
			return fmt.Errorf("raw: output ended before %q: %w (saw %q)", want, err, seen)
		}
	}
	return nil
}

// kill ends the child's process group.
func (p *rawProc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close releases the descriptors and reaps the child.
func (p *rawProc) close() error {
	_ = p.out.Close()
	if p.in != p.out {
		_ = p.in.Close()
	}
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // the status is the child's business; the bench wanted its output
	}
	return err
}
