package root_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
)

const waitTimeout = 20 * time.Second

// lists is a Subscriber of the root that keeps every terminal list it is sent.
type lists struct {
	mu    sync.Mutex
	seen  [][]messages.TerminalInfo
	wake  chan struct{}
	other []string
}

func newLists() *lists { return &lists{wake: make(chan struct{}, 1)} }

func (l *lists) Deliver(_ string, frame []byte) {
	var n struct {
		Params messages.Envelope `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil {
		return
	}
	var a messages.Action
	_ = json.Unmarshal(n.Params.Action, &a)
	l.mu.Lock()
	if a.Type == messages.RootTerminalsChanged && a.Terminals != nil {
		l.seen = append(l.seen, *a.Terminals)
	} else {
		l.other = append(l.other, a.Type)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until the newest list satisfies ok.
func (l *lists) waitFor(t *testing.T, what string, ok func([]messages.TerminalInfo) bool) []messages.TerminalInfo {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		l.mu.Lock()
		var last []messages.TerminalInfo
		have := len(l.seen) > 0
		if have {
			last = l.seen[len(l.seen)-1]
		}
		l.mu.Unlock()
		if have && ok(last) {
			return last
		}
		select {
		case <-l.wake:
		case <-deadline:
			t.Fatalf("no root list with %s; last %+v", what, last)
		}
	}
}

func uris(list []messages.TerminalInfo) []string {
	out := make([]string, len(list))
	for i, row := range list {
		out[i] = row.Resource
	}
	return out
}

func startRoot(t *testing.T) (*actor.ActorSystem, *actor.PID) {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	pid := system.Root.Spawn(root.NewProps(root.Options{Home: t.TempDir(), DefaultShell: "/bin/bash", KillGrace: 500 * time.Millisecond}, delivery.NewJournal(1024, 1<<20)))
	t.Cleanup(func() {
		_, _ = system.Root.RequestFuture(pid, &channel.Shutdown{}, waitTimeout).Result()
		system.Shutdown()
	})
	return system, pid
}

func ask(t *testing.T, system *actor.ActorSystem, pid *actor.PID, m any) any {
	t.Helper()
	res, err := system.Root.RequestFuture(pid, m, waitTimeout).Result()
	if err != nil {
		t.Fatalf("%T: %v", m, err)
	}
	return res
}

// TestRootListFollowsTerminals: a subscriber of the root gets its snapshot, then every
// change of the list, in the order the terminals were made; a disposed terminal goes
// off the list and off the registry.
func TestRootListFollowsTerminals(t *testing.T) {
	system, pid := startRoot(t)
	l := newLists()
	snap := ask(t, system, pid, &channel.Subscribe{Channel: messages.RootURI, Sub: l}).(*channel.SubscribeResult)
	st, ok := snap.Snapshot.State.(messages.RootState)
	if !ok || st.Terminals == nil || len(*st.Terminals) != 0 {
		t.Fatalf("first snapshot: %+v", snap.Snapshot)
	}
	names := []string{"ahp-terminal:/a", "ahp-terminal:/b", "ahp-terminal:/c"}
	for _, uri := range names {
		res := ask(t, system, pid, &terminal.Create{URI: uri, Claim: messages.Claim{Kind: messages.ClaimClient}}).(*terminal.CreateResult)
		if res.Err != nil {
			t.Fatalf("create %s: %v", uri, res.Err)
		}
	}
	l.waitFor(t, "the three in order", func(list []messages.TerminalInfo) bool {
		got := uris(list)
		return len(got) == 3 && got[0] == names[0] && got[1] == names[1] && got[2] == names[2]
	})
	if res := ask(t, system, pid, &terminal.Create{URI: names[1]}).(*terminal.CreateResult); res.Err == nil || res.Err.Code != messages.CodeAlreadyExists {
		t.Fatalf("a second create of %s: %+v", names[1], res.Err)
	}

	ask(t, system, pid, &terminal.Dispose{URI: names[1]})
	// A subscriber that comes now, most likely while the list without b still waits
	// for its window, is shown the list as it is, not as it was last sent.
	late := ask(t, system, pid, &channel.Subscribe{Channel: messages.RootURI, Sub: newLists()}).(*channel.SubscribeResult)
	if st, ok := late.Snapshot.State.(messages.RootState); !ok || st.Terminals == nil || fmt.Sprint(uris(*st.Terminals)) != fmt.Sprint([]string{names[0], names[2]}) {
		t.Fatalf("a snapshot right after b's dispose: %+v", late.Snapshot.State)
	}
	sub := ask(t, system, pid, &channel.Subscribe{Channel: names[1], Sub: newLists()}).(*channel.SubscribeResult)
	if sub.Err == nil || sub.Err.Code != messages.CodeNotFound {
		t.Fatalf("subscribe to a disposed terminal: %+v", sub)
	}
	l.waitFor(t, "b gone", func(list []messages.TerminalInfo) bool {
		got := uris(list)
		return len(got) == 2 && got[0] == names[0] && got[1] == names[2]
	})
	if got := ask(t, system, pid, &root.ListTerminals{}).([]string); len(got) != 2 {
		t.Fatalf("registry after the dispose: %v", got)
	}
}

// TestRootConfigIsChecked: root/configChanged is the only action on the root; a bad
// value or an unknown key is rejected to its sender alone, a good one goes to all.
func TestRootConfigIsChecked(t *testing.T) {
	system, pid := startRoot(t)
	watcher, sender := newLists(), newLists()
	ask(t, system, pid, &channel.Subscribe{Channel: messages.RootURI, Sub: watcher})
	dispatch := func(raw string) {
		var a messages.Action
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatal(err)
		}
		system.Root.Send(pid, &channel.Dispatch{Channel: messages.RootURI, Action: &a, Raw: json.RawMessage(raw), Sub: sender})
	}
	dispatch(`{"type":"root/configChanged","config":{"defaultShell":"relative/sh"}}`)
	dispatch(`{"type":"root/configChanged","config":{"nope":1}}`)
	dispatch(`{"type":"terminal/input","data":"x"}`)
	dispatch(`{"type":"root/configChanged","config":{"enableCustomTerminalTool":true}}`)
	// A later request is answered after every dispatch before it was handled.
	snap := ask(t, system, pid, &channel.Subscribe{Channel: messages.RootURI, Sub: newLists()}).(*channel.SubscribeResult)
	st := snap.Snapshot.State.(messages.RootState)
	if st.Config.Values["enableCustomTerminalTool"] != true || st.Config.Values["defaultShell"] != "" || st.Config.Values["nope"] != nil {
		t.Fatalf("config after the dispatches: %v", st.Config.Values)
	}
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if len(watcher.other) != 1 || watcher.other[0] != messages.RootConfigChanged {
		t.Fatalf("the other subscriber saw %v; want the one accepted change", watcher.other)
	}
	sender.mu.Lock()
	defer sender.mu.Unlock()
	if len(sender.other) != 3 { // the three refusals, echoed to the sender alone
		t.Fatalf("the sender was answered %v; want three refusals", sender.other)
	}
}
