package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/termhost/termhost/messages"
)

// Terminals is the seam an agent backend opens terminals through (seed: "A backend
// asks through start.terminals.open"): a terminal it opens is a channel the host owns,
// named under the backend's chat with a key, claimed for the session with the chat,
// the turn and the tool call, listed on the root and kept when its process exits.
type Terminals struct {
	system *actor.ActorSystem
	host   *actor.PID
	keys   atomic.Int64
}

// NewTerminals makes the seam over a running host actor.
func NewTerminals(system *actor.ActorSystem, host *actor.PID) *Terminals {
	return &Terminals{system: system, host: host}
}

// OpenSpec says what a backend's terminal runs and for whom.
type OpenSpec struct {
	Session, Chat, TurnID, ToolCallID string
	// Cwd is a file: URI or a path; one that is not there fails the start (exit 127).
	Cwd string
	// Program and Args: the argv is quoted word by word. An empty Program is the
	// host's own shell, sitting at its prompt.
	Program string
	Args    []string
}

// BackendTerminal is a backend's handle on one terminal.
type BackendTerminal struct {
	URI   string
	isPty bool
	ts    *Terminals
	pid   *actor.PID // the watcher

	mu     sync.Mutex // guards exit
	exit   *int
	exited chan struct{}
}

// Open starts a terminal and returns once it is listed.
func (ts *Terminals) Open(ctx context.Context, spec OpenSpec) (*BackendTerminal, error) {
	if spec.Session == "" || spec.Chat == "" {
		return nil, errors.New("a backend's terminal needs its session and chat")
	}
	key := spec.ToolCallID
	if key == "" {
		key = fmt.Sprintf("backend-%d", ts.keys.Add(1))
	}
	bt := &BackendTerminal{URI: commandTerminalURI(spec.Chat, key), ts: ts, exited: make(chan struct{})}
	bt.pid = ts.system.Root.Spawn(actor.PropsFromFunc(bt.receive))
	var command string
	var args []string
	if spec.Program != "" {
		command, args = spec.Program, spec.Args
		if args == nil {
			args = []string{}
		}
	}
	m := &CreateTerminal{
		URI:     bt.URI,
		Claim:   messages.Claim{Kind: messages.ClaimSession, Session: spec.Session, Chat: spec.Chat, TurnID: spec.TurnID, ToolCallID: spec.ToolCallID},
		Cwd:     spec.Cwd,
		Spec:    TerminalSpec{Command: command, Args: args, StrictCwd: true},
		Watcher: bt.pid,
	}
	if command != "" {
		m.Name = lastPathPart(command)
	}
	res, err := ts.request(ctx, m)
	if err != nil {
		ts.system.Root.Stop(bt.pid)
		return nil, err
	}
	cr, _ := res.(*CreateResult)
	if cr == nil || cr.Err != nil {
		ts.system.Root.Stop(bt.pid)
		if cr != nil {
			return nil, cr.Err
		}
		return nil, errors.New("the terminal did not start")
	}
	bt.isPty = cr.IsPty
	return bt, nil
}

func lastPathPart(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func (ts *Terminals) request(ctx context.Context, m any) (any, error) {
	f := ts.system.Root.RequestFuture(ts.host, m, requestTimeout)
	done := make(chan struct{})
	var res any
	var err error
	go func() { res, err = f.Result(); close(done) }()
	select {
	case <-done:
		return res, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// receive is the watcher actor: it notes the exit.
func (bt *BackendTerminal) receive(ctx actor.Context) {
	ev, ok := ctx.Message().(*TerminalEvent)
	if !ok || ev.Action.Type != messages.TerminalExited {
		return
	}
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.exit == nil {
		code := -1
		if ev.Action.ExitCode != nil {
			code = *ev.Action.ExitCode
		}
		bt.exit = &code
		close(bt.exited)
	}
}

// IsPty says whether a pseudoterminal runs it, for a call that names it.
func (bt *BackendTerminal) IsPty() bool { return bt.isPty }

// Output is what the terminal printed, as a client subscribing now would read it.
func (bt *BackendTerminal) Output(ctx context.Context) (string, error) {
	res, err := bt.ts.request(ctx, &SnapshotQuery{URI: bt.URI})
	if err != nil {
		return "", err
	}
	st, _ := res.(*messages.TerminalState)
	if st == nil {
		return "", fmt.Errorf("no terminal %s", bt.URI)
	}
	var b strings.Builder
	for _, p := range st.Content {
		b.WriteString(p.Text())
	}
	return b.String(), nil
}

// Wait waits for the process's exit, announced after its output drained.
func (bt *BackendTerminal) Wait(ctx context.Context) (int, error) {
	select {
	case <-bt.exited:
		bt.mu.Lock()
		defer bt.mu.Unlock()
		return *bt.exit, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Write types into the terminal.
func (bt *BackendTerminal) Write(data string) {
	bt.ts.system.Root.Send(bt.ts.host, &TerminalWrite{URI: bt.URI, Data: data})
}

// Resize changes the terminal's size.
func (bt *BackendTerminal) Resize(cols, rows int) {
	raw, _ := json.Marshal(map[string]any{"type": messages.TerminalResized, "cols": cols, "rows": rows})
	bt.ts.system.Root.Send(bt.ts.host, &Dispatch{Channel: bt.URI, Action: &messages.Action{Type: messages.TerminalResized, Cols: &cols, Rows: &rows},
		Raw: raw, Origin: messages.Origin{ClientID: "termhost-backend"}, Sub: discard{}})
}

// Kill ends the process; the row stays listed, because a transcript may still point
// at the channel.
func (bt *BackendTerminal) Kill() {
	bt.ts.system.Root.Send(bt.ts.host, &KillTerminal{URI: bt.URI})
}

// Release ends a process that has not already gone and takes the row off the list.
// A tool call that names the terminal still opens it, rebuilt from what was kept.
func (bt *BackendTerminal) Release(ctx context.Context) error {
	_, err := bt.ts.request(ctx, &DisposeTerminal{URI: bt.URI})
	bt.ts.system.Root.Stop(bt.pid)
	return err
}

// discard is a Subscriber that drops what it is given: the host's own dispatches
// have nobody to echo a rejection to.
type discard struct{}

func (discard) Deliver(string, []byte) {}
