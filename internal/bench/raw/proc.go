package raw

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

// Proc is a child started by the bench itself, on a pseudoterminal or on pipes.
type Proc struct {
	cmd *exec.Cmd
	out *os.File // the master, or the output pipe's read end
	in  *os.File // the master, or the stdin pipe's write end
}

// Start runs `shell -c script` under a pseudoterminal (80x24) or on pipes, in a
// session of its own like the host's children; script "" runs the shell with no
// arguments.
func Start(usePty bool, shell, script string) (*Proc, error) {
	var args []string
	if script != "" {
		args = append(args, "-c", script)
	}
	return StartCmd(usePty, exec.Command(shell, args...))
}

// StartCmd starts cmd as Start does: under a pseudoterminal (80x24) or on pipes, in
// a session of its own.
func StartCmd(usePty bool, cmd *exec.Cmd) (*Proc, error) {
	shell := cmd.Path
	if usePty {
		master, err := cpty.StartWithSize(cmd, &cpty.Winsize{Cols: 80, Rows: 24})
		if err != nil {
			return nil, fmt.Errorf("raw: start %s under a pty: %w", shell, err)
		}
		return &Proc{cmd: cmd, out: master, in: master}, nil
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
	return &Proc{cmd: cmd, out: outR, in: inW}, nil
}

// Read reads output; a pseudoterminal whose slave is gone says EIO, which is EOF.
func (p *Proc) Read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if err != nil && errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

// Write types b: into the master, or the stdin pipe.
func (p *Proc) Write(b []byte) (int, error) { return p.in.Write(b) }

// Drain reads until the end of the output and returns how many bytes there were.
func (p *Proc) Drain(buf []byte) (int64, error) {
	var total int64
	for {
		n, err := p.Read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// ReadUntil reads until the output seen so far contains want.
func (p *Proc) ReadUntil(buf []byte, want []byte) error {
	var seen []byte
	for !bytes.Contains(seen, want) {
		n, err := p.Read(buf)
		seen = append(seen, buf[:n]...)
		if err != nil {
			return fmt.Errorf("raw: output ended before %q: %w (saw %q)", want, err, seen)
		}
	}
	return nil
}

// Kill ends the child's process group.
func (p *Proc) Kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Close releases the descriptors and reaps the child.
func (p *Proc) Close() error {
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
