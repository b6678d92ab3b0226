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

// collector is a Subscriber that keeps every frame and wakes waiters.
type collector struct {
	mu     sync.Mutex
	frames []messages.Envelope
	wake   chan struct{}
}

func newCollector() *collector { return &collector{wake: make(chan struct{}, 1)} }

func (c *collector) Deliver(channel string, frame []byte) {
	var n struct {
		Params messages.Envelope `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil {
		return
	}
	c.mu.Lock()
	c.frames = append(c.frames, n.Params)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *collector) actions(actionType string) []messages.Action {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []messages.Action
	for _, e := range c.frames {
		var a messages.Action
		_ = json.Unmarshal(e.Action, &a)
		if a.Type == actionType {
			out = append(out, a)
		}
	}
	return out
}

func (c *collector) output() string {
	var b strings.Builder
	for _, a := range c.actions(messages.TerminalData) {
		b.WriteString(*a.Data)
	}
	return b.String()
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

// TestShellActorRestartKeepsProcessAndState crashes the shell actor mid-session: the
// supervisor restarts it, it re-attaches to the same process, the terminal keeps its
// state and subscribers, and the exit is still reported exactly once.
func TestShellActorRestartKeepsProcessAndState(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	defer system.Shutdown()
	uri := "ahp-terminal:/crash"
	terminalPID, sub := startTerminal(t, system, &Create{URI: uri, Claim: messages.Claim{Kind: messages.ClaimClient}})
	send := func(data string) {
		raw, _ := json.Marshal(map[string]any{"type": "terminal/input", "data": data})
		system.Root.Send(terminalPID, &channel.Dispatch{Channel: uri, Action: &messages.Action{Type: messages.TerminalInput, Data: &data}, Raw: raw, Sub: sub})
	}
	send("echo before-$$\n")
	sub.waitUntil(t, "output before the crash", func() bool { return strings.Contains(sub.output(), "before-") })
	pidBefore := strings.Fields(strings.SplitN(sub.output(), "before-", 2)[1])[0]

	shellPIDs, err := system.Root.RequestFuture(terminalPID, &childrenQuery{}, waitTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	shellPID := shellPIDs.([]*actor.PID)[0]
	system.Root.Send(shellPID, &shellCrash{})

	send("echo after-$$\n")
	sub.waitUntil(t, "output after the crash", func() bool { return strings.Contains(sub.output(), "after-") })
	pidAfter := strings.Fields(strings.SplitN(sub.output(), "after-", 2)[1])[0]
	if pidAfter != pidBefore {
		t.Fatalf("the shell changed across the restart: %s then %s", pidBefore, pidAfter)
	}
	send("exit 5\n")
	sub.waitUntil(t, "exit", func() bool { return len(sub.actions(messages.TerminalExited)) > 0 })
	// One more round trip through the terminal's mailbox before counting.
	if _, err := system.Root.RequestFuture(terminalPID, &channel.Subscribe{Channel: uri, Sub: newCollector()}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	exits := sub.actions(messages.TerminalExited)
	if len(exits) != 1 || *exits[0].ExitCode != 5 {
		t.Fatalf("exits: %+v", exits)
	}
	if !strings.Contains(sub.output(), "before-") {
		t.Fatal("the terminal lost its earlier output")
	}
}

// startTerminal starts a terminal for m under a parent of its own, as the root would
// spawn it, waits for its create's answer and subscribes a collector to it.
func startTerminal(t *testing.T, system *actor.ActorSystem, m *Create) (*actor.PID, *collector) {
	t.Helper()
	cfg := Config{Journal: delivery.NewJournal(1024, 1<<20), Home: t.TempDir(), KillGrace: 500 * time.Millisecond}
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
		}
	}))
	t.Cleanup(func() { _ = system.Root.StopFuture(parent).Wait() })
	res, err := system.Root.RequestFuture(parent, m, waitTimeout).Result()
	if err != nil || res.(*CreateResult).Err != nil {
		t.Fatalf("create: %v %v", err, res)
	}
	<-spawned
	sub := newCollector()
	if _, err := system.Root.RequestFuture(terminalPID, &channel.Subscribe{Channel: m.URI, Sub: sub}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	return terminalPID, sub
}
