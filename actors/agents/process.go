package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/termhost/termhost/pty"
)

// The agent process: started in its own process group with pipes the runner opens
// itself (os.Pipe, not exec's StdoutPipe), so that the runner decides when its ends
// close: Wait does not close them under a reader that has not finished (os/exec:
// "it is incorrect to call Wait before all reads from the pipe have completed").

// Limits of a line of the agent's output, as the SDK's own reader has them.
const (
	lineBufferSize = 1 << 20
	maxLineSize    = 10 << 20
)

// drainGrace bounds the wait for the agent's stdout and stderr to end after the
// process exited (a child of the agent may hold them open), and for the process to
// exit after its stdout ended.
const drainGrace = 2 * time.Second

// agentProc is one run of the agent's process.
type agentProc struct {
	cmd   *exec.Cmd
	conn  *acp.ClientSideConnection
	stdin *os.File // our end of its stdin; closing it tells the agent to go

	// exited is closed once the process was waited for and its output read to the
	// end (or drainGrace passed); err is Wait's, set before.
	exited chan struct{}
	err    error

	closeStdin sync.Once
}

// startProcess starts argv in dir with its stdin and stdout speaking ACP to client
// over the connection it returns, its stderr to the log. Updates bypass the SDK's
// dispatch: see demux. done runs on a goroutine of the process's once it exited.
func startProcess(argv []string, dir string, c *client, log *slog.Logger, wg *sync.WaitGroup, done func(*agentProc)) (*agentProc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("open the agent's stdin: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("open the agent's stdout: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("open the agent's stderr: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	// Its own group: stopping the agent signals whatever it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	// The child has its copies; ours of its ends would keep EOF from ever coming.
	closeAll(inR, outW, errW)

	sdkR, sdkW := io.Pipe()
	p := &agentProc{cmd: cmd, stdin: inW, exited: make(chan struct{})}
	p.conn = acp.NewClientSideConnection(c, inW, sdkR)
	p.conn.SetLogger(slog.New(quieter{log.Handler()}))

	outDone, errDone := make(chan struct{}), make(chan struct{})
	wg.Add(3)
	go func() {
		defer wg.Done()
		demux(outR, sdkW, c, log)
		close(outDone)
		// The agent closed its stdout: it has nothing more to say. One that goes on
		// running is not listening either.
		select {
		case <-p.exited:
		case <-time.After(drainGrace):
			log.Warn("the agent closed its output but did not exit; killing it", "pid", cmd.Process.Pid)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	go func() {
		defer wg.Done()
		defer close(errDone)
		s := bufio.NewScanner(errR)
		s.Buffer(make([]byte, 0, 4096), maxLineSize)
		for s.Scan() {
			log.Debug("agent stderr", "line", s.Text())
		}
		// A line past the limit ends the scanner, not the agent: what it writes
		// still has to go somewhere, or it blocks on a full pipe.
		_, _ = io.Copy(io.Discard, errR)
	}()
	go func() {
		defer wg.Done()
		err := cmd.Wait()
		grace := time.After(drainGrace)
		for _, ch := range []chan struct{}{outDone, errDone} {
			select {
			case <-ch:
			case <-grace:
				log.Warn("the agent exited but its output is still open (a child of it holds it); closing it", "pid", cmd.Process.Pid)
			}
		}
		closeAll(outR, errR)
		p.closeIn()
		p.err = err
		close(p.exited)
		done(p)
	}()
	return p, nil
}

// closeIn closes the agent's stdin, once.
func (p *agentProc) closeIn() { p.closeStdin.Do(func() { _ = p.stdin.Close() }) }

// terminate ends the process group: stdin closed, SIGTERM, and SIGKILL after grace.
// It returns once the process has exited or a second grace passed.
func (p *agentProc) terminate(grace time.Duration, log *slog.Logger) {
	p.closeIn()
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	log.Debug("the agent did not end on SIGTERM; killing it", "pid", pid, "grace", grace)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(grace + drainGrace):
		log.Warn("the agent's process did not end after SIGKILL", "pid", pid)
	}
}

// demux reads the agent's output a line at a time, as the SDK's reader does, and
// hands every line to the SDK except session/update notifications, which it hands
// to the client itself, in order, before the next line.
//
// Why: the SDK handles each request from the agent on a goroutine of its own, while
// notifications go through a queue, so a session/request_permission or
// terminal/create could be handled before the session/update announcing the tool
// call it is about. Handled here, every update is applied before any later line is
// even read, so the session sees a tool call before its permission, and a turn's
// actions before its end (the prompt's answer is a later line).
func demux(out io.Reader, sdk *io.PipeWriter, c *client, log *slog.Logger) {
	s := bufio.NewScanner(out)
	s.Buffer(make([]byte, 0, lineBufferSize), maxLineSize)
	for s.Scan() {
		line := s.Bytes()
		if n, isUpdate := sessionUpdate(line, log); isUpdate {
			if n != nil {
				c.sessionUpdate(*n)
			}
			continue
		}
		if _, err := sdk.Write(append(line, '\n')); err != nil {
			break // the connection is gone
		}
	}
	if err := s.Err(); err != nil {
		log.Warn("reading the agent's output failed", "err", err)
		_ = sdk.CloseWithError(err)
		return
	}
	_ = sdk.Close()
}

// sessionUpdate decodes a line that is a session/update notification (a method, no
// id): isUpdate false for any other line, n nil for one that does not decode or is
// not valid (dropped, as the SDK drops it).
func sessionUpdate(line []byte, log *slog.Logger) (n *acp.SessionNotification, isUpdate bool) {
	if !bytes.Contains(line, []byte(acp.ClientMethodSessionUpdate)) {
		return nil, false
	}
	var head struct {
		ID     *json.RawMessage `json:"id"`
		Method string           `json:"method"`
		Params json.RawMessage  `json:"params"`
	}
	if json.Unmarshal(line, &head) != nil || head.ID != nil || head.Method != acp.ClientMethodSessionUpdate {
		return nil, false
	}
	n = &acp.SessionNotification{}
	if err := json.Unmarshal(head.Params, n); err != nil {
		log.Debug("a session/update that does not decode is dropped", "err", err)
		return nil, true
	}
	if err := n.Validate(); err != nil {
		log.Debug("an invalid session/update is dropped", "err", err)
		return nil, true
	}
	return n, true
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// exitReason says how the process ended, for a person.
func exitReason(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + pty.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// quieter is the SDK's log one step down: it logs a connection that closed at Info,
// which for the host is routine (Debug), and a line of the agent's it cannot parse
// at Error, which is the agent's fault and nothing an operator of the host must act
// on (Warn).
type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, lower(l))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return q.Handler.Handle(ctx, r)
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(attrs)}
}
func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }

func lower(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelError:
		return slog.LevelWarn
	case l >= slog.LevelInfo:
		return slog.LevelDebug
	}
	return l
}
