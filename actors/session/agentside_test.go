package session_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// fakeRunner stands in for an agent runner: it hands the test what the session sends
// it, and the test answers as a runner would, sending to the session.
type fakeRunner struct {
	specs   chan agentmsg.Spec
	got     chan any
	stopped chan struct{}
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{specs: make(chan agentmsg.Spec, 4), got: make(chan any, 64), stopped: make(chan struct{}, 4)}
}

func (f *fakeRunner) props(spec agentmsg.Spec) *actor.Props {
	f.specs <- spec
	return actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *agentmsg.Prompt, *agentmsg.Cancel:
			f.got <- m
		case *actor.Stopping:
			f.stopped <- struct{}{}
		}
	})
}

// next is the next message the session sent the runner.
func (f *fakeRunner) next(t *testing.T) any {
	t.Helper()
	select {
	case m := <-f.got:
		return m
	case <-time.After(waitTimeout):
		t.Fatal("the session sent its runner nothing")
		return nil
	}
}

func (f *fakeRunner) prompt(t *testing.T) *agentmsg.Prompt {
	t.Helper()
	m := f.next(t)
	p, ok := m.(*agentmsg.Prompt)
	if !ok {
		t.Fatalf("the runner was sent %T %+v, want a prompt", m, m)
	}
	return p
}

// quiet says the runner was sent nothing more by the time the session answered a
// subscribe: whatever it would have sent for what came before, it sent by then.
func (f *fakeRunner) quiet(t *testing.T, h *harness) {
	t.Helper()
	h.subscribe(h.chat)
	select {
	case m := <-f.got:
		t.Fatalf("the runner was sent %T %+v", m, m)
	default:
	}
}

func newAgentHarness(t *testing.T, o harnessOptions) (*harness, *fakeRunner) {
	t.Helper()
	f := newFakeRunner()
	o.agent, o.agentRunner = "scripted", f.props
	h := newHarness(t, o)
	return h, f
}

// markdown streams a markdown part into a turn: its start and a delta, as maps (any
// value that encodes as a chat action will do).
func markdown(turnID, partID, first, more string) []any {
	return []any{
		map[string]any{"type": messages.ChatResponsePart, "turnId": turnID, "part": map[string]any{"kind": "markdown", "id": partID, "content": first}},
		map[string]any{"type": messages.ChatDelta, "turnId": turnID, "partId": partID, "content": more},
	}
}

// agentSnapshot is what these tests read of a chat's snapshot.
type agentSnapshot struct {
	ActiveTurn *struct {
		ID            string
		ResponseParts []json.RawMessage
	}
	Turns []struct {
		ID, State     string
		Message       turnMessage
		Error         *messages.ErrorInfo
		ResponseParts []struct {
			Kind, Content string
			ToolCall      *struct {
				ToolCallID, Status string
				SelectedOption     *struct{ ID string }
			}
		}
	}
}

func (h *harness) agentSnapshot() agentSnapshot {
	h.t.Helper()
	var st agentSnapshot
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// TestAgentTurnStreamsInOrderAndCompletes sends a person's message to the agent: the
// runner is made for the session and gets the prompt with who sent it; what it
// streams is applied in order, what names another turn or ends the turn itself is
// dropped; its end completes the turn.
func TestAgentTurnStreamsInOrderAndCompletes(t *testing.T) {
	work := t.TempDir()
	h, f := newAgentHarness(t, harnessOptions{workDir: work})
	spec := <-f.specs
	if spec.Session != h.uri || spec.Agent != "scripted" || spec.AgentSessionID != "" || !spec.Root.Equal(h.root) || spec.Terminals == nil || spec.Writes == nil ||
		len(spec.WorkingDirectories) != 1 || spec.WorkingDirectories[0] != messages.FileURI(work) {
		t.Fatalf("the runner was made for %+v", spec)
	}
	var sess struct{ Provider string }
	if err := json.Unmarshal(h.subscribe(h.uri), &sess); err != nil || sess.Provider != "scripted" {
		t.Fatalf("the session's provider: %+v %v", sess, err)
	}

	h.say("t1", "hello agent")
	p := f.prompt(t)
	if p.Chat != h.chat || p.TurnID != "t1" || p.Text != "hello agent" || p.By != "ann" {
		t.Fatalf("prompt %+v", p)
	}
	actions := markdown("t1", "p1", "Hel", "lo")
	actions = append(actions,
		map[string]any{"type": messages.ChatDelta, "turnId": "other", "partId": "p1", "content": "NOT THIS"},
		messages.ChatTurnCompleteAction{TurnID: "t1"},
		map[string]any{"type": messages.ChatDelta, "turnId": "t1", "partId": "p1", "content": ", world"})
	h.system.Root.Send(h.session, &agentmsg.Actions{Chat: h.chat, TurnID: "t1", Actions: actions})
	// Actions for a turn that is not running go nowhere.
	h.system.Root.Send(h.session, &agentmsg.Actions{Chat: h.chat, TurnID: "t0", Actions: markdown("t0", "p0", "old", "")})
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", StopReason: "end_turn"})
	end, _ := h.log.waitFor(t, 0, "t1's turnComplete", isType(messages.ChatTurnComplete, "t1"))

	var deltas []string
	h.log.mu.Lock()
	for _, s := range h.log.all[:end] {
		if s.typ == messages.ChatDelta {
			deltas = append(deltas, s.str("content"))
		}
		if s.typ == messages.ChatTurnComplete || s.str("turnId") == "other" || s.str("turnId") == "t0" {
			t.Errorf("sent %s", s.env.Action)
		}
	}
	h.log.mu.Unlock()
	if strings.Join(deltas, "|") != "lo|, world" {
		t.Fatalf("deltas in order: %q", deltas)
	}
	st := h.agentSnapshot()
	if len(st.Turns) != 1 || st.Turns[0].State != messages.TurnStateComplete || len(st.Turns[0].ResponseParts) != 1 ||
		st.Turns[0].ResponseParts[0].Content != "Hello, world" || st.ActiveTurn != nil {
		t.Fatalf("the chat after the turn: %+v", st)
	}
	// Actions after the end are dropped, and so is a second end.
	h.system.Root.Send(h.session, &agentmsg.Actions{Chat: h.chat, TurnID: "t1", Actions: markdown("t1", "p2", "late", "")})
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", Err: "late"})
	if st := h.agentSnapshot(); len(st.Turns) != 1 || len(st.Turns[0].ResponseParts) != 1 {
		t.Fatalf("the chat after late actions: %+v", st)
	}
}

// TestAgentTurnGate: a message for the agent while it is on a turn is refused; a
// queued one waits and goes to the agent, as its sender's, once the turn ended; an
// error ends a turn with its message; a `!` command still runs in a terminal.
func TestAgentTurnGate(t *testing.T) {
	work := t.TempDir()
	h, f := newAgentHarness(t, harnessOptions{workDir: work})
	h.say("t1", "first")
	f.prompt(t)
	h.say("t2", "second, too soon")
	_, r := h.log.waitFor(t, 0, "the refused turn", func(s seen) bool { return s.env.RejectionReason != "" && s.str("turnId") == "t2" })
	if !strings.Contains(r.env.RejectionReason, "still on turn t1") {
		t.Fatalf("refused with %q", r.env.RejectionReason)
	}
	h.queue("q1", "queued for the agent")
	h.log.waitFor(t, 0, "the queued message", func(s seen) bool { return s.typ == messages.ChatPendingMessageSet })
	f.quiet(t, h)

	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", Err: "the model is overloaded"})
	_, e := h.log.waitFor(t, 0, "t1's error", isType(messages.ChatError, "t1"))
	var errAction struct{ Error messages.ErrorInfo }
	_ = json.Unmarshal(e.env.Action, &errAction)
	if errAction.Error.Message != "the model is overloaded" {
		t.Fatalf("chat/error %s", e.env.Action)
	}
	p := f.prompt(t)
	if p.Text != "queued for the agent" || p.By != "ann" || !strings.HasPrefix(p.TurnID, "turn-") {
		t.Fatalf("the queued message's prompt %+v", p)
	}
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: p.TurnID, StopReason: "max_tokens"})
	h.log.waitFor(t, 0, "the queued turn's completion", isType(messages.ChatTurnComplete, p.TurnID))

	// A command is the host's: it runs in a terminal, and the agent hears nothing.
	h.say("t3", "!echo from-the-host")
	_, result := h.completedResult(0, "t3")
	if !result.Success {
		t.Fatalf("the command's result %+v", result)
	}
	f.quiet(t, h)
}

// TestAgentPermission shows the agent's question as a tool call awaiting a
// confirmation with the agent's options; a confirmation that names no option of its
// own, or contradicts its choice, is refused; an approval without an option answers
// the first allowing one, once; a refusal answers the refusing option chosen, else
// the agent's reject_once; and the turn's end answers what is still open with "".
func TestAgentPermission(t *testing.T) {
	h, f := newAgentHarness(t, harnessOptions{})
	h.say("t1", "do something risky")
	f.prompt(t)
	options := []agentmsg.PermissionOption{{ID: "never", Name: "Always refuse", Kind: "reject_always"}, {ID: "yes", Name: "Allow", Kind: "allow_once"},
		{ID: "always", Name: "Always allow", Kind: "allow_always"}, {ID: "no", Name: "Refuse", Kind: "reject_once"}}
	reply := make(chan string, 1)
	h.system.Root.Send(h.session, &agentmsg.Permission{Chat: h.chat, TurnID: "t1", ToolCallID: "call-1", Title: "Run rm -rf build", Options: options, Reply: reply})
	i, ready := h.log.waitFor(t, 0, "the question", isType(messages.ChatToolCallReady, "t1"))
	var shown struct {
		InvocationMessage string
		Confirmed         *string
		Options           []struct {
			ID, Label, Kind string
			Group           int
		}
	}
	_ = json.Unmarshal(ready.env.Action, &shown)
	if shown.InvocationMessage != "Run rm -rf build" || shown.Confirmed != nil || len(shown.Options) != 4 || shown.Options[0].Kind != "deny" ||
		shown.Options[1].ID != "yes" || shown.Options[1].Label != "Allow" || shown.Options[1].Kind != "approve" || shown.Options[0].Group == shown.Options[1].Group {
		t.Fatalf("toolCallReady %s", ready.env.Action)
	}
	h.log.waitFor(t, 0, "the call's start", isType(messages.ChatToolCallStart, "t1"))
	raw, _ := json.Marshal(h.subscribe(h.chat))
	if !strings.Contains(string(raw), "pending-confirmation") {
		t.Fatalf("the call is not awaiting confirmation: %s", raw)
	}

	confirm := func(fields map[string]any) {
		a := map[string]any{"type": messages.ChatToolCallConfirmed, "turnId": "t1", "toolCallId": "call-1"}
		for k, v := range fields {
			a[k] = v
		}
		h.dispatch(h.chat, a)
	}
	refusedWith := func(from int, part string) int {
		t.Helper()
		j, r := h.log.waitFor(t, from, "a refused confirmation", func(s seen) bool { return s.env.RejectionReason != "" && s.typ == messages.ChatToolCallConfirmed })
		if !strings.Contains(r.env.RejectionReason, part) {
			t.Fatalf("refused with %q, want %q", r.env.RejectionReason, part)
		}
		return j + 1
	}
	confirm(map[string]any{"approved": true, "confirmed": "user-action", "selectedOptionId": "maybe"})
	i = refusedWith(i, `no option "maybe"`)
	confirm(map[string]any{"approved": true, "confirmed": "user-action", "selectedOptionId": "no"})
	i = refusedWith(i, "send it with approved false")
	select {
	case id := <-reply:
		t.Fatalf("answered %q before anybody confirmed", id)
	default:
	}
	confirm(map[string]any{"approved": true, "confirmed": "user-action"})
	_, echo := h.log.waitFor(t, i, "the confirmation", isType(messages.ChatToolCallConfirmed, "t1"))
	if echo.env.Origin == nil || echo.env.Origin.ClientID != "unit" {
		t.Fatalf("the confirmation was not echoed as the client's: %+v", echo.env)
	}
	if id := <-reply; id != "yes" {
		t.Fatalf("answered %q, want the first allowing option", id)
	}
	confirm(map[string]any{"approved": true, "confirmed": "user-action"})
	refusedWith(i, "waits for a confirmation")

	// Refused: with a refusing option chosen, that one; without, the agent's
	// reject_once (ACP's cancelled answer would say the turn was cancelled).
	for call, refusal := range map[string]map[string]any{
		"call-2a": {"approved": false, "reason": "denied", "selectedOptionId": "never"},
		"call-2b": {"approved": false, "reason": "denied"},
	} {
		reply := make(chan string, 1)
		h.system.Root.Send(h.session, &agentmsg.Permission{Chat: h.chat, TurnID: "t1", ToolCallID: call, Title: "Write /etc/hosts", Options: options, Reply: reply})
		h.log.waitFor(t, 0, "the question "+call, func(s seen) bool {
			return s.typ == messages.ChatToolCallReady && s.str("toolCallId") == call
		})
		refusal["type"], refusal["turnId"], refusal["toolCallId"] = messages.ChatToolCallConfirmed, "t1", call
		h.dispatch(h.chat, refusal)
		want := map[string]string{"call-2a": "never", "call-2b": "no"}[call]
		if id := <-reply; id != want {
			t.Fatalf("%s answered %q, want %q", call, id, want)
		}
	}

	// Open when the turn ends: answered "". A reply nobody reads yet does not stall
	// the session.
	third := make(chan string)
	h.system.Root.Send(h.session, &agentmsg.Permission{Chat: h.chat, TurnID: "t1", ToolCallID: "call-3", Title: "Push", Options: options, Reply: third})
	h.log.waitFor(t, 0, "the third question", func(s seen) bool {
		return s.typ == messages.ChatToolCallReady && s.str("toolCallId") == "call-3"
	})
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", StopReason: "end_turn"})
	h.log.waitFor(t, 0, "t1's completion", isType(messages.ChatTurnComplete, "t1"))
	select {
	case id := <-third:
		if id != "" {
			t.Fatalf("an open question was answered %q at the turn's end", id)
		}
	case <-time.After(waitTimeout):
		t.Fatal("an open question was not answered at the turn's end")
	}
	// A question of a turn that is not running is answered at once.
	late := make(chan string, 1)
	h.system.Root.Send(h.session, &agentmsg.Permission{Chat: h.chat, TurnID: "t1", ToolCallID: "call-4", Options: options, Reply: late})
	if id := <-late; id != "" {
		t.Fatalf("a late question was answered %q", id)
	}
	st := h.agentSnapshot()
	statuses := map[string]string{}
	for _, p := range st.Turns[0].ResponseParts {
		if p.ToolCall != nil {
			statuses[p.ToolCall.ToolCallID] = p.ToolCall.Status
		}
	}
	if statuses["call-1"] != "running" && statuses["call-1"] != "cancelled" || statuses["call-2a"] != "cancelled" || statuses["call-3"] != "cancelled" {
		t.Fatalf("the calls after the turn: %v", statuses)
	}
}

// TestAgentCancel: a client's cancel of the agent's turn is passed to the agent and
// echoed once the agent has ended the turn; one the agent does not end in time is
// ended by the session, and the agent's late end is dropped.
func TestAgentCancel(t *testing.T) {
	h, f := newAgentHarness(t, harnessOptions{cancelGrace: 300 * time.Millisecond})
	h.say("t1", "sleep a while")
	f.prompt(t)
	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnCancelled, "turnId": "t1", "duration": 5})
	c, ok := f.next(t).(*agentmsg.Cancel)
	if !ok || c.TurnID != "t1" || c.Chat != h.chat {
		t.Fatalf("the runner was sent %+v", c)
	}
	if st := h.agentSnapshot(); st.ActiveTurn == nil {
		t.Fatal("the turn ended before the agent ended it")
	}
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", StopReason: "cancelled"})
	_, echo := h.log.waitFor(t, 0, "the cancel", isType(messages.ChatTurnCancelled, "t1"))
	if echo.env.Origin == nil || echo.env.Origin.ClientID != "unit" {
		t.Fatalf("the cancel was not echoed as the client's: %+v", echo.env)
	}
	if st := h.agentSnapshot(); len(st.Turns) != 1 || st.Turns[0].State != messages.TurnStateCancelled {
		t.Fatalf("after the cancel: %+v", st)
	}

	// The agent never ends this one.
	h.say("t2", "sleep forever")
	f.prompt(t)
	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnCancelled, "turnId": "t2", "duration": 5})
	f.next(t)
	h.log.waitFor(t, 0, "t2 cancelled after the grace", isType(messages.ChatTurnCancelled, "t2"))
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t2", StopReason: "end_turn"})
	h.say("t3", "next")
	if p := f.prompt(t); p.TurnID != "t3" {
		t.Fatalf("prompt %+v", p)
	}
	if st := h.agentSnapshot(); len(st.Turns) != 2 || st.Turns[1].State != messages.TurnStateCancelled || st.ActiveTurn == nil || st.ActiveTurn.ID != "t3" {
		t.Fatalf("after the lapsed cancel: %+v", st)
	}
}

// TestAgentCommandTakesTheTurnsPlace: a `!` command sent while the agent is on a turn
// runs at once; the agent is asked to stop, and a message for it waits until it has.
func TestAgentCommandTakesTheTurnsPlace(t *testing.T) {
	h, f := newAgentHarness(t, harnessOptions{})
	h.say("t1", "think hard")
	f.prompt(t)
	h.say("t2", "!echo meanwhile")
	if c, ok := f.next(t).(*agentmsg.Cancel); !ok || c.TurnID != "t1" {
		t.Fatalf("the runner was sent %+v", c)
	}
	h.completedResult(0, "t2")
	h.queue("q1", "after the command")
	h.log.waitFor(t, 0, "the queued message", func(s seen) bool { return s.typ == messages.ChatPendingMessageSet })
	f.quiet(t, h)
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: "t1", StopReason: "cancelled"})
	if p := f.prompt(t); p.Text != "after the command" {
		t.Fatalf("prompt %+v", p)
	}
}

// TestAgentWake: a wake goes to the agent as a prompt, through the turn gate, with
// the person who started what woke it.
func TestAgentWake(t *testing.T) {
	h, f := newAgentHarness(t, harnessOptions{})
	h.system.Root.Send(h.session, &session.Wake{Chat: h.chat, Text: wakeText, By: "bea"})
	p := f.prompt(t)
	if p.Text != wakeText || p.By != "bea" {
		t.Fatalf("the wake's prompt %+v", p)
	}
	// A second wake while the agent is on the first waits its turn.
	h.system.Root.Send(h.session, &session.Wake{Chat: h.chat, Text: "monitor fired", By: "cy"})
	h.log.waitFor(t, 0, "the second wake queued", isType(messages.ChatPendingMessageSet, ""))
	f.quiet(t, h)
	h.system.Root.Send(h.session, &agentmsg.TurnEnded{Chat: h.chat, TurnID: p.TurnID, StopReason: "end_turn"})
	if p := f.prompt(t); p.Text != "monitor fired" || p.By != "cy" {
		t.Fatalf("the queued wake's prompt %+v", p)
	}
}

// TestAgentRestartedAndLost: a restart ends the turn the agent lost and the chat
// says the agent restarted; once lost, the chat says it is gone and every later turn
// ends with that error.
func TestAgentRestartedAndLost(t *testing.T) {
	h, f := newAgentHarness(t, harnessOptions{})
	h.say("t1", "crash")
	f.prompt(t)
	h.system.Root.Send(h.session, &agentmsg.Restarted{Reason: "the agent exited with code 3"})
	h.log.waitFor(t, 0, "t1's error", isType(messages.ChatError, "t1"))
	_, n := h.log.waitFor(t, 0, "the notice", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && messageOf(t, s).Origin.Kind == messages.OriginSystemNotification
	})
	if msg := messageOf(t, n); !strings.Contains(msg.Text, "The agent scripted restarted: the agent exited with code 3") || msg.Meta[session.AgentNoticeMeta] != "restarted" {
		t.Fatalf("the notice %s", n.env.Action)
	}
	h.log.waitFor(t, 0, "the notice's completion", isType(messages.ChatTurnComplete, n.str("turnId")))
	f.quiet(t, h)

	h.say("t2", "still there?")
	f.prompt(t)
	h.system.Root.Send(h.session, &agentmsg.Lost{Reason: "it crashed 4 times in a minute"})
	_, e := h.log.waitFor(t, 0, "t2's error", isType(messages.ChatError, "t2"))
	if !strings.Contains(string(e.env.Action), "is gone") {
		t.Fatalf("t2 ended with %s", e.env.Action)
	}
	h.log.waitFor(t, 0, "the lost notice", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && strings.Contains(messageOf(t, s).Text, "The agent scripted is gone: it crashed 4 times in a minute")
	})
	h.say("t3", "hello?")
	_, e = h.log.waitFor(t, 0, "t3's error", isType(messages.ChatError, "t3"))
	if !strings.Contains(string(e.env.Action), "The agent scripted is gone") {
		t.Fatalf("t3 ended with %s", e.env.Action)
	}
	f.quiet(t, h)
}

// TestAgentSessionRecord: a session with an agent is kept from its start, with the
// agent's id for its conversation once the agent says it; a restored session's
// runner gets that id; and the runner stops with the session.
func TestAgentSessionRecord(t *testing.T) {
	store, err := persistence.Open(filepath.Join(t.TempDir(), "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	h, f := newAgentHarness(t, harnessOptions{store: store})
	<-f.specs
	h.system.Root.Send(h.session, &agentmsg.Started{AgentSessionID: "acp-42"})
	// The write is off the mailbox; a shutdown answers once it landed.
	if _, err := h.system.Root.RequestFuture(h.session, &channel.Shutdown{}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.stopped:
	case <-time.After(waitTimeout):
		t.Fatal("the runner did not stop with the shutdown")
	}
	recs, problems := store.Sessions()
	if len(problems) > 0 || len(recs) != 1 || recs[0].Agent != "scripted" || recs[0].AgentSessionID != "acp-42" || recs[0].URI != h.uri {
		t.Fatalf("kept %+v %v", recs, problems)
	}

	again, f2 := newAgentHarness(t, harnessOptions{store: store, record: &recs[0]})
	if spec := <-f2.specs; spec.AgentSessionID != "acp-42" || spec.Session != again.uri {
		t.Fatalf("the restored runner was made for %+v", spec)
	}
}

// TestAgentSessionWithoutItsAgent: a restored session whose agent the host no longer
// runs ends its turns saying so; a session without an agent still says no agent is
// attached.
func TestAgentSessionWithoutItsAgent(t *testing.T) {
	rec := persistence.SessionRecord{URI: "ahp-session:/orphan", Agent: "retired", Created: time.Now()}
	h := newHarness(t, harnessOptions{record: &rec})
	h.say("t1", "hello")
	_, e := h.log.waitFor(t, 0, "t1's error", isType(messages.ChatError, "t1"))
	if !strings.Contains(string(e.env.Action), "The agent retired is gone: this host no longer runs it") {
		t.Fatalf("t1 ended with %s", e.env.Action)
	}
}
