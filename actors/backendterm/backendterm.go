// Package backendterm is the seam an agent backend opens host terminals through
// (seed: "A backend asks through start.terminals.open"): every command an agent runs
// is a terminal the host owns, named under the backend's chat (messages/toolterm),
// claimed for the session with the chat, turn and tool call, listed on the root, and
// kept when its process exits or is released.
package backendterm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
)

// Terminals is the seam an agent backend opens terminals through (seed: "A backend
// asks through start.terminals.open"): a terminal it opens is a channel the host owns,
// named under the backend's chat with a key, claimed for the session with the chat,
// the turn and the tool call, listed on the root and kept when its process exits.
type Terminals struct {
	system *actor.ActorSystem
	root   *actor.PID
	store  *persistence.Store // where outputs are kept; nil keeps nothing
	// epoch and keys make the key of a terminal opened for no tool call: the epoch
	// tells this seam's keys from an earlier seam's of the same chat (one before a
	// restart), whose kept outputs are still answered under theirs.
	epoch string
	keys  atomic.Int64
}

// NewTerminals makes the seam over a running root actor. What its terminals print is
// kept in store when they exit or are released (nil keeps nothing).
func NewTerminals(system *actor.ActorSystem, root *actor.PID, store *persistence.Store) *Terminals {
	return &Terminals{system: system, root: root, store: store, epoch: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// KeepOutput keeps an output no terminal printed (a file a backend's harness saved
// for a result too large to send) the way a terminal's output is kept, under the
// session's chat and key, and returns the terminal URI that answers for it (seed:
// Start.terminalOutputs). A tool call that names that URI opens it, exited.
func (ts *Terminals) KeepOutput(session, chat, key, output string, isPty bool, exitCode *int) (string, error) {
	if ts.store == nil {
		return "", errors.New("this host keeps no outputs: it has no session store")
	}
	if session == "" || chat == "" || key == "" {
		return "", errors.New("a kept output needs its session, chat and key")
	}
	uri := toolterm.URI(chat, key)
	kept := persistence.RetainedTerminal{URI: uri, Title: "Terminal", Output: output, ExitCode: exitCode, IsPty: isPty, Session: session, Chat: chat, ToolCallID: key}
	if err := ts.store.SaveTerminal(session, chat, key, kept); err != nil {
		return "", err
	}
	return uri, nil
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

// Terminal is a backend's handle on one terminal.
type Terminal struct {
	URI   string
	isPty bool
	ts    *Terminals
	pid   *actor.PID // the watcher
	spec  OpenSpec
	key   string

	mu     sync.Mutex // guards exit and kept
	exit   *int
	kept   bool // the output is in the store (or could not be): keep it once
	exited chan struct{}
}

// Open starts a terminal and returns once it is listed.
func (ts *Terminals) Open(ctx context.Context, spec OpenSpec) (*Terminal, error) {
	if spec.Session == "" || spec.Chat == "" {
		return nil, errors.New("a backend's terminal needs its session and chat")
	}
	key := spec.ToolCallID
	if key == "" {
		key = fmt.Sprintf("backend-%s-%d", ts.epoch, ts.keys.Add(1))
	}
	bt := &Terminal{URI: toolterm.URI(spec.Chat, key), ts: ts, spec: spec, key: key, exited: make(chan struct{})}
	bt.pid = ts.system.Root.Spawn(actor.PropsFromFunc(bt.receive))
	var command string
	var args []string
	if spec.Program != "" {
		command, args = spec.Program, spec.Args
		if args == nil {
			args = []string{}
		}
	}
	m := &terminal.Create{
		URI:     bt.URI,
		Claim:   messages.Claim{Kind: messages.ClaimSession, Session: spec.Session, Chat: spec.Chat, TurnID: spec.TurnID, ToolCallID: spec.ToolCallID},
		Cwd:     spec.Cwd,
		Spec:    terminal.Spec{Command: command, Args: args, StrictCwd: true},
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
	cr, _ := res.(*terminal.CreateResult)
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
	f := ts.system.Root.RequestFuture(ts.root, m, channel.RequestTimeout)
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

// receive is the watcher actor: it notes the exit, and once what the terminal
// printed is kept, lets Wait return. A backend that releases the terminal right after
// Wait so finds its output already kept.
func (bt *Terminal) receive(ctx actor.Context) {
	ev, ok := ctx.Message().(*terminal.Event)
	if !ok || ev.Action.Type != messages.TerminalExited {
		return
	}
	code := -1
	if ev.Action.ExitCode != nil {
		code = *ev.Action.ExitCode
	}
	go func() {
		kctx, cancel := context.WithTimeout(context.Background(), channel.RequestTimeout)
		defer cancel()
		bt.keep(kctx, &code)
		bt.mu.Lock()
		defer bt.mu.Unlock()
		if bt.exit == nil {
			bt.exit = &code
			close(bt.exited)
		}
	}()
}

// keep puts what the terminal printed, how it ended (nil: still running) and isPty
// in the store under the session's chat and key, once (seed: "A terminal a tool
// result names"). An output over the store's cap is not kept.
func (bt *Terminal) keep(ctx context.Context, exit *int) {
	store := bt.ts.store
	bt.mu.Lock()
	done := bt.kept || store == nil
	bt.kept = true
	bt.mu.Unlock()
	if done {
		return
	}
	res, err := bt.ts.request(ctx, &terminal.SnapshotQuery{URI: bt.URI})
	st, _ := res.(*messages.TerminalState)
	if err != nil || st == nil {
		return
	}
	title := st.Title
	if title == "" {
		title = "Terminal"
	}
	// isPty from the state, not bt.isPty: a quick process can exit before Open has
	// read the create answer.
	isPty := st.IsPty != nil && *st.IsPty
	kept := persistence.RetainedTerminal{URI: bt.URI, Title: title, Output: st.Text(), ExitCode: exit, IsPty: isPty,
		Session: bt.spec.Session, Chat: bt.spec.Chat, ToolCallID: bt.spec.ToolCallID}
	_ = store.SaveTerminal(bt.spec.Session, bt.spec.Chat, bt.key, kept)
}

// IsPty says whether a pseudoterminal runs it, for a call that names it.
func (bt *Terminal) IsPty() bool { return bt.isPty }

// Output is what the terminal printed, as a client subscribing now would read it.
func (bt *Terminal) Output(ctx context.Context) (string, error) {
	res, err := bt.ts.request(ctx, &terminal.SnapshotQuery{URI: bt.URI})
	if err != nil {
		return "", err
	}
	st, _ := res.(*messages.TerminalState)
	if st == nil {
		return "", fmt.Errorf("no terminal %s", bt.URI)
	}
	return st.Text(), nil
}

// Wait waits for the process's exit, announced after its output drained.
func (bt *Terminal) Wait(ctx context.Context) (int, error) {
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
func (bt *Terminal) Write(data string) {
	bt.ts.system.Root.Send(bt.ts.root, &terminal.Write{URI: bt.URI, Data: data})
}

// Resize changes the terminal's size.
func (bt *Terminal) Resize(cols, rows int) {
	a := &messages.Action{Type: messages.TerminalResized, Cols: &cols, Rows: &rows}
	raw, _ := json.Marshal(a)
	bt.ts.system.Root.Send(bt.ts.root, &channel.Dispatch{Channel: bt.URI, Action: a,
		Raw: raw, Origin: messages.Origin{ClientID: "termhost-backend"}, Sub: discard{}})
}

// Kill ends the process; the row stays listed, because a transcript may still point
// at the channel.
func (bt *Terminal) Kill() {
	bt.ts.system.Root.Send(bt.ts.root, &terminal.Kill{URI: bt.URI})
}

// Release ends a process that has not already gone and takes the row off the list.
// A tool call that names the terminal still opens it, rebuilt from what was kept.
func (bt *Terminal) Release(ctx context.Context) error {
	bt.mu.Lock()
	exit := bt.exit
	bt.mu.Unlock()
	bt.keep(ctx, exit)
	_, err := bt.ts.request(ctx, &terminal.Dispose{URI: bt.URI})
	bt.ts.system.Root.Stop(bt.pid)
	return err
}

// discard is a Subscriber that drops what it is given: the host's own dispatches
// have nobody to echo a rejection to.
type discard struct{}

func (discard) Deliver(string, []byte) {}
