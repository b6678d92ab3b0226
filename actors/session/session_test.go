package session_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// waitTimeout bounds every wait for an event; nothing here waits by sleeping.
const waitTimeout = 20 * time.Second

// testRoot plays the root actor for the sessions it spawns: it opens their terminals
// with terminal.NewProps, real shells on pipes, and routes what a session sends a
// terminal; or, with refuse set, answers every terminal.Create with that error.
type testRoot struct {
	created   int // terminals asked for (terminal.Create)
	cfg       terminal.Config
	refuse    *messages.Error
	terminals map[string]*actor.PID
	chatsOf   func(*session.ChatsOf)
}

// createdQuery asks the test root how many terminals it was asked for.
type createdQuery struct{}

// spawnSession asks the test root to spawn a session; the answer is its PID.
type spawnSession struct{ props *actor.Props }

func (r *testRoot) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnSession:
		ctx.Respond(ctx.Spawn(m.props))
	case createdQuery:
		ctx.Respond(r.created)
	case *terminal.Create:
		r.created++
		if r.refuse != nil {
			ctx.Respond(&terminal.CreateResult{Err: r.refuse})
			return
		}
		pid := ctx.Spawn(terminal.NewProps(r.cfg, m, ""))
		r.terminals[m.URI] = pid
		ctx.Forward(pid) // the terminal answers once it is listed
	case *terminal.StartFailed:
		delete(r.terminals, m.URI)
		ctx.Send(m.Waiter, &terminal.CreateResult{Err: m.Err})
		ctx.Stop(m.Terminal)
	case *terminal.Dispose:
		if pid := r.terminals[m.URI]; pid != nil {
			delete(r.terminals, m.URI)
			ctx.Send(pid, m)
		}
		ctx.Respond(&terminal.DisposeResult{})
	case *terminal.Write:
		r.forward(ctx, m.URI)
	case *terminal.Kill:
		r.forward(ctx, m.URI)
	case *terminal.SnapshotQuery:
		r.forward(ctx, m.URI)
	case *terminal.ScreenQuery:
		r.forward(ctx, m.URI)
	case *channel.Dispatch:
		r.forward(ctx, m.Channel)
	case *session.ChatsOf:
		if r.chatsOf != nil {
			r.chatsOf(m)
		}
	}
}

func (r *testRoot) forward(ctx actor.Context, uri string) {
	if pid := r.terminals[uri]; pid != nil {
		ctx.Forward(pid)
	}
}

// harness is one session under a test root, with a subscriber on its default chat.
type harness struct {
	t        *testing.T
	testRoot *testRoot // read only through the root's mailbox (created)
	system   *actor.ActorSystem
	journal  *delivery.Journal
	root     *actor.PID
	session  *actor.PID
	uri      string
	chat     string
	log      *chatLog
	seq      int64
}

type harnessOptions struct {
	refuse   *messages.Error
	store    *persistence.Store
	record   *persistence.SessionRecord // restored when set
	workDir  string
	children func(*session.ChatsOf)
	// toolService is the session's Config.ToolService.
	toolService func(session.ToolServiceSpec) *actor.Props
	// agent names the session's agent, run by agentRunner (Config.Agent) with a
	// cancel grace of cancelGrace (Config.AgentCancelGrace).
	agent       string
	agentRunner func(agentmsg.Spec) *actor.Props
	cancelGrace time.Duration
	// bash runs commands in bash under a pseudoterminal (with its integration),
	// with an empty home folder; spares gets every spare shell the session starts
	// (Config.Prestart) once it runs.
	bash   string
	spares chan<- *terminal.Spare
	// liveShells and shellIdle are the session's Config.LiveShells and
	// Config.ShellIdle.
	liveShells int
	shellIdle  time.Duration
	// spareCount is the session's Config.Spares.
	spareCount int
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	journal := delivery.NewJournal(10_000, 64<<20)
	tcfg := terminal.Config{Journal: journal, KillGrace: 200 * time.Millisecond, DefaultShell: "/bin/sh"}
	shell := "/bin/sh"
	if o.bash != "" {
		shell = o.bash
		tcfg.UsePty, tcfg.DefaultShell, tcfg.Home = true, o.bash, t.TempDir()
		t.Setenv("HOME", tcfg.Home) // the bash's startup files are none of the machine's
	}
	tr := &testRoot{cfg: tcfg, refuse: o.refuse, terminals: map[string]*actor.PID{}, chatsOf: o.children}
	root := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return tr }))
	t.Cleanup(func() {
		// Stopping the root stops its sessions and terminals; a shell's actor ends its
		// process when it stops.
		_ = system.Root.StopFuture(root).Wait()
		system.Shutdown()
	})
	uri := "ahp-session:/unit"
	rec := persistence.SessionRecord{URI: uri, Created: time.Now()}
	restored := false
	if o.record != nil {
		rec, restored = *o.record, true
		uri = rec.URI
	}
	if o.workDir != "" {
		rec.WorkingDirectories = []string{messages.FileURI(o.workDir)}
	}
	if o.agent != "" {
		rec.Agent = o.agent
	}
	cfg := session.Config{Journal: journal, Store: o.store, DefaultShell: shell, ToolService: o.toolService,
		Agent: o.agentRunner, AgentCancelGrace: o.cancelGrace, LiveShells: o.liveShells, ShellIdle: o.shellIdle, Spares: o.spareCount}
	if o.spares != nil {
		cfg.Prestart = func(m *terminal.Create) (*terminal.Spare, error) {
			sp, err := terminal.Prestart(tcfg, m)
			if err == nil {
				o.spares <- sp
			}
			return sp, err
		}
	}
	res, err := system.Root.RequestFuture(root, &spawnSession{props: session.NewProps(cfg, rec, restored)}, waitTimeout).Result()
	if err != nil {
		t.Fatalf("spawning the session: %v", err)
	}
	h := &harness{t: t, system: system, journal: journal, root: root, testRoot: tr, session: res.(*actor.PID), uri: uri, chat: uri + "/chat", log: newChatLog()}
	h.subscribe(h.chat)
	return h
}

// subscribe subscribes the harness's log to a channel of the session and returns the
// snapshot's state as JSON.
func (h *harness) subscribe(channelURI string) json.RawMessage {
	h.t.Helper()
	res, err := h.system.Root.RequestFuture(h.session, &channel.Subscribe{Channel: channelURI, Sub: h.log}, waitTimeout).Result()
	if err != nil {
		h.t.Fatalf("subscribe %s: %v", channelURI, err)
	}
	sr := res.(*channel.SubscribeResult)
	if sr.Err != nil {
		h.t.Fatalf("subscribe %s: %s", channelURI, sr.Err.Message)
	}
	raw, err := json.Marshal(sr.Snapshot.State)
	if err != nil {
		h.t.Fatal(err)
	}
	return raw
}

// dispatch sends an action to the session as a client's dispatch.
func (h *harness) dispatch(channelURI string, action map[string]any) {
	h.t.Helper()
	raw, err := json.Marshal(action)
	if err != nil {
		h.t.Fatal(err)
	}
	var a messages.Action
	if err := json.Unmarshal(raw, &a); err != nil {
		h.t.Fatal(err)
	}
	h.seq++
	h.system.Root.Send(h.session, &channel.Dispatch{Channel: channelURI, Action: &a, Raw: raw,
		Origin: messages.Origin{ClientID: "unit", ClientSeq: h.seq}, Sub: h.log, By: "ann"})
}

// say starts a turn on the default chat.
func (h *harness) say(turnID, text string) {
	h.t.Helper()
	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnStarted, "turnId": turnID, "startedAt": "2026-10-01T10:00:00.000Z",
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
}

// queue queues a message on the default chat.
func (h *harness) queue(id, text string) {
	h.t.Helper()
	h.dispatch(h.chat, map[string]any{"type": messages.ChatPendingMessageSet, "kind": messages.PendingQueued, "id": id,
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
}

// seen is one envelope a subscriber was sent.
type seen struct {
	env    messages.Envelope
	typ    string
	fields map[string]any // the action, decoded
}

func (s seen) str(k string) string {
	v, _ := s.fields[k].(string)
	return v
}

// chatLog is a Subscriber that keeps every envelope it is sent, in order.
type chatLog struct {
	mu   sync.Mutex
	all  []seen
	wake chan struct{}
}

func newChatLog() *chatLog { return &chatLog{wake: make(chan struct{}, 1)} }

func (l *chatLog) Deliver(_ string, frame []byte) {
	var n struct {
		Params messages.Envelope `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil {
		return
	}
	s := seen{env: n.Params}
	_ = json.Unmarshal(n.Params.Action, &s.fields)
	s.typ, _ = s.fields["type"].(string)
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// waitFor waits for the first envelope from index from on that ok accepts and
// returns its index; on the deadline it fails, listing what was seen.
func (l *chatLog) waitFor(t *testing.T, from int, what string, ok func(seen) bool) (int, seen) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		l.mu.Lock()
		all := append([]seen(nil), l.all...)
		l.mu.Unlock()
		for i := from; i < len(all); i++ {
			if ok(all[i]) {
				return i, all[i]
			}
		}
		select {
		case <-l.wake:
		case <-deadline:
			var b strings.Builder
			for _, s := range all {
				fmt.Fprintf(&b, "\n  %s %s", s.env.Action, s.env.RejectionReason)
			}
			t.Fatalf("no %s; seen:%s", what, b.String())
		}
	}
}

func isType(typ, turnID string) func(seen) bool {
	return func(s seen) bool {
		return s.env.RejectionReason == "" && s.typ == typ && (turnID == "" || s.str("turnId") == turnID)
	}
}

// completedResult waits for a turn's completed tool call and returns its result.
func (h *harness) completedResult(from int, turnID string) (int, messages.ToolCallResult) {
	h.t.Helper()
	i, s := h.log.waitFor(h.t, from, "chat/toolCallComplete of "+turnID, isType(messages.ChatToolCallComplete, turnID))
	var a messages.ChatToolCallCompleteAction
	if err := json.Unmarshal(s.env.Action, &a); err != nil {
		h.t.Fatal(err)
	}
	h.log.waitFor(h.t, i, "chat/turnComplete of "+turnID, isType(messages.ChatTurnComplete, turnID))
	return i, a.Result
}

func TestTurnWithoutCommandEndsWithNoAgent(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.say("t1", "hello there")
	i, echo := h.log.waitFor(t, 0, "the turnStarted echo", func(s seen) bool { return s.typ == messages.ChatTurnStarted })
	if echo.env.Origin == nil || echo.env.Origin.ClientID != "unit" || echo.env.RejectionReason != "" {
		t.Fatalf("turnStarted echoed as %+v", echo.env)
	}
	_, e := h.log.waitFor(t, i, "chat/error", isType(messages.ChatError, "t1"))
	var errAction struct {
		Part  struct{ Error messages.ErrorInfo }
		Error messages.ErrorInfo
	}
	if err := json.Unmarshal(e.env.Action, &errAction); err != nil {
		t.Fatal(err)
	}
	want := messages.ErrorInfo{ErrorType: "noAgent", Message: "no agent is attached to this session"}
	if errAction.Error != want || errAction.Part.Error != want {
		t.Fatalf("chat/error = %s, want %+v in both shapes", e.env.Action, want)
	}

	// The chat is idle again: its snapshot holds the turn, ended in error.
	var st struct {
		Status     int
		ActiveTurn json.RawMessage
		Turns      []struct {
			ID, State string
			Error     messages.ErrorInfo
		}
	}
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Turns) != 1 || st.Turns[0].ID != "t1" || st.Turns[0].State != messages.TurnStateError || st.Turns[0].Error != want || st.ActiveTurn != nil {
		t.Fatalf("chat after the turn: %+v", st)
	}

	// A lone `!` is somebody typing an exclamation point, not a command.
	h.say("t2", "!  ")
	h.log.waitFor(t, i, "chat/error of t2", isType(messages.ChatError, "t2"))
}

// TestQueuedMessagesStartInOrderWhenIdle queues two messages behind a running
// command: each starts, in order, only once the turn before it ended, and a message
// queued while the chat is idle starts at once.
func TestQueuedMessagesStartInOrderWhenIdle(t *testing.T) {
	work := t.TempDir()
	h := newHarness(t, harnessOptions{workDir: work})
	release := filepath.Join(work, "release")
	h.say("t1", "!while [ ! -e release ]; do sleep 0.05; done; echo released")
	h.log.waitFor(t, 0, "the running command's terminal", isType(messages.ChatToolCallContentChanged, "t1"))
	h.queue("q1", "!echo first-queued")
	h.queue("q2", "second queued, not a command")
	h.log.waitFor(t, 0, "the second queued message", func(s seen) bool { return s.typ == messages.ChatPendingMessageSet && s.str("id") == "q2" })

	// Both wait while t1 runs: nothing has taken them off the queue.
	var st struct{ QueuedMessages []struct{ ID string } }
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.QueuedMessages) != 2 || st.QueuedMessages[0].ID != "q1" || st.QueuedMessages[1].ID != "q2" {
		t.Fatalf("queue while t1 runs: %+v", st.QueuedMessages)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	end, result := h.completedResult(0, "t1")
	if !result.Success || !strings.Contains(result.Content[0].Result.Preview, "released") {
		t.Fatalf("t1's result: %+v", result)
	}

	// q1: removed from the queue, then its turn, naming it, runs its command.
	removed, _ := h.log.waitFor(t, end, "q1 taken off the queue", func(s seen) bool {
		return s.typ == messages.ChatPendingMessageRemoved && s.str("id") == "q1"
	})
	started, first := h.log.waitFor(t, removed, "the turn of q1", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && s.str("queuedMessageId") == "q1"
	})
	firstTurn := first.str("turnId")
	done, result := h.completedResult(started, firstTurn)
	if !result.Success || !strings.Contains(result.Content[0].Result.Preview, "first-queued") {
		t.Fatalf("q1's result: %+v", result)
	}
	// q2 only after q1's turn ended.
	removed, _ = h.log.waitFor(t, done, "q2 taken off the queue", func(s seen) bool {
		return s.typ == messages.ChatPendingMessageRemoved && s.str("id") == "q2"
	})
	_, second := h.log.waitFor(t, removed, "the turn of q2", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && s.str("queuedMessageId") == "q2"
	})
	last, _ := h.log.waitFor(t, removed, "q2's no-agent error", isType(messages.ChatError, second.str("turnId")))

	// Idle now: a message queued goes straight to a turn.
	h.queue("q3", "third")
	h.log.waitFor(t, last, "the turn of q3", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && s.str("queuedMessageId") == "q3"
	})
}

// TestCancelledTurnFreesTheChat cancels a running command's turn: the cancellation
// is taken only for the running turn, and the chat is free for the next message at
// once, while the command is still running.
func TestCancelledTurnFreesTheChat(t *testing.T) {
	work := t.TempDir()
	h := newHarness(t, harnessOptions{workDir: work})
	h.say("t1", "!while [ ! -e never ]; do sleep 0.05; done")
	running, _ := h.log.waitFor(t, 0, "the running command's terminal", isType(messages.ChatToolCallContentChanged, "t1"))
	h.queue("q1", "!echo after-cancel")

	// Only the running turn can be cancelled.
	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnCancelled, "turnId": "not-running", "duration": 1})
	_, rejected := h.log.waitFor(t, running, "the refused cancel", func(s seen) bool { return s.env.RejectionReason != "" })
	if rejected.typ != messages.ChatTurnCancelled || rejected.env.RejectionReason != "no turn with that id is running" {
		t.Fatalf("refused with %q: %s", rejected.env.RejectionReason, rejected.env.Action)
	}

	h.dispatch(h.chat, map[string]any{"type": messages.ChatTurnCancelled, "turnId": "t1", "duration": 5})
	cancelled, _ := h.log.waitFor(t, running, "the cancel's echo", isType(messages.ChatTurnCancelled, "t1"))
	_, next := h.log.waitFor(t, cancelled, "the queued message's turn", func(s seen) bool {
		return s.typ == messages.ChatTurnStarted && s.str("queuedMessageId") == "q1"
	})
	_, result := h.completedResult(cancelled, next.str("turnId"))
	if !result.Success || !strings.Contains(result.Content[0].Result.Preview, "after-cancel") {
		t.Fatalf("the next command's result: %+v", result)
	}

	var st struct {
		Turns []struct {
			ID, State     string
			ResponseParts []struct {
				ToolCall struct{ Status, Reason string }
			}
		}
	}
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Turns) != 2 || st.Turns[0].ID != "t1" || st.Turns[0].State != messages.TurnStateCancelled ||
		st.Turns[0].ResponseParts[0].ToolCall.Reason != "skipped" || st.Turns[1].State != messages.TurnStateComplete {
		t.Fatalf("turns after the cancel: %+v", st.Turns)
	}
}

// TestTerminalThatDoesNotStartFailsTheCall has the root refuse the command's
// terminal: the call fails with the root's reason, names no terminal, and the turn
// ends.
func TestTerminalThatDoesNotStartFailsTheCall(t *testing.T) {
	h := newHarness(t, harnessOptions{refuse: messages.Errorf(messages.CodeInternalError, "No pseudoterminal left")})
	h.say("t1", "!echo never")
	_, result := h.completedResult(0, "t1")
	want := messages.ToolCallResult{Success: false, PastTenseMessage: "Failed to run command", Error: &messages.ToolCallError{Message: "No pseudoterminal left"}}
	if result.Success || result.PastTenseMessage != want.PastTenseMessage || result.Error == nil || *result.Error != *want.Error || result.Content != nil {
		t.Fatalf("result %+v, want %+v", result, want)
	}
}

// TestSessionChannel checks what the session channel shows and takes: its default
// chat, a chat added and removed, and no dispatch from a client.
func TestSessionChannel(t *testing.T) {
	told := make(chan []string, 16)
	h := newHarness(t, harnessOptions{children: func(m *session.ChatsOf) { told <- m.Chats }})
	// waitTold waits for the root to be told the session holds exactly chats.
	waitTold := func(chats ...string) {
		t.Helper()
		deadline := time.After(waitTimeout)
		var last []string
		for {
			select {
			case last = <-told:
				if strings.Join(last, " ") == strings.Join(chats, " ") {
					return
				}
			case <-deadline:
				t.Fatalf("the root was not told of %v; last told %v", chats, last)
			}
		}
	}
	waitTold(h.chat)
	var st struct {
		Provider, Title, Lifecycle, DefaultChat string
		Chats                                   []messages.ChatSummary
	}
	if err := json.Unmarshal(h.subscribe(h.uri), &st); err != nil {
		t.Fatal(err)
	}
	if st.Provider != "termhost" || st.Lifecycle != "ready" || st.DefaultChat != h.chat || len(st.Chats) != 1 || st.Chats[0].Resource != h.chat {
		t.Fatalf("session state: %+v", st)
	}

	res, err := h.system.Root.RequestFuture(h.session, &session.CreateChat{Session: h.uri}, waitTimeout).Result()
	if err != nil || res.(*session.Result).Err != nil {
		t.Fatalf("CreateChat: %v %+v", err, res)
	}
	second := res.(*session.Result).Chat
	waitTold(h.chat, second)
	_, added := h.log.waitFor(t, 0, "session/chatAdded", isType(messages.SessionChatAdded, ""))
	var a messages.SessionChatAddedAction
	if err := json.Unmarshal(added.env.Action, &a); err != nil || a.Summary.Resource != second || a.Summary.Status != messages.SessionStatusIdle {
		t.Fatalf("chatAdded %s: %v", added.env.Action, err)
	}
	res, _ = h.system.Root.RequestFuture(h.session, &session.CreateChat{Session: h.uri, Chat: second}, waitTimeout).Result()
	if r := res.(*session.Result); r.Err == nil || r.Err.Code != messages.CodeAlreadyExists {
		t.Fatalf("a second chat of that name: %+v", r)
	}

	if _, err := h.system.Root.RequestFuture(h.session, &session.DisposeChat{Chat: second}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	_, removed := h.log.waitFor(t, 0, "session/chatRemoved", isType(messages.SessionChatRemoved, ""))
	if removed.str("chat") != second {
		t.Fatalf("chatRemoved %s", removed.env.Action)
	}
	waitTold(h.chat)

	h.dispatch(h.uri, map[string]any{"type": messages.SessionTitleChanged, "title": "mine"})
	_, rejected := h.log.waitFor(t, 0, "the refused rename", func(s seen) bool { return s.env.RejectionReason != "" })
	if rejected.env.RejectionReason != "session/titleChanged is not dispatched by clients on this host" {
		t.Fatalf("refused with %q", rejected.env.RejectionReason)
	}
}

// TestRestoredSessionKeepsItsCommands runs a command with a store, then spawns the
// session again from what was kept, as the root does after a restart: the chat comes
// back with the turn, and the command's terminal opens, exited, with its output.
func TestRestoredSessionKeepsItsCommands(t *testing.T) {
	store, err := persistence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{store: store, workDir: t.TempDir()})
	h.say("t1", "!echo kept-output; (exit 3)")
	_, result := h.completedResult(0, "t1")
	if result.Content[0].Result.ExitCode == nil || *result.Content[0].Result.ExitCode != 3 {
		t.Fatalf("t1's result: %+v", result)
	}
	// A shutdown answers once what must be kept is written.
	if _, err := h.system.Root.RequestFuture(h.session, &channel.Shutdown{}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}

	records, problems := store.Sessions()
	if len(problems) != 0 || len(records) != 1 {
		t.Fatalf("kept sessions: %+v, %v", records, problems)
	}
	again := newHarness(t, harnessOptions{store: store, record: &records[0]})
	var st struct {
		Turns []struct {
			ID            string
			ResponseParts []struct {
				ToolCall struct {
					Status  string
					Content []messages.TerminalContent
				}
			}
		}
	}
	if err := json.Unmarshal(again.subscribe(again.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Turns) != 1 || st.Turns[0].ID != "t1" || st.Turns[0].ResponseParts[0].ToolCall.Status != "completed" {
		t.Fatalf("restored turns: %+v", st.Turns)
	}
	block := st.Turns[0].ResponseParts[0].ToolCall.Content[0]
	var term messages.TerminalState
	if err := json.Unmarshal(again.subscribe(block.Resource), &term); err != nil {
		t.Fatal(err)
	}
	if term.Lifecycle == nil || term.Lifecycle.Status != messages.StatusExited || term.ExitCode == nil || *term.ExitCode != 3 ||
		!strings.Contains(term.Text(), "kept-output") {
		t.Fatalf("the kept terminal: %+v (%q)", term, term.Text())
	}
}
