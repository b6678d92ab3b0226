package root_test

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/messages"
)

// chatTypes is a Subscriber of a chat that keeps the type of every action it is sent.
type chatTypes struct {
	mu    sync.Mutex
	types []string
	wake  chan struct{}
}

func (c *chatTypes) Deliver(_ string, frame []byte) {
	var n struct {
		Params struct{ Action struct{ Type string } } `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil {
		return
	}
	c.mu.Lock()
	c.types = append(c.types, n.Params.Action.Type)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until the chat was sent an action of each type, in that order.
func (c *chatTypes) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		c.mu.Lock()
		next := 0
		for _, typ := range c.types {
			if next < len(want) && typ == want[next] {
				next++
			}
		}
		seen := append([]string(nil), c.types...)
		c.mu.Unlock()
		if next == len(want) {
			return
		}
		select {
		case <-c.wake:
		case <-deadline:
			t.Fatalf("the chat was not sent %v; it was sent %v", want, seen)
		}
	}
}

// TestRootRoutesBackgroundWork sends the session messages of background work, wakes
// and the tool service to the root: each reaches the session holding the chat (or
// the session named), the answer comes back to the asker, and what names nothing is
// answered with an error.
func TestRootRoutesBackgroundWork(t *testing.T) {
	var specs []session.ToolServiceSpec
	var mu sync.Mutex
	stops := make(chan *session.StopBackgroundWork, 1)
	service := func(spec session.ToolServiceSpec) *actor.Props {
		mu.Lock()
		specs = append(specs, spec)
		mu.Unlock()
		return actor.PropsFromFunc(func(ctx actor.Context) {
			if m, ok := ctx.Message().(*session.StopBackgroundWork); ok {
				stops <- m
			}
		})
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := system.Root.Spawn(root.NewProps(root.Options{Home: t.TempDir(), DefaultShell: "/bin/bash", KillGrace: 500 * time.Millisecond, ToolService: service},
		delivery.NewJournal(1024, 1<<20)))
	t.Cleanup(func() {
		_, _ = system.Root.RequestFuture(pid, &channel.Shutdown{}, waitTimeout).Result()
		system.Shutdown()
	})

	const uri = "ahp-session:/routed"
	created := ask(t, system, pid, &session.Create{URI: uri}).(*session.Result)
	if created.Err != nil {
		t.Fatal(created.Err)
	}
	chat := created.Chat
	sub := &chatTypes{wake: make(chan struct{}, 1)}
	if r := ask(t, system, pid, &channel.Subscribe{Channel: chat, Sub: sub}).(*channel.SubscribeResult); r.Err != nil {
		t.Fatal(r.Err)
	}

	// The tool service of the session named, made once, with the root as its Root.
	first := ask(t, system, pid, &session.ToolServiceQuery{Session: uri}).(*session.ToolServiceResult)
	second := ask(t, system, pid, &session.ToolServiceQuery{Session: uri}).(*session.ToolServiceResult)
	if first.Err != nil || first.PID == nil || !first.PID.Equal(second.PID) {
		t.Fatalf("tool service: %+v then %+v", first, second)
	}
	mu.Lock()
	if len(specs) != 1 || specs[0].Session != uri || !specs[0].Root.Equal(pid) {
		t.Fatalf("specs %+v", specs)
	}
	mu.Unlock()
	if r := ask(t, system, pid, &session.ToolServiceQuery{Session: "ahp-session:/nope"}).(*session.ToolServiceResult); r.Err == nil || r.Err.Code != messages.CodeSessionNotFound || r.PID != nil {
		t.Fatalf("tool service of no session: %+v", r)
	}

	// Rows and wakes by chat.
	system.Root.Send(pid, &session.SetBackgroundWork{Chat: chat, Owner: first.PID, Work: messages.BackgroundShellWork{
		ID: "bg-1", Label: "l", StartedAt: "2026-10-01T10:00:00.000Z", Command: "c"}})
	sub.waitFor(t, messages.ChatBackgroundWorkSet)
	if r := ask(t, system, pid, &session.StopBackgroundWork{Chat: chat, ID: "bg-1"}).(*session.Result); r.Err != nil {
		t.Fatalf("stop: %+v", r.Err)
	}
	select {
	case m := <-stops:
		if m.ID != "bg-1" || m.Chat != chat {
			t.Fatalf("the owner was told %+v", m)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the stop did not reach the owner")
	}
	if r := ask(t, system, pid, &session.StopBackgroundWork{Chat: "ahp-session:/nope/chat", ID: "bg-1"}).(*session.Result); r.Err == nil || r.Err.Code != messages.CodeNotFound {
		t.Fatalf("stop in no chat: %+v", r.Err)
	}
	system.Root.Send(pid, &session.RemoveBackgroundWork{Chat: chat, ID: "bg-1"})
	system.Root.Send(pid, &session.Wake{Chat: "ahp-session:/nope/chat", Text: "lost"})
	system.Root.Send(pid, &session.Wake{Chat: chat, Text: "a monitor fired"})
	sub.waitFor(t, messages.ChatBackgroundWorkSet, messages.ChatBackgroundWorkRemoved, messages.ChatTurnStarted, messages.ChatTurnComplete)
}
