package agents_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/agents"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
)

// TestStreamsWhatTheAgentSaysInOrder: the agent's message chunks reach the session as
// one markdown part that grows with each chunk, its thought as a reasoning part, a
// plan as a part of its own, and a message after them as a new part, in the order the
// agent sent them; the turn ends as the agent ended it, after its actions.
func TestStreamsWhatTheAgentSaysInOrder(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	started := first[*agentmsg.Started](h, "agentmsg.Started")
	if !strings.HasPrefix(started.AgentSessionID, "script-") {
		t.Errorf("agentmsg.Started with id %q, want the agent's", started.AgentSessionID)
	}
	turn := h.prompt("say hello there world", "think pondering deeply", "plan read it | write it", "say done")
	end := h.ended(turn)
	if end.Err != "" || end.StopReason != "end_turn" || end.Chat != h.chat {
		t.Fatalf("turn ended %+v, want end_turn", end)
	}

	var types []string
	for _, a := range h.actions(turn) {
		types = append(types, a["type"].(string))
	}
	want := []string{
		"chat/responsePart", "chat/delta", "chat/delta", // say: three chunks, one part
		"chat/responsePart", "chat/reasoning", // think: two chunks, one part
		"chat/responsePart",               // the plan
		"chat/responsePart", "chat/delta", // say done: "do", "ne"… in chunks
	}
	if got := strings.Join(types, ","); !strings.HasPrefix(got, strings.Join(want[:len(want)-1], ",")) {
		t.Errorf("action types\n got %s\nwant %s…", got, strings.Join(want, ","))
	}

	parts := h.parts(turn)
	var seen []string
	for _, p := range parts {
		seen = append(seen, p["kind"].(string)+":"+p["content"].(string))
	}
	wantParts := []string{"markdown:hello there world", "reasoning:pondering deeply", "markdown:**Plan**\n- [~] read it\n- [ ] write it\n", "markdown:done"}
	if strings.Join(seen, "\n") != strings.Join(wantParts, "\n") {
		t.Errorf("the turn a client sees:\n%q\nwant\n%q", seen, wantParts)
	}
	// Every action of the turn came before its end.
	msgs := h.rec.all()
	endAt := -1
	for i, m := range msgs {
		if m == any(end) {
			endAt = i
		}
	}
	for i, m := range msgs {
		if a, ok := m.(*agentmsg.Actions); ok && a.TurnID == turn && i > endAt {
			t.Errorf("actions after the turn ended: %+v", a)
		}
	}
}

// TestPermissionGrantedThenRefused: the agent's question reaches the session after
// the tool call it is about, with the agent's options; the option the session
// answers with is the agent's outcome.
func TestPermissionGrantedThenRefused(t *testing.T) {
	answers := []string{"allow", "reject"}
	var asked []*agentmsg.Permission
	h := newHarness(t, harnessOptions{decide: func(p *agentmsg.Permission) string {
		asked = append(asked, p)
		return answers[len(asked)-1]
	}})
	turn := h.prompt("ask", "ask")
	if end := h.ended(turn); end.Err != "" || end.StopReason != "end_turn" {
		t.Fatalf("turn ended %+v", end)
	}
	if got := h.said(turn); got != "allowed|refused" {
		t.Errorf("the agent said %q, want allowed then refused", got)
	}
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want 2", len(asked))
	}
	for _, p := range asked {
		if p.Chat != h.chat || p.TurnID != turn || p.Title != "Touch the file" || len(p.Options) != 2 ||
			p.Options[0] != (agentmsg.PermissionOption{ID: "allow", Name: "Allow", Kind: "allow_once"}) ||
			p.Options[1] != (agentmsg.PermissionOption{ID: "reject", Name: "Refuse", Kind: "reject_once"}) {
			t.Errorf("permission %+v", p)
		}
	}
	// Each question comes after the start of the tool call it names.
	msgs := h.rec.all()
	for _, p := range asked {
		startedAt, askedAt := -1, -1
		for i, m := range msgs {
			switch m := m.(type) {
			case *agentmsg.Actions:
				for _, a := range m.Actions {
					if s, ok := a.(messages.ChatToolCallStartAction); ok && s.ToolCallID == p.ToolCallID {
						startedAt = i
					}
				}
			case *agentmsg.Permission:
				if m == p {
					askedAt = i
				}
			}
		}
		if startedAt < 0 || startedAt > askedAt {
			t.Errorf("tool call %s started at message %d, asked about at %d", p.ToolCallID, startedAt, askedAt)
		}
	}
	calls := h.toolCalls(turn)
	if len(calls) != 2 || calls[0]["status"] != "completed" || calls[0]["success"] != true || calls[1]["success"] != false {
		t.Errorf("tool calls %v: want the allowed one succeeded and the refused one failed", calls)
	}
}

// TestRunOpensAHostTerminal: a command the agent runs is a host terminal, listed on
// the root under the tool call's name; the agent reads its output and exit code, and
// the tool call's content names the terminal with how the command ended.
func TestRunOpensAHostTerminal(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	turn := h.prompt("run echo hi", "run false")
	if end := h.ended(turn); end.Err != "" {
		t.Fatalf("turn ended %+v", end)
	}
	if got := h.said(turn); got != "exit 0: hi|exit 1: " {
		t.Errorf("the agent said %q", got)
	}
	calls := h.toolCalls(turn)
	if len(calls) != 2 {
		t.Fatalf("tool calls %v", calls)
	}
	echo := calls[0]
	if echo["status"] != "completed" || echo["success"] != true || echo["toolName"] != "execute" || echo["invocationMessage"] != "Run echo hi" {
		t.Errorf("echo's tool call %v", echo)
	}
	content, _ := echo["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("echo's content %v, want its terminal", echo["content"])
	}
	block := content[0].(map[string]any)
	uri, _ := block["resource"].(string)
	chat, key, ok := toolterm.Parse(uri)
	if block["type"] != "terminal" || !ok || chat != h.chat || key != echo["toolCallId"] || block["title"] != "echo hi" {
		t.Errorf("echo's terminal block %v: want the host terminal named after its tool call", block)
	}
	result, _ := block["result"].(map[string]any)
	if result["exitCode"] != float64(0) || !strings.Contains(result["preview"].(string), "hi") {
		t.Errorf("echo's result %v", result)
	}
	h.lists.mu.Lock()
	listed := h.lists.ever[uri]
	h.lists.mu.Unlock()
	if !listed {
		t.Errorf("%s was never on the root's list", uri)
	}
	if failed := calls[1]; failed["success"] != false {
		t.Errorf("false: tool call %v, want failed", failed)
	}
}

// TestFilesOnlyInTheSessionFolder: the agent reads and writes files in the session's
// folder, a part of a file by line and limit, and is refused anything outside it,
// through a link or not.
func TestFilesOnlyInTheSessionFolder(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	outside := t.TempDir()
	in := filepath.Join(h.dir, "notes.txt")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(h.dir, "link")); err != nil {
		t.Fatal(err)
	}
	turn := h.prompt(
		"read "+in,
		"write "+filepath.Join(h.dir, "sub", "new.txt")+" written",
		"read "+filepath.Join(h.dir, "sub", "new.txt"),
		"read "+filepath.Join(outside, "secret.txt"),
		"read "+filepath.Join(h.dir, "link", "secret.txt"),
		"write "+filepath.Join(h.dir, "link", "x.txt")+" nope",
		"read "+h.dir+"/../"+filepath.Base(outside)+"/secret.txt",
		"read notes.txt",
		"read "+in+" 2 1",
		"read "+in+" 2",
	)
	if end := h.ended(turn); end.Err != "" {
		t.Fatalf("turn ended %+v", end)
	}
	said := strings.Split(h.said(turn), "|")
	if len(said) != 10 {
		t.Fatalf("the agent said %q", said)
	}
	if said[0] != "one\ntwo\nthree\n" || said[1] != "wrote "+filepath.Join(h.dir, "sub", "new.txt") || said[2] != "written" {
		t.Errorf("inside the folder the agent said %q", said[:3])
	}
	for i, s := range said[3:7] {
		if !strings.HasPrefix(s, "error: ") || !strings.Contains(s, "outside this session's folders ("+h.dir+")") {
			t.Errorf("outside the folder (%d) the agent said %q", i, s)
		}
	}
	if !strings.Contains(said[7], "not an absolute path") {
		t.Errorf("a relative path: the agent said %q", said[7])
	}
	if said[8] != "two\n" || said[9] != "two\nthree\n" {
		t.Errorf("reading from line 2 (1 line, then all) the agent said %q", said[8:])
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write through the link landed outside: %v", err)
	}
}

// TestCrashRestartsAndLoadsTheConversation: an agent that can load sessions and
// crashes mid-turn ends the turn with an error, is started again with the same
// conversation (agentmsg.Restarted, no second agentmsg.Started), and takes the next turn.
func TestCrashRestartsAndLoadsTheConversation(t *testing.T) {
	h := newHarness(t, harnessOptions{argv: []string{scriptAgent, "--load"}})
	started := first[*agentmsg.Started](h, "agentmsg.Started")
	turn := h.prompt("say before", "crash")
	end := h.ended(turn)
	if end.Err != "the agent stopped: exit status 1" {
		t.Errorf("the crashed turn ended %+v", end)
	}
	restarted := first[*agentmsg.Restarted](h, "agentmsg.Restarted")
	if restarted.Reason != "it stopped (exit status 1)" {
		t.Errorf("agentmsg.Restarted reason %q", restarted.Reason)
	}
	next := h.prompt("say after")
	if end := h.ended(next); end.Err != "" || h.said(next) != "after" {
		t.Errorf("the turn after the restart ended %+v saying %q", end, h.said(next))
	}
	for _, m := range h.rec.all() {
		if s, ok := m.(*agentmsg.Started); ok && s != started {
			t.Errorf("a second agentmsg.Started %+v", s)
		}
		if l, ok := m.(*agentmsg.Lost); ok {
			t.Errorf("agentmsg.Lost %+v", l)
		}
	}
}

// TestCrashWithoutLoadIsLost: an agent that cannot load its conversation is not
// started again: the turn ends with an error, the agent is lost, and a turn after it
// ends at once with the reason.
func TestCrashWithoutLoadIsLost(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	turn := h.prompt("crash")
	if end := h.ended(turn); end.Err != "the agent stopped: exit status 1" {
		t.Errorf("the crashed turn ended %+v", end)
	}
	lost := first[*agentmsg.Lost](h, "agentmsg.Lost")
	if lost.Reason != "it stopped (exit status 1) and cannot resume the conversation" {
		t.Errorf("agentmsg.Lost reason %q", lost.Reason)
	}
	next := h.prompt("say after")
	if end := h.ended(next); !strings.HasPrefix(end.Err, "the agent is not running: it stopped") {
		t.Errorf("a turn after the agent was lost ended %+v", end)
	}
}

// TestCrashesPastTheLimitAreLost: past RestartLimit crashes within the window, the
// agent is not started again.
func TestCrashesPastTheLimitAreLost(t *testing.T) {
	h := newHarness(t, harnessOptions{argv: []string{scriptAgent, "--load"}, opts: agents.Options{RestartLimit: 1}})
	h.ended(h.prompt("crash"))
	first[*agentmsg.Restarted](h, "agentmsg.Restarted")
	h.ended(h.prompt("crash"))
	lost := first[*agentmsg.Lost](h, "agentmsg.Lost")
	if !strings.Contains(lost.Reason, "2 times within 1m0s") {
		t.Errorf("agentmsg.Lost reason %q", lost.Reason)
	}
}

// TestCancelEndsTheTurnCancelled: a cancel while the agent works ends the turn as
// the agent ends it, cancelled; a queued turn cancelled before it ran ends cancelled
// without reaching the agent.
func TestCancelEndsTheTurnCancelled(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	turn := h.prompt("say zzz", "sleep 20000", "say woke")
	queued := h.prompt("say never")
	h.waitFor("the agent saying zzz", func([]any) bool { return h.said(turn) == "zzz" })
	h.system.Root.Send(h.runner, &agentmsg.Cancel{Chat: h.chat, TurnID: queued})
	if end := h.ended(queued); end.StopReason != "cancelled" || end.Err != "" {
		t.Errorf("the queued turn ended %+v", end)
	}
	h.system.Root.Send(h.runner, &agentmsg.Cancel{Chat: h.chat, TurnID: turn})
	if end := h.ended(turn); end.StopReason != "cancelled" || end.Err != "" {
		t.Errorf("the cancelled turn ended %+v", end)
	}
	if got := h.said(turn); got != "zzz" {
		t.Errorf("the cancelled turn said %q", got)
	}
	if len(h.actions(queued)) != 0 {
		t.Errorf("the queued turn ran: %v", h.actions(queued))
	}
}

// TestCancelAnswersAWaitingPermission: a cancel answers the agent's open question
// cancelled, and the agent ends the turn.
func TestCancelAnswersAWaitingPermission(t *testing.T) {
	h := newHarness(t, harnessOptions{}) // nobody answers
	turn := h.prompt("ask")
	first[*agentmsg.Permission](h, "agentmsg.Permission")
	h.system.Root.Send(h.runner, &agentmsg.Cancel{Chat: h.chat, TurnID: turn})
	if end := h.ended(turn); end.StopReason != "cancelled" {
		t.Errorf("the turn ended %+v", end)
	}
}

// TestUnknownAgentIsLost: a session naming an agent the host does not have gets
// agentmsg.Lost, and its turns end at once.
func TestUnknownAgentIsLost(t *testing.T) {
	h := newHarness(t, harnessOptions{agent: "nope"})
	if lost := first[*agentmsg.Lost](h, "agentmsg.Lost"); !strings.Contains(lost.Reason, `no agent "nope"`) {
		t.Errorf("agentmsg.Lost %+v", lost)
	}
	if end := h.ended(h.prompt("say hi")); end.Err == "" {
		t.Errorf("a turn for no agent ended %+v", end)
	}
}

// TestStopEndsTheAgentAndItsTerminals: stopping the runner mid-command ends the
// agent's process and releases the terminal it left open.
func TestStopEndsTheAgentAndItsTerminals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	turn := h.prompt("pid", "run sleep 60")
	h.waitFor("the agent's terminal in its tool call", func([]any) bool {
		calls := h.toolCalls(turn)
		return len(calls) == 1 && calls[0]["content"] != nil
	})
	h.waitListed("the agent's terminal", func(uris []string) bool { return len(uris) == 1 })
	pid, err := strconv.Atoi(h.said(turn))
	if err != nil {
		t.Fatalf("the agent said %q, want its pid", h.said(turn))
	}
	h.stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the agent (pid %d) is still there after the runner stopped: %v", pid, err)
	}
	h.waitListed("no terminal", func(uris []string) bool { return len(uris) == 0 })
}

// TestMCPServerOffered: an agent that takes MCP over HTTP is offered the host's MCP
// server for the session, with its headers, and reaches it.
func TestMCPServerOffered(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type bashIn struct {
		Command string `json:"command"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "bash", Description: "runs a command"},
		func(_ context.Context, req *mcp.CallToolRequest, in bashIn) (*mcp.CallToolResult, any, error) {
			text := "ran " + in.Command + " for " + req.Extra.Header.Get("Authorization")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	var asked string
	h := newHarness(t, harnessOptions{opts: agents.Options{MCP: func(s string) (string, map[string]string, bool) {
		asked = s
		return srv.URL, map[string]string{"Authorization": "Bearer tkn"}, true
	}}})
	turn := h.prompt("mcp bash echo hi")
	if end := h.ended(turn); end.Err != "" {
		t.Fatalf("turn ended %+v", end)
	}
	if got := h.said(turn); got != "ran echo hi for Bearer tkn" || asked != "ahp-session:/agents-test" {
		t.Errorf("the agent said %q (MCP asked for %q)", got, asked)
	}
}

// TestResumesAnEarlierConversation: with the id of an earlier run's conversation, an
// agent that can load sessions loads it; one that cannot starts a new one.
func TestResumesAnEarlierConversation(t *testing.T) {
	t.Run("load", func(t *testing.T) {
		h := newHarness(t, harnessOptions{argv: []string{scriptAgent, "--load"}, agentSessionID: "earlier-1"})
		if started := first[*agentmsg.Started](h, "agentmsg.Started"); started.AgentSessionID != "earlier-1" {
			t.Errorf("an agent that loads sessions started %+v, want the earlier conversation", started)
		}
	})
	t.Run("new", func(t *testing.T) {
		h := newHarness(t, harnessOptions{agentSessionID: "earlier-1"})
		if started := first[*agentmsg.Started](h, "agentmsg.Started"); started.AgentSessionID == "earlier-1" || started.AgentSessionID == "" {
			t.Errorf("an agent that cannot load sessions started %+v, want a new conversation", started)
		}
	})
}

// TestAgentThatCannotStartIsLost: a program that is not there leaves the agent lost,
// saying why.
func TestAgentThatCannotStartIsLost(t *testing.T) {
	h := newHarness(t, harnessOptions{argv: []string{"/nonexistent/agent"}})
	if lost := first[*agentmsg.Lost](h, "agentmsg.Lost"); !strings.Contains(lost.Reason, "could not start") || !strings.Contains(lost.Reason, "/nonexistent/agent") {
		t.Errorf("agentmsg.Lost %+v", lost)
	}
}
