package agents_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/agents"
	"github.com/termhost/termhost/actors/backendterm"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/messages"
)

// The tests run the runner for real: a scripted ACP agent built from this module
// (internal/scriptagent) as its process, a real root actor making the host
// terminals the agent's commands run in, and a test actor as the runner's parent in
// the session's place, keeping every message of the contract.

const waitTimeout = 20 * time.Second

// scriptAgent is the path of the scripted agent, built once for the test binary.
var scriptAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "termhost-agents-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptAgent = filepath.Join(dir, "scriptagent")
	build := exec.Command("go", "build", "-o", scriptAgent, "./internal/scriptagent")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the scripted agent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testLog is a log that writes into the test while it runs, and nowhere after; an
// Error fails the test.
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		line := strings.TrimSuffix(string(p), "\n")
		l.t.Log(line)
		// Error means a bug or an operator must act (STYLE.md 5): none is expected.
		if strings.Contains(line, "level=ERROR") {
			l.t.Errorf("an error was logged: %s", line)
		}
	}
	return len(p), nil
}

func newLogger(t *testing.T) *slog.Logger {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recorder keeps the contract messages the runner sends its parent, in order, and
// answers its permissions as the test decides.
type recorder struct {
	mu     sync.Mutex
	msgs   []any
	wake   chan struct{}
	decide func(*agentmsg.Permission) string
}

func (r *recorder) add(m any) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *recorder) all() []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// parent stands in for the session: it spawns the runner and records what it is
// sent.
type parent struct {
	props  *actor.Props
	rec    *recorder
	runner chan *actor.PID
}

func (p *parent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.runner <- ctx.Spawn(p.props)
	case *agentmsg.Permission:
		p.rec.add(m)
		if p.rec.decide != nil {
			m.Reply <- p.rec.decide(m)
		}
	case *agentmsg.Actions, *agentmsg.TurnEnded, *agentmsg.Started, *agentmsg.Lost, *agentmsg.Restarted:
		p.rec.add(m)
	}
}

// rootLists is a subscriber of the root that keeps every URI ever on its terminal
// list, and the latest list.
type rootLists struct {
	mu     sync.Mutex
	ever   map[string]bool
	latest []string
	wake   chan struct{}
}

func (l *rootLists) Deliver(_ string, frame []byte) {
	var n struct {
		Params messages.Envelope `json:"params"`
	}
	if json.Unmarshal(frame, &n) != nil {
		return
	}
	var a messages.Action
	if json.Unmarshal(n.Params.Action, &a) != nil || a.Type != messages.RootTerminalsChanged || a.Terminals == nil {
		return
	}
	l.mu.Lock()
	l.latest = l.latest[:0]
	for _, row := range *a.Terminals {
		l.ever[row.Resource] = true
		l.latest = append(l.latest, row.Resource)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// harness is one runner under test.
type harness struct {
	t      *testing.T
	system *actor.ActorSystem
	root   *actor.PID
	parent *actor.PID
	runner *actor.PID
	rec    *recorder
	lists  *rootLists
	dir    string // the session's working directory
	chat   string
	turns  int
}

type harnessOptions struct {
	argv   []string // the agent's argv; default the scripted agent
	agent  string   // the agent the session names; default "script"
	opts   agents.Options
	decide func(*agentmsg.Permission) string
	// agentSessionID is the conversation of an earlier run.
	agentSessionID string
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	log := newLogger(t)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	rootPID := system.Root.Spawn(root.NewProps(root.Options{Home: t.TempDir(), DefaultShell: "/bin/sh", KillGrace: 500 * time.Millisecond, Logger: log},
		delivery.NewJournal(10_000, 64<<20)))
	lists := &rootLists{ever: map[string]bool{}, wake: make(chan struct{}, 1)}
	if _, err := system.Root.RequestFuture(rootPID, &channel.Subscribe{Channel: messages.RootURI, Sub: lists}, waitTimeout).Result(); err != nil {
		t.Fatalf("subscribe to the root: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.argv == nil {
		o.argv = []string{scriptAgent}
	}
	if o.agent == "" {
		o.agent = "script"
	}
	opts := o.opts
	opts.Agents = map[string][]string{"script": o.argv}
	opts.Logger = log
	var writes sync.WaitGroup
	spec := agentmsg.Spec{Session: "ahp-session:/agents-test", Agent: o.agent, AgentSessionID: o.agentSessionID,
		WorkingDirectories: []string{messages.FileURI(dir)}, Root: rootPID,
		Terminals: backendterm.NewTerminals(system, rootPID, nil), Writes: &writes}
	rec := &recorder{wake: make(chan struct{}, 1), decide: o.decide}
	p := &parent{props: agents.NewProps(opts)(spec), rec: rec, runner: make(chan *actor.PID, 1)}
	parentPID := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	h := &harness{t: t, system: system, root: rootPID, parent: parentPID, runner: <-p.runner, rec: rec, lists: lists, dir: dir, chat: "ahp-chat:/agents-test/c1"}
	t.Cleanup(func() {
		h.stop()
		h.noGoroutinesLeft()
		writes.Wait()
		_, _ = system.Root.RequestFuture(rootPID, &channel.Shutdown{}, waitTimeout).Result()
		system.Shutdown()
	})
	return h
}

// stop stops the runner (with its parent) and waits until it has stopped.
func (h *harness) stop() {
	if err := h.system.Root.StopFuture(h.parent).Wait(); err != nil {
		h.t.Errorf("stopping the runner: %v", err)
	}
}

// noGoroutinesLeft fails the test when a goroutine of the runner outlives it. The
// runner's stop waits for them all, but the last of them may still be returning:
// no event says a goroutine is gone, so this polls, under a deadline.
func (h *harness) noGoroutinesLeft() {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var left []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "termhost/actors/agents.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Errorf("goroutines of the runner outlived it:\n%s", strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor waits until the messages recorded satisfy ok, and returns them.
func (h *harness) waitFor(what string, ok func([]any) bool) []any {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		msgs := h.rec.all()
		if ok(msgs) {
			return msgs
		}
		select {
		case <-h.rec.wake:
		case <-deadline:
			h.t.Fatalf("no %s; the runner sent:\n%s", what, dump(msgs))
		}
	}
}

// waitListed waits until the root's terminal list satisfies ok.
func (h *harness) waitListed(what string, ok func([]string) bool) {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		h.lists.mu.Lock()
		latest := slices.Clone(h.lists.latest)
		h.lists.mu.Unlock()
		if ok(latest) {
			return
		}
		select {
		case <-h.lists.wake:
		case <-deadline:
			h.t.Fatalf("the root never listed %s; it lists %q", what, latest)
		}
	}
}

// prompt starts a turn with the script as its text and returns the turn's id.
func (h *harness) prompt(script ...string) string {
	h.turns++
	turn := fmt.Sprintf("turn-%d", h.turns)
	h.system.Root.Send(h.runner, &agentmsg.Prompt{Chat: h.chat, TurnID: turn, Text: strings.Join(script, "\n")})
	return turn
}

// ended waits for the turn's end.
func (h *harness) ended(turn string) *agentmsg.TurnEnded {
	h.t.Helper()
	var end *agentmsg.TurnEnded
	h.waitFor("end of "+turn, func(msgs []any) bool {
		for _, m := range msgs {
			if e, ok := m.(*agentmsg.TurnEnded); ok && e.TurnID == turn {
				end = e
				return true
			}
		}
		return false
	})
	return end
}

// first is the first recorded message of type T, waited for.
func first[T any](h *harness, what string) T {
	h.t.Helper()
	var found T
	h.waitFor(what, func(msgs []any) bool {
		for _, m := range msgs {
			if v, ok := m.(T); ok {
				found = v
				return true
			}
		}
		return false
	})
	return found
}

// actions are the turn's actions as the session gets them, decoded.
func (h *harness) actions(turn string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, m := range h.rec.all() {
		a, ok := m.(*agentmsg.Actions)
		if !ok || a.TurnID != turn {
			continue
		}
		if a.Chat != h.chat {
			h.t.Errorf("actions for chat %q, want %q", a.Chat, h.chat)
		}
		for _, action := range a.Actions {
			raw, err := json.Marshal(action)
			if err != nil {
				h.t.Fatalf("an action of type %T does not encode: %v", action, err)
			}
			var fields map[string]any
			if err := json.Unmarshal(raw, &fields); err != nil {
				h.t.Fatal(err)
			}
			out = append(out, fields)
		}
	}
	return out
}

// chat is the turn as a client sees it: the runner's actions folded into a chat
// whose active turn it is, with the clients' reducer.
func (h *harness) chatTurn(turn string) map[string]any {
	h.t.Helper()
	st := messages.NewChatState(h.chat, "test", "2026-01-01T00:00:00Z")
	if _, err := st.Apply(messages.ChatTurnStartedAction{TurnID: turn, StartedAt: "2026-01-01T00:00:00Z", Message: messages.UserMessage("script")}); err != nil {
		h.t.Fatal(err)
	}
	for _, a := range h.actions(turn) {
		messages.ReduceChat(st, a)
	}
	at, _ := st["activeTurn"].(map[string]any)
	if at == nil {
		h.t.Fatalf("no active turn in %v", st)
	}
	return at
}

// parts are a turn's response parts as a client sees them.
func (h *harness) parts(turn string) []map[string]any {
	var out []map[string]any
	for _, p := range h.chatTurn(turn)["responseParts"].([]any) {
		out = append(out, p.(map[string]any))
	}
	return out
}

// said is the markdown the agent said in a turn, its parts joined with "|".
func (h *harness) said(turn string) string {
	var texts []string
	for _, p := range h.parts(turn) {
		if p["kind"] == "markdown" {
			texts = append(texts, p["content"].(string))
		}
	}
	return strings.Join(texts, "|")
}

// toolCalls are a turn's tool calls as a client sees them.
func (h *harness) toolCalls(turn string) []map[string]any {
	var out []map[string]any
	for _, p := range h.parts(turn) {
		if p["kind"] == "toolCall" {
			out = append(out, p["toolCall"].(map[string]any))
		}
	}
	return out
}

func dump(msgs []any) string {
	var b bytes.Buffer
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %T %+v\n", m, m)
	}
	return b.String()
}

var _ io.Writer = (*testLog)(nil)
