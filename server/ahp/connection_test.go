package ahp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server/ahp"
)

// These tests drive the connection actor directly, with a real root behind it and an
// Outbox standing for the socket; the end-to-end tests over a real WebSocket are in
// server.

const waitTimeout = 20 * time.Second

// rig is an actor system with a root actor, and a way to make connections to it.
type rig struct {
	t       testing.TB
	system  *actor.ActorSystem
	journal *delivery.Journal
	root    *actor.PID
	store   *auth.Store
}

func newRig(t testing.TB) *rig {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	journal := delivery.NewJournal(1024, 1<<20)
	rootPID, err := system.Root.SpawnNamed(root.NewProps(root.Options{Home: t.TempDir(), DefaultShell: "/bin/bash", KillGrace: 500 * time.Millisecond}, journal), "root")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = system.Root.RequestFuture(rootPID, &channel.Shutdown{}, waitTimeout).Result()
		system.Shutdown()
	})
	store, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, system: system, journal: journal, root: rootPID, store: store}
}

// principal signs a new user of role in.
func (r *rig) principal(user, role string) auth.Principal {
	r.t.Helper()
	tok, err := r.store.AddToken(user, role)
	if err != nil {
		r.t.Fatal(err)
	}
	p, ok := r.store.Authenticate(tok)
	if !ok {
		r.t.Fatal("a new token does not sign in")
	}
	return p
}

// conn is one connection actor and the queue it answers into.
type conn struct {
	r   *rig
	pid *actor.PID
	ob  *delivery.Outbox
}

func (r *rig) connect(p auth.Principal) *conn {
	ob := delivery.NewOutbox(delivery.OutboxLimits{Bytes: 1 << 20}, nil)
	pid := r.system.Root.Spawn(ahp.NewProps(ahp.Config{Root: r.root, Journal: r.journal, Outbox: ob, Principal: p, Close: ob.Finish}))
	c := &conn{r: r, pid: pid, ob: ob}
	r.t.Cleanup(func() { r.system.Root.Send(pid, &ahp.Disconnected{}) })
	return c
}

// ask sends a frame and returns the answer to request id, skipping notifications.
func (c *conn) ask(frame string, id string) map[string]any {
	c.r.t.Helper()
	c.r.system.Root.Send(c.pid, &ahp.Frame{Data: []byte(frame)})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		frames, err := c.ob.Next(ctx)
		if err != nil {
			c.r.t.Fatalf("no answer to %s: %v", frame, err)
		}
		for _, f := range frames {
			var m map[string]any
			if err := json.Unmarshal(f, &m); err != nil {
				c.r.t.Fatalf("non-JSON %q", f)
			}
			if got, _ := json.Marshal(m["id"]); string(got) == id {
				return m
			}
		}
	}
}

func errorOf(t *testing.T, answer map[string]any, code float64, says string) {
	t.Helper()
	e, _ := answer["error"].(map[string]any)
	if e == nil || e["code"] != code || !strings.Contains(e["message"].(string), says) {
		t.Fatalf("answer %v, want error %v saying %q", answer, code, says)
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"c","initialSubscriptions":["ahp-root://"]}}`

// TestRequestsNeedTheHandshake: before initialize only ping and initialize are taken.
func TestRequestsNeedTheHandshake(t *testing.T) {
	r := newRig(t)
	c := r.connect(r.principal("o", auth.RoleOwner))
	if a := c.ask(`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "7"); a["error"] != nil {
		t.Fatalf("ping before initialize: %v", a)
	}
	errorOf(t, c.ask(`{"jsonrpc":"2.0","id":8,"method":"subscribe","params":{"channel":"ahp-root://"}}`, "8"), messages.CodeInvalidRequest, "Call initialize first")
	if a := c.ask(initialize, "1"); a["error"] != nil {
		t.Fatalf("initialize: %v", a)
	}
	errorOf(t, c.ask(initialize, "1"), messages.CodeInvalidRequest, "already initialized")
	errorOf(t, c.ask(`{"jsonrpc":"2.0","id":9,"method":"noSuchMethod"}`, "9"), messages.CodeMethodNotFound, "noSuchMethod")
}

// TestGrantsAreAdmittedBeforeParams: a guest's createTerminal is refused for its grant,
// whatever its params, and nothing is made.
func TestGrantsAreAdmittedBeforeParams(t *testing.T) {
	r := newRig(t)
	c := r.connect(r.principal("g", auth.RoleGuest))
	c.ask(initialize, "1")
	errorOf(t, c.ask(`{"jsonrpc":"2.0","id":2,"method":"createTerminal","params":{"channel":"ahp-terminal:/g"}}`, "2"), messages.CodePermissionDenied, "terminal:create")
	errorOf(t, c.ask(`{"jsonrpc":"2.0","id":3,"method":"createTerminal","params":"not an object"}`, "3"), messages.CodePermissionDenied, "terminal:create")
	res, err := r.system.Root.RequestFuture(r.root, &root.ListTerminals{}, waitTimeout).Result()
	if err != nil || len(res.([]string)) != 0 {
		t.Fatalf("terminals after a guest's refused creates: %v %v", res, err)
	}
}

// TestBadFramesAreAnswered: what is not JSON-RPC is answered with an error (id null
// when none could be read), and the connection goes on.
func TestBadFramesAreAnswered(t *testing.T) {
	r := newRig(t)
	c := r.connect(r.principal("o", auth.RoleOwner))
	errorOf(t, c.ask(`{not json`, "null"), messages.CodeParseError, "not JSON")
	errorOf(t, c.ask(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":[],"clientId":"c"}}`, "4"), messages.CodeInvalidParams, "protocolVersions")
	if a := c.ask(initialize, "1"); a["error"] != nil {
		t.Fatalf("initialize after bad frames: %v", a)
	}
}

// poll checks cond every few milliseconds until it holds or timeout passes, for
// conditions no event announces (an object being collected).
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestDroppedHandshakeLeavesNoSubscriber drives the connection actor directly: a
// socket that goes while its initialize is still subscribing must not leave its queue
// subscribed to the root or a terminal, where every later action would still be
// handed to it and it could never be freed.
func TestDroppedHandshakeLeavesNoSubscriber(t *testing.T) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	journal := delivery.NewJournal(1024, 1<<20)
	host, err := system.Root.SpawnNamed(root.NewProps(root.Options{Home: t.TempDir(), DefaultShell: "/bin/bash", KillGrace: 500 * time.Millisecond}, journal), "root")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = system.Root.RequestFuture(host, &channel.Shutdown{}, waitTimeout).Result()
		system.Shutdown()
	})
	store, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := store.AddToken("o", auth.RoleOwner)
	owner, _ := store.Authenticate(tok)

	uri := "ahp-terminal:/subscribed"
	if res, err := system.Root.RequestFuture(host, &terminal.Create{URI: uri, Claim: messages.Claim{Kind: messages.ClaimClient}}, waitTimeout).Result(); err != nil || res.(*terminal.CreateResult).Err != nil {
		t.Fatalf("create: %v %v", res, err)
	}
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"d","initialSubscriptions":["ahp-root://","` + uri + `"]}}`)
	subscribe := []byte(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"` + uri + `"}}`)

	const rounds = 20
	var queues []weak.Pointer[delivery.Outbox]
	for i := range rounds {
		ob := delivery.NewOutbox(delivery.OutboxLimits{Bytes: 1 << 20}, nil)
		queues = append(queues, weak.Make(ob))
		pid := system.Root.Spawn(ahp.NewProps(ahp.Config{
			Root: host, Journal: journal, Outbox: ob, Principal: owner, Close: ob.Finish,
		}))
		system.Root.Send(pid, &ahp.Frame{Data: initialize})
		if i%2 == 1 {
			system.Root.Send(pid, &ahp.Frame{Data: subscribe})
		}
		system.Root.Send(pid, &ahp.Disconnected{})
		// Disconnected closes the queue last: wait for that.
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		for {
			if _, err := ob.Next(ctx); err != nil {
				if ctx.Err() != nil {
					t.Fatal("the connection actor never closed its queue")
				}
				break
			}
		}
		cancel()
	}
	// Whatever the actors sent before closing their queues has been handled once the
	// host, and the terminal behind it, answer a later request.
	if _, err := system.Root.RequestFuture(host, &root.ListTerminals{}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	probe := delivery.NewOutbox(delivery.OutboxLimits{Bytes: 1 << 20}, nil)
	if _, err := system.Root.RequestFuture(host, &channel.Subscribe{Channel: uri, Sub: probe}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}

	// A queue nothing holds any more is collected. No event says so: poll the
	// collector under a deadline.
	held := 0
	if !poll(10*time.Second, func() bool {
		runtime.GC()
		held = 0
		for _, q := range queues {
			if q.Value() != nil {
				held++
			}
		}
		return held == 0
	}) {
		t.Fatalf("%d of %d dropped connections' queues are still held (subscribed) after they went", held, rounds)
	}
}
