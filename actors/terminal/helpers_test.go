package terminal

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/messages"
)

const waitTimeout = 20 * time.Second

// collector is a Subscriber that keeps every frame, decoded once, and wakes waiters.
type collector struct {
	mu     sync.Mutex
	frames []frame
	// snapshot is the content of the snapshot it subscribed with, the start of
	// output.
	snapshot string
	wake     chan struct{}
}

// frame is one frame a subscriber got: its envelope and the action in it.
type frame struct {
	env    messages.Envelope
	action messages.Action
}

func newCollector() *collector { return &collector{wake: make(chan struct{}, 1)} }

func (c *collector) Deliver(channel string, raw []byte) {
	var n struct {
		Params messages.Envelope `json:"params"`
	}
	if json.Unmarshal(raw, &n) != nil {
		return
	}
	f := frame{env: n.Params}
	_ = json.Unmarshal(n.Params.Action, &f.action)
	c.mu.Lock()
	c.frames = append(c.frames, f)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// received is every frame so far.
func (c *collector) received() []frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.frames...)
}

// actions is every action of the type sent to all subscribers ("" for any type).
func (c *collector) actions(actionType string) []messages.Action {
	var out []messages.Action
	for _, f := range c.received() {
		if f.env.RejectionReason == "" && (actionType == "" || f.action.Type == actionType) {
			out = append(out, f.action)
		}
	}
	return out
}

// output is what the subscriber has seen printed: its snapshot's content, then
// every terminal/data after it.
func (c *collector) output() string {
	var b strings.Builder
	c.mu.Lock()
	b.WriteString(c.snapshot)
	c.mu.Unlock()
	for _, a := range c.actions(messages.TerminalData) {
		b.WriteString(*a.Data)
	}
	return b.String()
}

// rejections is the reason of every rejection sent to this subscriber.
func (c *collector) rejections() []string {
	var out []string
	for _, f := range c.received() {
		if f.env.RejectionReason != "" {
			out = append(out, f.env.RejectionReason)
		}
	}
	return out
}

func (c *collector) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for !cond() {
		select {
		case <-c.wake:
		case <-deadline:
			t.Fatalf("no %s; output so far %q", what, c.output())
		}
	}
}

// waitOutput waits until the output holds s.
func (c *collector) waitOutput(t *testing.T, s string) {
	t.Helper()
	c.waitUntil(t, "output "+s, func() bool { return strings.Contains(c.output(), s) })
}

func newTestSystem(t *testing.T) *actor.ActorSystem {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	t.Cleanup(system.Shutdown)
	return system
}

// testRoot stands in for the root: it spawns the terminal, answers a failed start
// and the claim actor's HolderQuery from sessions.
type testRoot struct {
	cfg      Config
	sessions map[string]*actor.PID // read-only once the terminal starts
}

// startTerminal starts a terminal for m under a parent of its own, as the root would
// spawn it, waits for its create's answer and subscribes a collector to it.
func startTerminal(t *testing.T, system *actor.ActorSystem, m *Create) (*actor.PID, *collector) {
	t.Helper()
	return testRoot{}.start(t, system, m)
}

func (r testRoot) start(t *testing.T, system *actor.ActorSystem, m *Create) (*actor.PID, *collector) {
	t.Helper()
	cfg := r.cfg
	if cfg.Journal == nil {
		cfg.Journal = delivery.NewJournal(1024, 1<<20)
	}
	if cfg.Home == "" {
		cfg.Home = t.TempDir()
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 500 * time.Millisecond
	}
	var terminalPID *actor.PID
	spawned := make(chan struct{})
	parent := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *Create:
			terminalPID = ctx.Spawn(NewProps(cfg, msg, ""))
			close(spawned)
			ctx.Forward(terminalPID)
		case *StartFailed:
			ctx.Send(msg.Waiter, &CreateResult{Err: msg.Err})
		case *HolderQuery:
			ctx.Respond(&Holder{Session: msg.Session, PID: r.sessions[msg.Session]})
		}
	}))
	t.Cleanup(func() { _ = system.Root.StopFuture(parent).Wait() })
	res, err := system.Root.RequestFuture(parent, m, waitTimeout).Result()
	if err != nil || res.(*CreateResult).Err != nil {
		t.Fatalf("create: %v %v", err, res)
	}
	<-spawned
	sub := newCollector()
	st := subscribe(t, system, terminalPID, m.URI, sub)
	sub.mu.Lock()
	sub.snapshot = contentText(st)
	sub.mu.Unlock()
	return terminalPID, sub
}

// subscribe subscribes sub to the terminal and returns its snapshot's state.
func subscribe(t *testing.T, system *actor.ActorSystem, terminalPID *actor.PID, uri string, sub delivery.Subscriber) messages.TerminalState {
	t.Helper()
	res, err := system.Root.RequestFuture(terminalPID, &channel.Subscribe{Channel: uri, Sub: sub}, waitTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*channel.SubscribeResult)
	if r.Err != nil {
		t.Fatalf("subscribe: %v", r.Err)
	}
	return r.Snapshot.State.(messages.TerminalState)
}

// dispatcher dispatches actions to a terminal as the client clientID, whose
// rejections go to sub.
func dispatcher(system *actor.ActorSystem, terminalPID *actor.PID, uri, clientID string, sub delivery.Subscriber) func(a *messages.Action) {
	return func(a *messages.Action) {
		system.Root.Send(terminalPID, &channel.Dispatch{Channel: uri, Action: a, Raw: messages.EncodeAction(a), Origin: messages.Origin{ClientID: clientID}, Sub: sub})
	}
}

func input(data string) *messages.Action {
	return &messages.Action{Type: messages.TerminalInput, Data: &data}
}

// contentText is what a snapshot's content shows, as a naive client rebuilds the
// raw stream from it (PROTOCOL.md 5.1).
func contentText(st messages.TerminalState) string {
	var b strings.Builder
	for _, p := range st.Content {
		b.WriteString(p.Text())
	}
	return b.String()
}
