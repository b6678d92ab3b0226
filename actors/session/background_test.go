package session_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/messages"
)

// wakeText is what a shell service says when a background command ends; a person
// may type the very same words.
const wakeText = "Background command `make watch` in shell s1 ended with exit code 0."

// turnMessage is a turnStarted's or pendingMessageSet's message, decoded.
type turnMessage struct {
	Text   string
	Origin struct{ Kind string }
	Meta   map[string]any `json:"_meta"`
}

func messageOf(t *testing.T, s seen) turnMessage {
	t.Helper()
	var a struct{ Message turnMessage }
	if err := json.Unmarshal(s.env.Action, &a); err != nil {
		t.Fatal(err)
	}
	return a.Message
}

// chatSnapshot is what a test reads of a chat's snapshot.
type chatSnapshot struct {
	Status     int
	ActiveTurn *struct{ ID string }
	Turns      []struct {
		ID, State string
		Message   turnMessage
	}
	QueuedMessages []struct {
		ID      string
		Message turnMessage
	}
	BackgroundWork []map[string]any
}

func (h *harness) chatSnapshot() chatSnapshot {
	h.t.Helper()
	var st chatSnapshot
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// TestWakeOnIdleChat wakes an idle chat: a turn of the host's, its message a system
// notification carrying who started what woke it, starts and completes at once, with
// no no-agent error. A person typing the same words gets the no-agent error, and a
// client may not pose as the host.
func TestWakeOnIdleChat(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	// A wake for a chat the session does not hold goes nowhere.
	h.system.Root.Send(h.session, &session.Wake{Chat: h.uri + "/nope", Text: "lost"})
	h.system.Root.Send(h.session, &session.Wake{Chat: h.chat, Text: wakeText, By: "ana", Meta: map[string]any{"termhost.shell": "s1"}})

	i, started := h.log.waitFor(t, 0, "the wake's turnStarted", isType(messages.ChatTurnStarted, ""))
	msg := messageOf(t, started)
	if msg.Text != wakeText || msg.Origin.Kind != "systemNotification" || msg.Meta["termhost.by"] != "ana" || msg.Meta["termhost.shell"] != "s1" {
		t.Fatalf("the wake's message: %s", started.env.Action)
	}
	if started.env.Origin != nil || started.str("queuedMessageId") != "" {
		t.Fatalf("the wake's turn was a client's or a queued one: %+v %s", started.env, started.env.Action)
	}
	turnID := started.str("turnId")
	done, _ := h.log.waitFor(t, i, "the wake's turnComplete", isType(messages.ChatTurnComplete, turnID))
	h.log.mu.Lock()
	before := append([]seen(nil), h.log.all[:done]...)
	h.log.mu.Unlock()
	for _, s := range before {
		if s.typ == messages.ChatError || (s.typ == messages.ChatTurnStarted && s.str("turnId") != turnID) {
			t.Fatalf("besides the wake's turn: %s", s.env.Action)
		}
	}
	st := h.chatSnapshot()
	if len(st.Turns) != 1 || st.Turns[0].ID != turnID || st.Turns[0].State != messages.TurnStateComplete ||
		st.Turns[0].Message.Origin.Kind != "systemNotification" || st.ActiveTurn != nil || st.Status != int(messages.SessionStatusIdle) {
		t.Fatalf("the chat after the wake: %+v", st)
	}

	// The same words typed by a person are a person's message: no agent hears them.
	h.say("typed", wakeText)
	h.log.waitFor(t, done, "the typed turn's no-agent error", isType(messages.ChatError, "typed"))

	// A client's turn or queued message posing as the host's is refused.
	notification := map[string]any{"text": wakeText, "origin": map[string]any{"kind": "systemNotification"}}
	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnStarted, "turnId": "posing", "startedAt": "2026-10-01T10:00:00.000Z", "message": notification})
	h.dispatch(h.chat, map[string]any{"type": messages.ChatPendingMessageSet, "kind": messages.PendingQueued, "id": "posing-q", "message": notification})
	for _, want := range []string{messages.ChatTurnStarted, messages.ChatPendingMessageSet} {
		_, r := h.log.waitFor(t, done, "the refused "+want, func(s seen) bool { return s.env.RejectionReason != "" && s.typ == want })
		if !strings.Contains(r.env.RejectionReason, "systemNotification is the host's") {
			t.Errorf("%s refused with %q", want, r.env.RejectionReason)
		}
	}
	if st := h.chatSnapshot(); len(st.Turns) != 2 || len(st.QueuedMessages) != 0 {
		t.Fatalf("the chat after the refusals: %+v", st)
	}
}

// TestWakeOnBusyChatWaitsItsTurn wakes a chat running a command: the wake waits as a
// queued message clients see, and its turn starts, naming it, only once the command's
// turn completed; then it completes at once.
func TestWakeOnBusyChatWaitsItsTurn(t *testing.T) {
	work := t.TempDir()
	h := newHarness(t, harnessOptions{workDir: work})
	h.say("t1", "!while [ ! -e release ]; do sleep 0.05; done; echo released")
	h.log.waitFor(t, 0, "the running command's terminal", isType(messages.ChatToolCallContentChanged, "t1"))

	h.system.Root.Send(h.session, &session.Wake{Chat: h.chat, Text: wakeText, By: "ana"})
	_, queued := h.log.waitFor(t, 0, "the wake queued", isType(messages.ChatPendingMessageSet, ""))
	wakeID := queued.str("id")
	if queued.str("kind") != messages.PendingQueued || wakeID == "" || messageOf(t, queued).Origin.Kind != "systemNotification" || queued.env.Origin != nil {
		t.Fatalf("the wake was queued as %+v %s", queued.env, queued.env.Action)
	}
	if st := h.chatSnapshot(); st.ActiveTurn == nil || st.ActiveTurn.ID != "t1" || len(st.QueuedMessages) != 1 || st.QueuedMessages[0].ID != wakeID ||
		st.QueuedMessages[0].Message.Text != wakeText {
		t.Fatalf("the chat while t1 runs: %+v", st)
	}

	if err := os.WriteFile(filepath.Join(work, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	end, _ := h.log.waitFor(t, 0, "t1's turnComplete", isType(messages.ChatTurnComplete, "t1"))
	removed, _ := h.log.waitFor(t, end, "the wake taken off the queue", func(s seen) bool {
		return s.typ == messages.ChatPendingMessageRemoved && s.str("id") == wakeID
	})
	i, started := h.log.waitFor(t, removed, "the wake's turn", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && s.str("queuedMessageId") == wakeID
	})
	if messageOf(t, started).Origin.Kind != "systemNotification" {
		t.Fatalf("the wake's turn: %s", started.env.Action)
	}
	h.log.waitFor(t, i, "the wake's turnComplete", isType(messages.ChatTurnComplete, started.str("turnId")))
	st := h.chatSnapshot()
	if len(st.Turns) != 2 || st.Turns[1].State != messages.TurnStateComplete || st.Turns[1].Message.Meta["termhost.by"] != "ana" || len(st.QueuedMessages) != 0 {
		t.Fatalf("the chat after the wake: %+v", st)
	}
}

// owner stands in for a shell service: it keeps the stops it is sent.
type owner struct {
	stops chan *session.StopBackgroundWork
}

func (o *owner) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*session.StopBackgroundWork); ok {
		o.stops <- m
	}
}

// TestBackgroundWorkRows sets, replaces, stops and removes a chat's background work:
// a subscriber sees each change and the snapshot follows; a stop reaches the row's
// owner and leaves the row; a stop of what is not there is an error; a row whose
// owner stops goes; and no client may set or remove a row.
func TestBackgroundWorkRows(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	o := &owner{stops: make(chan *session.StopBackgroundWork, 4)}
	ownerPID := h.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return o }))
	work := messages.BackgroundShellWork{Kind: messages.BackgroundKindShell, ID: "bg-1", Label: "make watch", StartedAt: "2026-10-01T10:00:00.000Z",
		Command: "make watch", Terminal: "ahp-terminal:/termhost-agent/x/s1"}
	h.system.Root.Send(h.session, &session.SetBackgroundWork{Chat: h.chat, Work: work, Owner: ownerPID})
	_, set := h.log.waitFor(t, 0, "chat/backgroundWorkSet", isType(messages.ChatBackgroundWorkSet, ""))
	var a struct{ Work map[string]any }
	if err := json.Unmarshal(set.env.Action, &a); err != nil {
		t.Fatal(err)
	}
	if a.Work["kind"] != "shell" || a.Work["id"] != "bg-1" || a.Work["command"] != "make watch" || a.Work["terminal"] != work.Terminal || a.Work["startedAt"] != work.StartedAt {
		t.Fatalf("backgroundWorkSet %s", set.env.Action)
	}
	work.Label = "make watch (renamed)"
	h.system.Root.Send(h.session, &session.SetBackgroundWork{Chat: h.chat, Work: work, Owner: ownerPID})
	h.log.waitFor(t, 0, "the row replaced", func(s seen) bool {
		return s.typ == messages.ChatBackgroundWorkSet && strings.Contains(string(s.env.Action), "renamed")
	})
	if st := h.chatSnapshot(); len(st.BackgroundWork) != 1 || st.BackgroundWork[0]["label"] != work.Label {
		t.Fatalf("background work in the snapshot: %+v", st.BackgroundWork)
	}

	stop := func(chat, id string) *session.Result {
		t.Helper()
		res, err := h.system.Root.RequestFuture(h.session, &session.StopBackgroundWork{Chat: chat, ID: id}, waitTimeout).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*session.Result)
	}
	if r := stop(h.chat, "bg-1"); r.Err != nil {
		t.Fatalf("stopping bg-1: %+v", r.Err)
	}
	select {
	case m := <-o.stops:
		if m.Chat != h.chat || m.ID != "bg-1" {
			t.Fatalf("the owner was told %+v", m)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the stop did not reach the row's owner")
	}
	// The row stays until its owner removes it.
	if st := h.chatSnapshot(); len(st.BackgroundWork) != 1 {
		t.Fatalf("background work after the stop: %+v", st.BackgroundWork)
	}
	if r := stop(h.chat, "bg-9"); r.Err == nil || r.Err.Code != messages.CodeNotFound || !strings.Contains(r.Err.Message, "bg-9") {
		t.Fatalf("stopping an unknown row: %+v", r.Err)
	}
	if r := stop(h.uri+"/nope", "bg-1"); r.Err == nil || r.Err.Code != messages.CodeNotFound {
		t.Fatalf("stopping in an unknown chat: %+v", r.Err)
	}

	// Clients may not set or remove background work.
	h.dispatch(h.chat, map[string]any{"type": messages.ChatBackgroundWorkRemoved, "id": "bg-1"})
	h.dispatch(h.chat, map[string]any{"type": messages.ChatBackgroundWorkSet, "work": map[string]any{"kind": "shell", "id": "mine", "label": "x", "startedAt": "x", "command": "x"}})
	for _, typ := range []string{messages.ChatBackgroundWorkRemoved, messages.ChatBackgroundWorkSet} {
		_, r := h.log.waitFor(t, 0, "the refused "+typ, func(s seen) bool { return s.env.RejectionReason != "" && s.typ == typ })
		if r.env.RejectionReason != typ+" is not dispatched by clients on this host" {
			t.Errorf("%s refused with %q", typ, r.env.RejectionReason)
		}
	}

	h.system.Root.Send(h.session, &session.RemoveBackgroundWork{Chat: h.chat, ID: "bg-1"})
	_, removed := h.log.waitFor(t, 0, "chat/backgroundWorkRemoved", isType(messages.ChatBackgroundWorkRemoved, ""))
	if removed.str("id") != "bg-1" || removed.env.Origin != nil {
		t.Fatalf("backgroundWorkRemoved %s", removed.env.Action)
	}
	if st := h.chatSnapshot(); st.BackgroundWork != nil {
		t.Fatalf("background work after the remove: %+v", st.BackgroundWork)
	}
	if r := stop(h.chat, "bg-1"); r.Err == nil || r.Err.Code != messages.CodeNotFound {
		t.Fatalf("stopping a removed row: %+v", r.Err)
	}

	// A row whose owner stops can never be stopped or removed by it: it goes.
	work.ID = "bg-2"
	h.system.Root.Send(h.session, &session.SetBackgroundWork{Chat: h.chat, Work: work, Owner: ownerPID})
	h.log.waitFor(t, 0, "bg-2 set", func(s seen) bool {
		return s.typ == messages.ChatBackgroundWorkSet && strings.Contains(string(s.env.Action), `"bg-2"`)
	})
	if err := h.system.Root.StopFuture(ownerPID).Wait(); err != nil {
		t.Fatal(err)
	}
	h.log.waitFor(t, 0, "bg-2 removed with its owner", func(s seen) bool {
		return s.typ == messages.ChatBackgroundWorkRemoved && s.str("id") == "bg-2"
	})
	// Only one removal of bg-1 was ever sent: a remove of what is not listed sends nothing.
	count := 0
	h.log.mu.Lock()
	for _, s := range h.log.all {
		if s.typ == messages.ChatBackgroundWorkRemoved && s.env.RejectionReason == "" {
			count++
		}
	}
	h.log.mu.Unlock()
	if count != 2 {
		t.Fatalf("%d backgroundWorkRemoved sent, want 2", count)
	}
}

// toolServices is a test factory of tool services: it counts what it made and the
// specs it was given, and each service reports its start and its stop.
type toolServices struct {
	mu      sync.Mutex
	specs   []session.ToolServiceSpec
	stopped chan *actor.PID
}

func (f *toolServices) props(spec session.ToolServiceSpec) *actor.Props {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	return actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*actor.Stopping); ok {
			f.stopped <- ctx.Self()
		}
	})
}

func (f *toolServices) made() []session.ToolServiceSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]session.ToolServiceSpec(nil), f.specs...)
}

func (h *harness) toolService() *session.ToolServiceResult {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.session, &session.ToolServiceQuery{Session: h.uri}, waitTimeout).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res.(*session.ToolServiceResult)
}

// TestToolServiceSpawnsOnce asks a session for its tool service twice: it is made
// once, for the session, as its child; one that stopped is made again when asked;
// and it stops with the session.
func TestToolServiceSpawnsOnce(t *testing.T) {
	work := t.TempDir()
	f := &toolServices{stopped: make(chan *actor.PID, 4)}
	h := newHarness(t, harnessOptions{workDir: work, toolService: f.props})
	first := h.toolService()
	second := h.toolService()
	if first.Err != nil || first.PID == nil || !first.PID.Equal(second.PID) {
		t.Fatalf("asked twice: %+v then %+v", first, second)
	}
	specs := f.made()
	if len(specs) != 1 || specs[0].Session != h.uri || !specs[0].Root.Equal(h.root) ||
		len(specs[0].WorkingDirectories) != 1 || specs[0].WorkingDirectories[0] != messages.FileURI(work) {
		t.Fatalf("made %+v", specs)
	}
	if !strings.HasPrefix(first.PID.Id, h.session.Id+"/") {
		t.Fatalf("the service %s is not a child of the session %s", first.PID.Id, h.session.Id)
	}

	// One that stopped is made again. The session hears of the stop as it takes the
	// rows the service owned off the chat.
	h.system.Root.Send(h.session, &session.SetBackgroundWork{Chat: h.chat, Owner: first.PID, Work: messages.BackgroundShellWork{
		ID: "bg-1", Label: "l", StartedAt: "2026-10-01T10:00:00.000Z", Command: "c"}})
	h.log.waitFor(t, 0, "the service's row", isType(messages.ChatBackgroundWorkSet, ""))
	if err := h.system.Root.StopFuture(first.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	<-f.stopped
	h.log.waitFor(t, 0, "the service's row removed", isType(messages.ChatBackgroundWorkRemoved, ""))
	again := h.toolService()
	if again.Err != nil || again.PID == nil || len(f.made()) != 2 {
		t.Fatalf("asked after it stopped: %+v (made %d)", again, len(f.made()))
	}

	// It stops with the session.
	if err := h.system.Root.StopFuture(h.session).Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case pid := <-f.stopped:
		if !pid.Equal(again.PID) {
			t.Fatalf("stopped %s, want %s", pid, again.PID)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the service did not stop with its session")
	}
}

// TestToolServiceNone: a host with no tool service answers the query with none.
func TestToolServiceNone(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if r := h.toolService(); r.PID != nil || r.Err != nil {
		t.Fatalf("answered %+v", r)
	}
}

// TestShutdownWaitsForTheToolService shuts a session down: its tool service stops
// first, and the shutdown is answered only once the write the service began as it
// stopped (counted in ToolServiceSpec.Writes) has landed. Nothing is spawned after.
func TestShutdownWaitsForTheToolService(t *testing.T) {
	stopping := make(chan struct{})
	release := make(chan struct{})
	var written atomic.Bool
	service := func(spec session.ToolServiceSpec) *actor.Props {
		return actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*actor.Stopping); ok {
				spec.Writes.Add(1)
				go func() {
					defer spec.Writes.Done()
					<-release
					written.Store(true)
				}()
				close(stopping)
			}
		})
	}
	h := newHarness(t, harnessOptions{toolService: service})
	if r := h.toolService(); r.PID == nil {
		t.Fatalf("no tool service: %+v", r)
	}
	done := h.system.Root.RequestFuture(h.session, &channel.Shutdown{}, waitTimeout)
	select {
	case <-stopping:
	case <-time.After(waitTimeout):
		t.Fatal("the shutdown did not stop the tool service")
	}
	close(release)
	if _, err := done.Result(); err != nil {
		t.Fatal(err)
	}
	if !written.Load() {
		t.Fatal("the shutdown was answered before the tool service's write landed")
	}
	if r := h.toolService(); r.PID != nil || r.Err == nil || r.Err.Message != session.ClosingHost {
		t.Fatalf("asked while closing: %+v", r)
	}
}
