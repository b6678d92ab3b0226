package hoststart

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ProcessOptions are how a host of its own process is started. Exe is required.
type ProcessOptions struct {
	// Exe is the termhost binary; `Exe serve` is run.
	Exe string
	// Pty is serve's --pty: auto, always or never.
	Pty string
	// Shell is the host's default shell, given to it as $SHELL; "" keeps this
	// process's.
	Shell string
	// EmptyHome runs the host, and this process until Close, with HOME set to an
	// empty folder (see LocalOptions.EmptyHome).
	EmptyHome bool
	// LogLevel is serve's --log-level; "" means warn.
	LogLevel string
	// Logs receives the host's stderr; nil discards it.
	Logs io.Writer
	// Agents are serve's --agent NAME='command args' flags, one each.
	Agents []string
	// Env are KEY=VALUE pairs added to the host's environment (GOMAXPROCS=1, say),
	// so a runtime setting can be measured on the host alone.
	Env []string
	// Args are more serve flags, after the ones above (a cluster node's --cluster,
	// --node-addr and --seeds, say).
	Args []string
}

// Process is `termhost serve` on a free loopback port in a process of its own,
// with a state folder that Close removes: the way a person runs the host, with the
// bench's subscribers outside it, each side with its own Go scheduler.
type Process struct {
	URL   string
	Token string
	PID   int

	cmd         *exec.Cmd
	exited      chan struct{}
	stateDir    string
	restoreHome func()
}

// StartProcess starts the host and waits for its `listening on` line.
func StartProcess(opts ProcessOptions) (*Process, error) {
	dir, err := os.MkdirTemp("", "termhost-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: state folder: %w", err)
	}
	h := &Process{stateDir: dir, exited: make(chan struct{})}
	if err := h.start(opts); err != nil {
		_ = h.Close()
		return nil, err
	}
	return h, nil
}

func (h *Process) start(opts ProcessOptions) error {
	if opts.EmptyHome {
		restore, err := useEmptyHome(h.stateDir)
		if err != nil {
			return err
		}
		h.restoreHome = restore
	}
	level := opts.LogLevel
	if level == "" {
		level = "warn"
	}
	pty := opts.Pty
	if pty == "" {
		pty = "auto"
	}
	state := filepath.Join(h.stateDir, "state")
	cmd := exec.Command(opts.Exe, "serve", "--listen", "127.0.0.1:0", "--state-dir", state, "--pty", pty, "--log-level", level)
	for _, a := range opts.Agents {
		cmd.Args = append(cmd.Args, "--agent", a)
	}
	cmd.Args = append(cmd.Args, opts.Args...)
	cmd.Env = os.Environ()
	if opts.Shell != "" {
		cmd.Env = append(cmd.Env, "SHELL="+opts.Shell)
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.Stderr = opts.Logs
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: starting %s serve: %w", opts.Exe, err)
	}
	h.cmd, h.PID = cmd, cmd.Process.Pid

	// The contract (DESIGN.md): serve prints "termhost listening on ws://…/" on
	// stdout once it accepts connections. Anything after it is drained unread.
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok && !sent {
				found <- strings.TrimSpace(url)
				sent = true
			}
		}
		_ = cmd.Wait()
		close(h.exited)
	}()
	select {
	case h.URL = <-found:
	case <-h.exited:
		return fmt.Errorf("bench: %s serve exited before listening (%v)", opts.Exe, cmd.ProcessState)
	case <-time.After(30 * time.Second):
		return errors.New("bench: the host process did not start listening within 30 s")
	}
	tok, err := os.ReadFile(filepath.Join(state, "owner.token"))
	if err != nil {
		return fmt.Errorf("bench: reading the owner token: %w", err)
	}
	h.Token = strings.TrimSpace(string(tok))
	return nil
}

// Close stops the host the way an operator would (SIGTERM: every terminal is ended
// and reaped), kills it if it has not gone within 30 s, and removes its state folder.
func (h *Process) Close() error {
	var err error
	if h.cmd != nil {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
			err = errors.New("bench: the host process did not stop within 30 s of SIGTERM")
		}
	}
	return leaveState(h.stateDir, h.restoreHome, err)
}
