package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
	"github.com/termhost/termhost/server"
)

// scriptAgentBinary is the scripted ACP agent (actors/agents/internal/scriptagent),
// built once for this test binary into the home folder TestMain made (and removes),
// with the go command's own HOME for its caches.
var scriptAgentBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(os.Getenv("HOME"), "scriptagent-bin", "scriptagent")
	cmd := exec.Command("go", "build", "-o", bin, "../actors/agents/internal/scriptagent")
	if realHome != "" {
		cmd.Env = append(os.Environ(), "HOME="+realHome)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build scriptagent: %v\n%s", err, out)
	}
	return bin, nil
})

// The agents an agent host runs: the scripted agent without session/load (a crash
// loses it) and with it (a crash restarts it, resuming the conversation).
const (
	agentPlain = "script"
	agentLoad  = "script-load"
)

// agentHost serves a host whose agents are the scripted agent's two kinds.
func agentHost(t *testing.T, opts ...hostOption) *testHost {
	t.Helper()
	return agentHostIn(t, t.TempDir(), opts...)
}

func agentHostIn(t *testing.T, dir string, opts ...hostOption) *testHost {
	t.Helper()
	bin, err := scriptAgentBinary()
	if err != nil {
		t.Fatal(err)
	}
	withAgents := func(c *server.Config) {
		c.Agents = map[string][]string{agentPlain: {bin}, agentLoad: {bin, "--load"}}
	}
	return startHostIn(t, dir, "127.0.0.1:0", append([]hostOption{withAgents}, opts...)...)
}

// openAgentSession creates a session with provider working in dir and subscribes to
// its default chat.
func (c *conn) openAgentSession(uri, dir, provider string) string {
	c.t.Helper()
	raw := c.mustRequest("createSession", map[string]any{"channel": uri, "provider": provider, "workingDirectories": []string{"file://" + dir}})
	var r struct{ Chat string }
	_ = json.Unmarshal(raw, &r)
	if r.Chat == "" {
		c.t.Fatalf("createSession answered %s", raw)
	}
	if _, err := c.Subscribe(c.ctx(), r.Chat); err != nil {
		c.t.Fatalf("subscribe to the chat: %v", err)
	}
	return r.Chat
}

// turnEnd waits for the end of a turn: chat/turnComplete, turnCancelled or error.
func (c *conn) turnEnd(chat, turnID string) *client.Envelope {
	c.t.Helper()
	n := c.waitFor("the end of turn "+turnID, func(n *client.Notification) bool {
		e := n.Envelope
		if e == nil || e.Channel != chat || e.RejectionReason != "" {
			return false
		}
		switch e.Type {
		case "chat/turnComplete", "chat/turnCancelled", "chat/error":
			var a struct{ TurnID string }
			_ = json.Unmarshal(e.Action, &a)
			return a.TurnID == turnID
		}
		return false
	})
	return n.Envelope
}

// turnText is what the agent streamed into a turn as parts of kind (markdown or
// reasoning), read from the actions as a client folds them: each part's start, then
// the deltas naming it, parts joined with "|".
func (c *conn) turnText(chat, turnID, kind string) string {
	var order []string
	parts := map[string]*strings.Builder{}
	appendTo := map[string]string{"markdown": "chat/delta", "reasoning": "chat/reasoning"}[kind]
	for _, n := range c.seen {
		e := n.Envelope
		if e == nil || e.Channel != chat || e.RejectionReason != "" {
			continue
		}
		var a struct {
			TurnID, PartID, Content string
			Part                    *struct{ Kind, ID, Content string }
		}
		_ = json.Unmarshal(e.Action, &a)
		if a.TurnID != turnID {
			continue
		}
		switch {
		case e.Type == "chat/responsePart" && a.Part != nil && a.Part.Kind == kind:
			parts[a.Part.ID] = &strings.Builder{}
			parts[a.Part.ID].WriteString(a.Part.Content)
			order = append(order, a.Part.ID)
		case e.Type == appendTo && parts[a.PartID] != nil:
			parts[a.PartID].WriteString(a.Content)
		}
	}
	out := make([]string, len(order))
	for i, id := range order {
		out[i] = parts[id].String()
	}
	return strings.Join(out, "|")
}

// waitSaid waits until the agent's markdown in a turn contains want.
func (c *conn) waitSaid(chat, turnID, want string) string {
	c.t.Helper()
	if s := c.turnText(chat, turnID, "markdown"); strings.Contains(s, want) {
		return s
	}
	c.waitFor(fmt.Sprintf("the agent saying %q in %s", want, turnID), func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == chat && strings.Contains(c.turnText(chat, turnID, "markdown"), want)
	})
	return c.turnText(chat, turnID, "markdown")
}

// script starts a turn whose text is the scripted agent's commands, one a line.
func (c *conn) script(chat string, lines ...string) string {
	return c.say(chat, strings.Join(lines, "\n"))
}

// TestAgentsListedAndChosenByProvider: initialize lists the host's agents on root
// state as AgentInfo; createSession takes one by its provider id, refuses one that is
// not there (ProviderNotFound), and without one makes a session whose turns still
// end with "no agent is attached to this session".
func TestAgentsListedAndChosenByProvider(t *testing.T) {
	h := agentHost(t)
	c := h.dialRaw(h.owner)
	c.clientID = "picker"
	res, err := c.Initialize(c.ctx(), "picker", messages.RootURI)
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Agents []struct {
			Provider, DisplayName, Description string
			Models                             []any
		}
	}
	if err := json.Unmarshal(res.Snapshots[0].State, &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Agents) != 2 || root.Agents[0].Provider != agentPlain || root.Agents[1].Provider != agentLoad ||
		root.Agents[0].DisplayName == "" || root.Agents[0].Description == "" || root.Agents[0].Models == nil {
		t.Fatalf("root state's agents: %s", res.Snapshots[0].State)
	}
	if strings.Contains(string(res.Snapshots[0].State), "--load") {
		t.Fatalf("root state shows an agent's command line: %s", res.Snapshots[0].State)
	}
	if v, ok := schematestLoad(t); ok {
		if err := v.Validate("RootState", res.Snapshots[0].State); err != nil {
			t.Errorf("root state: %v", err)
		}
	}

	_, err = c.request("createSession", map[string]any{"channel": "ahp-session:/nope", "provider": "nobody-runs-this"})
	if e := rpcError(t, err, -32002); !strings.Contains(e.Message, "nobody-runs-this") {
		t.Fatalf("an unknown provider: %q", e.Message)
	}
	var listed struct{ Items []any }
	_ = json.Unmarshal(c.mustRequest("listSessions", map[string]any{}), &listed)
	if len(listed.Items) != 0 {
		t.Fatalf("a refused session was made: %+v", listed)
	}

	plain := c.openSession("ahp-session:/no-agent", t.TempDir())
	turn := c.say(plain, "hello")
	if end := c.turnEnd(plain, turn); end.Type != "chat/error" || !strings.Contains(string(end.Action), "no agent is attached to this session") {
		t.Fatalf("a session without an agent ended the turn with %s", end.Action)
	}
	hostOwn := c.openAgentSession("ahp-session:/termhost-provider", t.TempDir(), "termhost")
	turn = c.say(hostOwn, "hello")
	if end := c.turnEnd(hostOwn, turn); end.Type != "chat/error" || !strings.Contains(string(end.Action), "no agent is attached") {
		t.Fatalf("provider termhost ended the turn with %s", end.Action)
	}
}

// schematestLoad loads the AHP schemas where they are, without skipping the test.
func schematestLoad(t *testing.T) (*schematest.Validator, bool) {
	dir, ok := schematest.FindAHPDir()
	if !ok {
		return nil, false
	}
	v, err := schematest.LoadDir(filepath.Join(dir, "schema"))
	if err != nil {
		t.Fatalf("loading the schemas: %v", err)
	}
	return v, true
}

// TestAgentStreamsTextAndThoughtInOrder: what the agent streams reaches the chat in
// order, its text as markdown and its thought as reasoning, and the turn completes;
// every frame matches the schemas.
func TestAgentStreamsTextAndThoughtInOrder(t *testing.T) {
	h := agentHost(t)
	c := h.dial("reader")
	chat := c.openAgentSession("ahp-session:/stream", t.TempDir(), agentPlain)
	turn := c.script(chat, "think weighing the options carefully", "say the quick brown fox jumps", "say over the lazy dog")
	if end := c.turnEnd(chat, turn); end.Type != "chat/turnComplete" {
		t.Fatalf("the turn ended with %s", end.Action)
	}
	if got := c.turnText(chat, turn, "reasoning"); got != "weighing the options carefully" {
		t.Fatalf("the thought: %q", got)
	}
	if got := c.turnText(chat, turn, "markdown"); got != "the quick brown fox jumps|over the lazy dog" {
		t.Fatalf("the text: %q", got)
	}
	// The text came in parts: more than one delta.
	deltas := 0
	for _, n := range c.seen {
		if n.Envelope != nil && n.Envelope.Type == "chat/delta" {
			deltas++
		}
	}
	if deltas < 2 {
		t.Fatalf("the text was not streamed: %d deltas", deltas)
	}
	snap, err := c.Subscribe(c.ctx(), chat)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Turns []struct {
			State         string
			ResponseParts []struct{ Kind, Content string }
		}
	}
	_ = json.Unmarshal(snap.State, &st)
	if len(st.Turns) != 1 || st.Turns[0].State != "complete" || len(st.Turns[0].ResponseParts) != 3 ||
		st.Turns[0].ResponseParts[0].Kind != "reasoning" || st.Turns[0].ResponseParts[2].Content != "over the lazy dog" {
		t.Fatalf("the chat's snapshot: %s", snap.State)
	}
	if v, ok := schematestLoad(t); ok {
		if err := v.Validate("ChatState", snap.State); err != nil {
			t.Errorf("chat state: %v", err)
		}
		for _, n := range c.seen {
			if n.Method == "action" {
				if err := v.Validate("ActionEnvelope", n.Params); err != nil {
					t.Errorf("%v\n%s", err, truncate(string(n.Params), 400))
				}
			}
		}
	}
}

// TestAgentPermissionAskedAndAnswered: the agent's question is a tool call awaiting
// confirmation with the agent's options; a guest's confirmation is refused with a
// reason, a member's allows it, and a member's refusal refuses it.
func TestAgentPermissionAskedAndAnswered(t *testing.T) {
	h := agentHost(t)
	owner := h.dial("owner")
	chat := owner.openAgentSession("ahp-session:/ask", t.TempDir(), agentPlain)
	member, _ := h.dialAs(t, h.addUser("mia", auth.RoleMember), "mia")
	if _, err := member.Subscribe(member.ctx(), chat); err != nil {
		t.Fatal(err)
	}
	guest, _ := h.dialAs(t, h.addUser("gus", auth.RoleGuest), "gus")

	// The question is the call's toolCallReady without `confirmed`.
	question := func(turn string) *client.Envelope {
		t.Helper()
		return member.waitFor("the question of "+turn, func(n *client.Notification) bool {
			e := n.Envelope
			return e != nil && e.Channel == chat && e.Type == "chat/toolCallReady" && strings.Contains(string(e.Action), turn) &&
				!strings.Contains(string(e.Action), `"confirmed"`)
		}).Envelope
	}
	turn := owner.script(chat, "ask")
	ready := question(turn)
	var q struct {
		TurnID, ToolCallID, InvocationMessage string
		Confirmed                             *string
		Options                               []struct{ ID, Label, Kind string }
	}
	_ = json.Unmarshal(ready.Action, &q)
	if q.TurnID != turn || q.Confirmed != nil || q.InvocationMessage != "Touch the file" || len(q.Options) != 2 ||
		q.Options[0].ID != "allow" || q.Options[0].Kind != "approve" || q.Options[1].ID != "reject" || q.Options[1].Kind != "deny" {
		t.Fatalf("the question: %s", ready.Action)
	}

	confirm := map[string]any{"type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": q.ToolCallID, "approved": true,
		"confirmed": "user-action", "selectedOptionId": "allow"}
	seq := guest.dispatch(chat, confirm)
	refused := guest.waitFor("the guest's refusal", envelopeFrom(chat, "gus", seq)).Envelope
	if refused.RejectionReason != refusalFor("gus", auth.GrantChatSend) {
		t.Fatalf("the guest's confirmation: %+v", refused)
	}
	seq = member.dispatch(chat, confirm)
	if e := member.waitFor("the member's confirmation", envelopeFrom(chat, "mia", seq)).Envelope; e.RejectionReason != "" {
		t.Fatalf("the member's confirmation was refused: %s", e.RejectionReason)
	}
	owner.waitSaid(chat, turn, "allowed")
	if end := owner.turnEnd(chat, turn); end.Type != "chat/turnComplete" {
		t.Fatalf("the turn ended with %s", end.Action)
	}

	turn = owner.script(chat, "ask")
	ready = question(turn)
	_ = json.Unmarshal(ready.Action, &q)
	member.dispatch(chat, map[string]any{"type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": q.ToolCallID, "approved": false, "reason": "denied"})
	owner.waitSaid(chat, turn, "refused")
	owner.turnEnd(chat, turn)
	if v, ok := schematestLoad(t); ok {
		for _, n := range member.seen {
			if n.Method == "action" {
				if err := v.Validate("ActionEnvelope", n.Params); err != nil {
					t.Errorf("%v\n%s", err, truncate(string(n.Params), 400))
				}
			}
		}
		snap, err := owner.Subscribe(owner.ctx(), chat)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate("ChatState", snap.State); err != nil {
			t.Errorf("chat state: %v", err)
		}
	}
}

// TestAgentCommandRunsInAHostTerminal: a command the agent runs is a host terminal on
// the root list while it runs, claimed by the session and chat, typeable by a person;
// released, it goes off the list and still opens, exited, with its output.
func TestAgentCommandRunsInAHostTerminal(t *testing.T) {
	h := agentHost(t)
	c := h.dial("watcher")
	work := t.TempDir()
	chat := c.openAgentSession("ahp-session:/run", work, agentPlain)
	turn := c.script(chat, "run head -n1")
	rows := waitRoot(c, func(r []messages.TerminalInfo) bool {
		for _, row := range r {
			if row.Claim.Kind == "session" && row.Claim.Chat == chat {
				return true
			}
		}
		return false
	})
	var uri string
	for _, row := range rows {
		if row.Claim.Chat == chat {
			uri = row.Resource
			if row.Claim.Session != "ahp-session:/run" || row.Claim.TurnID != turn || row.Lifecycle == nil || row.Lifecycle.Status != "running" {
				t.Fatalf("the agent's terminal's row: %+v", row)
			}
		}
	}
	if _, err := c.Subscribe(c.ctx(), uri); err != nil {
		t.Fatal(err)
	}
	c.input(uri, "typed by a person\n")
	if end := c.turnEnd(chat, turn); end.Type != "chat/turnComplete" {
		t.Fatalf("the turn ended with %s", end.Action)
	}
	if said := c.turnText(chat, turn, "markdown"); said != "exit 0: typed by a person" {
		t.Fatalf("the agent said %q", said)
	}
	waitRoot(c, func(r []messages.TerminalInfo) bool { return findRow(r, uri) == nil })
	// The chat's tool call names the terminal, which opens exited with what it printed.
	chatSnap, err := c.Subscribe(c.ctx(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if uris := commandTerminals(t, chatSnap.State); len(uris) == 0 || uris[len(uris)-1] != uri {
		t.Fatalf("the tool call names %v, want %s", uris, uri)
	}
	kept, err := c.Subscribe(c.ctx(), uri)
	if err != nil {
		t.Fatalf("the released terminal: %v", err)
	}
	st, text := terminalText(t, kept)
	if st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusExited || !strings.Contains(text, "typed by a person") {
		t.Fatalf("the released terminal opens as %s", kept.State)
	}
}

// TestAgentCrash: a crashed agent that can resume its conversation is restarted and
// the chat says so; one that cannot is lost, the chat says it is gone, and later
// turns end with that error.
func TestAgentCrash(t *testing.T) {
	h := agentHost(t)
	c := h.dial("crash")
	notice := func(chat, want string) {
		t.Helper()
		c.waitFor("the chat saying "+want, func(n *client.Notification) bool {
			e := n.Envelope
			if e == nil || e.Channel != chat || e.Type != "chat/turnStarted" {
				return false
			}
			var a struct {
				Message struct {
					Text   string
					Origin struct{ Kind string }
				}
			}
			_ = json.Unmarshal(e.Action, &a)
			return a.Message.Origin.Kind == "systemNotification" && strings.Contains(a.Message.Text, want)
		})
	}
	t.Run("restarted", func(t *testing.T) {
		chat := c.openAgentSession("ahp-session:/crash-load", t.TempDir(), agentLoad)
		turn := c.script(chat, "say about to crash", "crash")
		if end := c.turnEnd(chat, turn); end.Type != "chat/error" {
			t.Fatalf("the crashed turn ended with %s", end.Action)
		}
		notice(chat, "restarted")
		again := c.script(chat, "say back again")
		c.waitSaid(chat, again, "back again")
		if end := c.turnEnd(chat, again); end.Type != "chat/turnComplete" {
			t.Fatalf("the turn after the restart ended with %s", end.Action)
		}
	})
	t.Run("lost", func(t *testing.T) {
		chat := c.openAgentSession("ahp-session:/crash-plain", t.TempDir(), agentPlain)
		turn := c.script(chat, "crash")
		if end := c.turnEnd(chat, turn); end.Type != "chat/error" {
			t.Fatalf("the crashed turn ended with %s", end.Action)
		}
		notice(chat, "is gone")
		again := c.script(chat, "say hello?")
		end := c.turnEnd(chat, again)
		if end.Type != "chat/error" || !strings.Contains(string(end.Action), "is gone") {
			t.Fatalf("a turn after the agent was lost ended with %s", end.Action)
		}
	})
	if v, ok := schematestLoad(t); ok {
		for _, n := range c.seen {
			if n.Method == "action" {
				if err := v.Validate("ActionEnvelope", n.Params); err != nil {
					t.Errorf("%v\n%s", err, truncate(string(n.Params), 400))
				}
			}
		}
	}
}

// TestAgentCancelStopsASleepingTurn: a client's cancel reaches the agent, which ends
// its turn as cancelled; the cancel is echoed as the client's, and nothing after it
// in the script ran.
func TestAgentCancelStopsASleepingTurn(t *testing.T) {
	h := agentHost(t)
	c := h.dial("canceller")
	chat := c.openAgentSession("ahp-session:/cancel", t.TempDir(), agentPlain)
	turn := c.script(chat, "say going to sleep", "sleep 60000", "say woke up")
	c.waitSaid(chat, turn, "going to sleep")
	seq := c.dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": turn, "duration": 10})
	echo := c.waitFor("the cancel's echo", envelopeFrom(chat, "canceller", seq)).Envelope
	if echo.RejectionReason != "" || echo.Type != "chat/turnCancelled" {
		t.Fatalf("the cancel: %+v", echo)
	}
	if said := c.turnText(chat, turn, "markdown"); strings.Contains(said, "woke up") {
		t.Fatalf("the script went on after the cancel: %q", said)
	}
	next := c.script(chat, "say awake")
	c.waitSaid(chat, next, "awake")
}

// TestAgentReadsOnlyInsideItsFolder: a file below the session's folder is read; one
// outside it is refused and the agent says why.
func TestAgentReadsOnlyInsideItsFolder(t *testing.T) {
	h := agentHost(t)
	c := h.dial("reader")
	work, elsewhere := t.TempDir(), t.TempDir()
	inside, outside := filepath.Join(work, "notes.txt"), filepath.Join(elsewhere, "secret.txt")
	if err := os.WriteFile(inside, []byte("inside-text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("secret-text"), 0o600); err != nil {
		t.Fatal(err)
	}
	chat := c.openAgentSession("ahp-session:/read", work, agentPlain)
	turn := c.script(chat, "read "+inside, "read "+outside)
	c.turnEnd(chat, turn)
	said := c.turnText(chat, turn, "markdown")
	parts := strings.Split(said, "|")
	if len(parts) != 2 || parts[0] != "inside-text" || !strings.HasPrefix(parts[1], "error: ") || strings.Contains(said, "secret-text") {
		t.Fatalf("the agent said %q", said)
	}
}

// TestAgentWokenByBackgroundWork: a background command of the session's agent shells
// ends, and the wake is a turn the agent takes: the scripted agent answers its text.
func TestAgentWokenByBackgroundWork(t *testing.T) {
	h := agentHost(t)
	c := h.dial("waker")
	chat := c.openAgentSession("ahp-session:/wake", t.TempDir(), agentPlain)
	tools := h.mcpAgent(h.owner, "session=ahp-session:/wake&tools=host")
	bg := tools.call("bash", map[string]any{"command": "sleep 0.2; exit 3", "mode": "async"})
	if bg.isError {
		t.Fatalf("async bash: %s", bg.text)
	}
	started := c.waitFor("the wake's turn", func(n *client.Notification) bool {
		e := n.Envelope
		return e != nil && e.Channel == chat && e.Type == "chat/turnStarted" && strings.Contains(string(e.Action), "systemNotification")
	}).Envelope
	var a struct{ TurnID string }
	_ = json.Unmarshal(started.Action, &a)
	// The scripted agent takes each line as a command: the wake's first word is none.
	said := c.waitSaid(chat, a.TurnID, "unknown command")
	if end := c.turnEnd(chat, a.TurnID); end.Type != "chat/turnComplete" {
		t.Fatalf("the wake's turn ended with %s (the agent said %q)", end.Action, said)
	}
}

// TestAgentOfferedTheHostsTools: with root config's enableCustomTerminalTool on, an
// agent is offered this host's /mcp for its session with a token of its own, which
// reaches the agent shell tools and nothing else; with it off (the default), no MCP
// server is offered.
func TestAgentOfferedTheHostsTools(t *testing.T) {
	h := agentHost(t)
	c := h.dial("configurer")
	off := c.openAgentSession("ahp-session:/tools-off", t.TempDir(), agentPlain)
	turn := c.script(off, "mcp bash echo not-offered")
	c.turnEnd(off, turn)
	if said := c.turnText(off, turn, "markdown"); said != "error: no MCP server" {
		t.Fatalf("without the config the agent said %q", said)
	}

	c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"enableCustomTerminalTool": true}})
	c.waitAction(messages.RootURI, "root/configChanged")
	on := c.openAgentSession("ahp-session:/tools-on", t.TempDir(), agentPlain)
	turn = c.script(on, "mcp bash echo via-$((40+2))")
	c.turnEnd(on, turn)
	if said := c.turnText(on, turn, "markdown"); !strings.Contains(said, "via-42") {
		t.Fatalf("with the config the agent said %q", said)
	}

	// The token is for that session alone.
	url, headers, ok := h.srv.AgentMCP("ahp-session:/tools-on")
	if !ok || !strings.Contains(url, "/mcp?") || !strings.Contains(url, "tools=host") || !strings.HasPrefix(headers["Authorization"], "Bearer ") {
		t.Fatalf("offered %q %v %v", url, headers, ok)
	}
	other := strings.Replace(url, "tools-on", "tools-off", 1)
	req, _ := http.NewRequest(http.MethodPost, other, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", headers["Authorization"])
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("the token on another session: %s", res.Status)
	}
	// It signs nothing else in: on the WebSocket it is nobody's (a loopback host takes
	// nobody, who may drive nothing).
	nobody := h.dialRaw(strings.TrimPrefix(headers["Authorization"], "Bearer "))
	if _, err := nobody.Initialize(nobody.ctx(), "agent-token"); err != nil {
		t.Fatal(err)
	}
	_, err = nobody.request("createSession", map[string]any{"channel": "ahp-session:/sneaky"})
	if e := rpcError(t, err, messages.CodePermissionDenied); e.Message != refusalFor("", auth.GrantChatSend) {
		t.Fatalf("the token on the WebSocket: %q", e.Message)
	}
}

// TestAgentSessionResumedAfterRestart: the agent's id for its conversation is kept;
// after the host restarts, the session is there and its agent takes turns again,
// resuming that conversation.
func TestAgentSessionResumedAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := agentHostIn(t, dir)
	c := h.dial("first")
	chat := c.openAgentSession("ahp-session:/resume", t.TempDir(), agentLoad)
	turn := c.script(chat, "say before the restart")
	c.turnEnd(chat, turn)
	// The shutdown waits for the session's writes: the record is whole once it is done.
	h.stop()
	recs, problems := h.kept.Sessions()
	var kept bool
	for _, r := range recs {
		kept = kept || r.URI == "ahp-session:/resume" && r.Agent == agentLoad && r.AgentSessionID != ""
	}
	if !kept || len(problems) > 0 {
		t.Fatalf("the agent's conversation id was not kept: %+v %v", recs, problems)
	}

	h2 := agentHostIn(t, dir)
	c2 := h2.dial("second")
	if _, err := c2.Subscribe(c2.ctx(), chat); err != nil {
		t.Fatalf("the session after the restart: %v", err)
	}
	var sess struct{ Provider string }
	snap, err := c2.Subscribe(c2.ctx(), "ahp-session:/resume")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(snap.State, &sess)
	if sess.Provider != agentLoad {
		t.Fatalf("the restored session's provider: %s", snap.State)
	}
	again := c2.script(chat, "say after the restart")
	c2.waitSaid(chat, again, "after the restart")
	if end := c2.turnEnd(chat, again); end.Type != "chat/turnComplete" {
		t.Fatalf("the turn after the restart ended with %s", end.Action)
	}
}
