package agents

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/termhost/termhost/actors/backendterm"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/screen"
)

// The agent's terminals (ACP terminal/*): every command the agent runs is a host
// terminal opened through the session's seam (backendterm.Terminals), listed on the root
// and claimed for the session, the chat, the turn and the tool call that ran it, so
// anyone with the grants watches it, types into it or stops it. The agent knows it by
// an id of the runner's (term-N).

// previewLimit is how much of what a finished command printed its tool call's
// terminal block shows (the tail), in characters; the terminal itself holds it all.
const previewLimit = 10_000

// agentTerminal is one terminal the agent opened.
type agentTerminal struct {
	id    string
	bt    *backendterm.Terminal
	title string // the command line
	limit int    // outputByteLimit, 0 for none

	// exited is closed once the command exited, code set before; stopWaiting ends
	// the goroutine that waits for it (the terminal was released, or the runner
	// stops).
	exited      chan struct{}
	code        int
	stopWaiting context.CancelFunc
	released    bool // guarded by client.mu
}

// exit is how the command ended, ok false while it runs.
func (at *agentTerminal) exit() (code int, ok bool) {
	select {
	case <-at.exited:
		return at.code, true
	default:
		return 0, false
	}
}

// requestError is an error the agent is answered with: its message is for a person
// (an agent shows it, or reads it to decide what to do).
func requestError(format string, args ...any) *acp.RequestError {
	return &acp.RequestError{Code: -32603, Message: fmt.Sprintf(format, args...)}
}

// CreateTerminal opens a host terminal running the command, for the running turn's
// latest tool call.
func (c *client) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return acp.CreateTerminalResponse{}, requestError("the session is closing: no terminal opens now")
	}
	c.termSeq++
	id := fmt.Sprintf("term-%d", c.termSeq)
	chat, turnID := c.lastChat, c.lastTurn
	// The terminal's URI is named after its tool call: the turn's latest, else (no
	// call yet, or one that has a terminal already) a name of the runner's, unique
	// in the chat as the turn's id is.
	toolCallID := fmt.Sprintf("%s-%s", turnID, id)
	if t := c.turn; t != nil {
		if tc := t.calls[t.lastCall]; tc != nil && !tc.terminal {
			toolCallID = t.lastCall
			tc.terminal = true
		}
	}
	c.mu.Unlock()
	if chat == "" {
		return acp.CreateTerminalResponse{}, requestError("terminal/create before any prompt: a terminal opens for a chat's turn")
	}
	if c.spec.Terminals == nil {
		return acp.CreateTerminalResponse{}, requestError("this host gives the agent no terminals")
	}
	cwd := c.cwd
	if p.Cwd != nil && *p.Cwd != "" {
		cwd = *p.Cwd
	}
	if len(p.Env) > 0 {
		// backendterm.OpenSpec has no environment: the command gets the host
		// terminal's.
		c.log.Debug("terminal/create's env is not supported; the command runs with the host terminal's", "vars", len(p.Env))
	}
	bt, err := c.spec.Terminals.Open(ctx, backendterm.OpenSpec{Session: c.spec.Session, Chat: chat, TurnID: turnID, ToolCallID: toolCallID,
		Cwd: cwd, Program: p.Command, Args: p.Args})
	if err != nil {
		return acp.CreateTerminalResponse{}, requestError("the host could not open a terminal for %s: %v", p.Command, err)
	}
	wctx, stop := context.WithCancel(c.life)
	at := &agentTerminal{id: id, bt: bt, title: commandLine(p.Command, p.Args), exited: make(chan struct{}), stopWaiting: stop}
	if p.OutputByteLimit != nil && *p.OutputByteLimit > 0 {
		at.limit = *p.OutputByteLimit
	}
	c.mu.Lock()
	c.terms[at.id] = at
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if code, err := bt.Wait(wctx); err == nil {
			at.code = code
			close(at.exited)
		}
	}()
	c.log.Debug("the agent opened a terminal", "terminal", at.id, "uri", bt.URI, "command", at.title)
	return acp.CreateTerminalResponse{TerminalId: at.id}, nil
}

// commandLine is argv as a person reads it.
func commandLine(command string, args []string) string {
	words := append([]string{command}, args...)
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

// terminal is the agent's terminal with that id.
func (c *client) terminal(id string) (*agentTerminal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.terms[id]
	if at == nil {
		return nil, requestError("no terminal %s: the host opened none with that id", id)
	}
	if at.released {
		return nil, requestError("terminal %s was released", id)
	}
	return at, nil
}

// output is what the terminal printed, as plain text (the host's terminal holds it
// with its escape sequences; an agent reads it as a pipe would have given it).
func (at *agentTerminal) output(ctx context.Context) (string, error) {
	raw, err := at.bt.Output(ctx)
	if err != nil {
		return "", err
	}
	return screen.StripEscapes(raw), nil
}

// TerminalOutput answers what the terminal printed, its start cut to the agent's
// byte limit, and how the command ended once it has.
func (c *client) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	at, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	// The exit is read first: output read after it is all the command printed.
	code, exited := at.exit()
	out, err := at.output(ctx)
	if err != nil {
		return acp.TerminalOutputResponse{}, requestError("reading terminal %s: %v", p.TerminalId, err)
	}
	res := acp.TerminalOutputResponse{Output: out}
	if at.limit > 0 && len(out) > at.limit {
		res.Output, res.Truncated = keepTail(out, at.limit), true
	}
	if exited {
		res.ExitStatus = exitStatus(code)
	}
	return res, nil
}

// keepTail is the end of s in at most limit bytes, starting at a character.
func keepTail(s string, limit int) string {
	cut := len(s) - limit
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}

// truncateUTF8 is the start of b in at most limit bytes, ending at a character.
func truncateUTF8(b []byte, limit int) []byte {
	if len(b) <= limit {
		return b
	}
	for limit > 0 && !utf8.RuneStart(b[limit]) {
		limit--
	}
	return b[:limit]
}

// exitStatus is ACP's form of a terminal's exit code: -1 is the host's for a
// process a signal ended, whose signal it does not record.
func exitStatus(code int) *acp.TerminalExitStatus {
	if code < 0 {
		return &acp.TerminalExitStatus{Signal: acp.Ptr("unknown")}
	}
	return &acp.TerminalExitStatus{ExitCode: acp.Ptr(code)}
}

// WaitForTerminalExit waits for the command to exit.
func (c *client) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	at, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-at.exited:
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	case <-c.life.Done():
		return acp.WaitForTerminalExitResponse{}, requestError("the session is closing")
	}
	st := exitStatus(at.code)
	return acp.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

// KillTerminal ends the command; the terminal stays, with its output.
func (c *client) KillTerminal(_ context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	at, err := c.terminal(p.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	at.bt.Kill()
	return acp.KillTerminalResponse{}, nil
}

// ReleaseTerminal ends a command still running and takes the terminal off the root
// list; what it printed is kept, and a tool call naming it still opens it.
func (c *client) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	c.mu.Lock()
	at := c.terms[p.TerminalId]
	if at == nil || at.released {
		c.mu.Unlock()
		return acp.ReleaseTerminalResponse{}, nil // releasing twice is no error
	}
	if c.closed {
		c.mu.Unlock()
		return acp.ReleaseTerminalResponse{}, requestError("the session is closing; it releases the terminal itself")
	}
	at.released = true
	c.writeBeganLocked()
	c.mu.Unlock()
	defer c.writeEnded()
	if err := c.release(ctx, at); err != nil {
		return acp.ReleaseTerminalResponse{}, requestError("releasing terminal %s: %v", p.TerminalId, err)
	}
	return acp.ReleaseTerminalResponse{}, nil
}

// release lets the terminal go. Its output is kept (a write to the store, counted
// by the caller in spec.Writes).
func (c *client) release(ctx context.Context, at *agentTerminal) error {
	err := at.bt.Release(ctx)
	at.stopWaiting()
	return err
}

// writeBeganLocked counts a disk write in the session's writes; c.mu is held and
// the client not closed, so it never comes after the session started waiting.
func (c *client) writeBeganLocked() {
	if c.spec.Writes != nil {
		c.spec.Writes.Add(1)
	}
}

func (c *client) writeEnded() {
	if c.spec.Writes != nil {
		c.spec.Writes.Done()
	}
}

// releaseOpen releases every terminal the agent left open, within timeout: the
// process is gone and nobody else knows their ids. It is called from the runner's
// Receive (a crash, or Stopping), where the writes are counted; wait makes it
// return once they are released (Stopping), else they are released on a goroutine.
func (c *client) releaseOpen(timeout time.Duration, wait bool) {
	c.mu.Lock()
	var open []*agentTerminal
	for _, at := range c.terms {
		if !at.released {
			at.released = true
			open = append(open, at)
		}
	}
	for range open {
		c.writeBeganLocked()
	}
	c.mu.Unlock()
	if len(open) == 0 {
		return
	}
	c.wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer c.wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		for _, at := range open {
			if err := c.release(ctx, at); err != nil {
				c.log.Warn("releasing a terminal the agent left open failed", "uri", at.bt.URI, "err", err)
			}
			c.writeEnded()
		}
	}()
	if wait {
		<-done
	}
}

// terminalResults reads, for a tool call that finished, how each terminal its
// content names ended and the tail of what it printed (a request to the root for
// each: the caller does not hold c.mu).
func (c *client) terminalResults(content []acp.ToolCallContent) map[string]*messages.TerminalCommandResult {
	var results map[string]*messages.TerminalCommandResult
	for _, tc := range content {
		if tc.Terminal == nil {
			continue
		}
		c.mu.Lock()
		at := c.terms[tc.Terminal.TerminalId]
		released := at != nil && at.released
		c.mu.Unlock()
		if at == nil {
			continue
		}
		code, exited := at.exit()
		if !exited {
			continue
		}
		r := &messages.TerminalCommandResult{ExitCode: acp.Ptr(code)}
		if code < 0 {
			r.ExitCode = nil
		}
		if !released {
			ctx, cancel := context.WithTimeout(c.life, channel.RequestTimeout)
			out, err := at.output(ctx)
			cancel()
			if err == nil {
				r.Preview, r.Truncated = lastChars(out, previewLimit)
			}
		}
		if results == nil {
			results = map[string]*messages.TerminalCommandResult{}
		}
		results[tc.Terminal.TerminalId] = r
	}
	return results
}

// lastChars is the last n characters of s, and whether any were cut.
func lastChars(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)
	return string(r[len(r)-n:]), true
}
