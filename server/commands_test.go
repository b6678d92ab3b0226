package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// openSession creates a session working in dir and subscribes to its default chat.
func (c *conn) openSession(uri, dir string) string {
	c.t.Helper()
	raw := c.mustRequest("createSession", map[string]any{"channel": uri, "workingDirectories": []string{"file://" + dir}})
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

var turnSeq int

// say starts a turn with text and returns its id.
func (c *conn) say(chat, text string) string {
	turnSeq++
	id := fmt.Sprintf("t%d-%d", turnSeq, time.Now().UnixNano())
	c.dispatch(chat, map[string]any{"type": "chat/turnStarted", "turnId": id, "startedAt": time.Now().UTC().Format(time.RFC3339),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	return id
}

type completedCall struct {
	Success          bool
	PastTenseMessage string
	Error            *struct{ Message string }
	Content          []struct {
		Type     string
		Resource string
		Title    string
		IsPty    bool
		Result   *struct {
			ExitCode  *int
			Preview   string
			Truncated bool
		}
	}
}

// waitCompleted waits for a turn's chat/toolCallComplete and its turnComplete.
func (c *conn) waitCompleted(chat, turnID string) completedCall {
	c.t.Helper()
	var call completedCall
	c.waitFor("toolCallComplete of "+turnID, func(n *client.Notification) bool {
		if n.Envelope == nil || n.Envelope.Channel != chat || n.Envelope.Type != "chat/toolCallComplete" {
			return false
		}
		var a struct {
			TurnID string
			Result json.RawMessage
		}
		_ = json.Unmarshal(n.Envelope.Action, &a)
		if a.TurnID != turnID {
			return false
		}
		if err := json.Unmarshal(a.Result, &call); err != nil {
			c.t.Fatalf("result %s: %v", a.Result, err)
		}
		return true
	})
	c.waitFor("turnComplete of "+turnID, func(n *client.Notification) bool {
		if n.Envelope == nil || n.Envelope.Channel != chat || n.Envelope.Type != "chat/turnComplete" {
			return false
		}
		var a struct{ TurnID string }
		_ = json.Unmarshal(n.Envelope.Action, &a)
		return a.TurnID == turnID
	})
	return call
}

func terminalText(t *testing.T, snap *client.RawSnapshot) (*messages.TerminalState, string) {
	t.Helper()
	st, err := snap.TerminalState()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range st.Content {
		b.WriteString(p.Text())
	}
	return st, b.String()
}

func TestBangCommandRanAndIsKept(t *testing.T) {
	dir := t.TempDir()
	work := t.TempDir()
	h := startHostIn(t, dir, "127.0.0.1:0")
	c := h.dial("bang")
	chat := c.openSession("ahp-session:/bang", work)
	turn := c.say(chat, "!echo ran")
	call := c.waitCompleted(chat, turn)
	if !call.Success || call.PastTenseMessage != "Ran command" || len(call.Content) != 1 {
		t.Fatalf("completed call %+v", call)
	}
	block := call.Content[0]
	if block.Type != "terminal" || block.Result == nil || *block.Result.ExitCode != 0 || !strings.Contains(block.Result.Preview, "ran") || strings.Contains(block.Result.Preview, "SENTINEL") {
		t.Fatalf("terminal block %+v", block)
	}
	// The content named the terminal while it ran.
	c.waitFor("toolCallContentChanged", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/toolCallContentChanged" && strings.Contains(string(n.Envelope.Action), block.Resource)
	})

	// Live: the shell sits at its prompt, claimed by the session and the call.
	snap, err := c.Subscribe(c.ctx(), block.Resource)
	if err != nil {
		t.Fatal(err)
	}
	st, text := terminalText(t, snap)
	if st.Lifecycle.Status != "running" || st.Claim.Kind != "session" || st.Claim.Chat != chat || !strings.Contains(text, "ran") {
		t.Fatalf("live command terminal: %s", snap.State)
	}

	// After dispose: rebuilt, exited, from what was kept.
	c.mustRequest("disposeTerminal", map[string]any{"channel": block.Resource})
	snap, err = c.Subscribe(c.ctx(), block.Resource)
	if err != nil {
		t.Fatalf("subscribe after dispose: %v", err)
	}
	st, text = terminalText(t, snap)
	if st.Lifecycle.Status != "exited" || !strings.Contains(text, "ran") || st.Title != "Terminal" {
		t.Fatalf("retained terminal: %s", snap.State)
	}
	// A client cannot open a shell of its own under that name.
	_, err = c.request("createTerminal", map[string]any{"channel": block.Resource, "claim": map[string]any{"kind": "client", "clientId": "bang"}})
	rpcError(t, err, messages.CodeSessionAlreadyExists)

	// After a restart with the same state folder: listed, its turn back, its
	// terminal rebuilt.
	h.stop()
	h2 := startHostIn(t, dir, "127.0.0.1:0")
	c2 := h2.dial("again")
	raw := c2.mustRequest("listSessions", map[string]any{"channel": messages.RootURI})
	var list struct{ Items []map[string]any }
	_ = json.Unmarshal(raw, &list)
	if len(list.Items) != 1 || list.Items[0]["resource"] != "ahp-session:/bang" || list.Items[0]["title"] != "echo ran" {
		t.Fatalf("sessions after restart: %s", raw)
	}
	chatSnap, err := c2.Subscribe(c2.ctx(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(chatSnap.State), turn) || !strings.Contains(string(chatSnap.State), "Ran command") {
		t.Fatalf("chat after restart: %s", chatSnap.State)
	}
	snap, err = c2.Subscribe(c2.ctx(), block.Resource)
	if err != nil {
		t.Fatalf("terminal after restart: %v", err)
	}
	if _, text := terminalText(t, snap); !strings.Contains(text, "ran") {
		t.Fatalf("terminal after restart: %s", snap.State)
	}

	// A corrupt kept file is refused cleanly and the host goes on.
	corruptKeptTerminals(t, dir)
	h2.stop()
	h3 := startHostIn(t, dir, "127.0.0.1:0")
	c3 := h3.dial("third")
	if _, err := c3.Subscribe(c3.ctx(), block.Resource); err == nil {
		t.Fatal("a corrupt kept terminal was served")
	}
	c3.mustRequest("ping", map[string]any{"channel": messages.RootURI})
}

func corruptKeptTerminals(t *testing.T, dir string) {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(path)) == "terminals" {
			n++
			return os.WriteFile(path, []byte(`{"uri": "trunc`), 0o600)
		}
		return nil
	})
	if n == 0 {
		t.Fatal("no kept terminal file to corrupt")
	}
}

func TestBangCommandEndings(t *testing.T) {
	h := startHost(t, withCommandTimeout(2*time.Second))
	c := h.dial("ends")
	chat := c.openSession("ahp-session:/ends", t.TempDir())

	call := c.waitCompleted(chat, c.say(chat, "!sh -c 'exit 3'"))
	if call.Success || call.PastTenseMessage != "Command exited with code 3" || call.Error != nil {
		t.Fatalf("exit 3: %+v", call)
	}
	call = c.waitCompleted(chat, c.say(chat, "!sleep 200"))
	if call.Success || call.PastTenseMessage != "Command timed out" {
		t.Fatalf("timeout: %+v", call)
	}
	// The shell is still busy with sleep; a new chat gets a fresh shell.
	raw := c.mustRequest("createChat", map[string]any{"channel": "ahp-session:/ends"})
	var r struct{ Chat string }
	_ = json.Unmarshal(raw, &r)
	if _, err := c.Subscribe(c.ctx(), r.Chat); err != nil {
		t.Fatal(err)
	}
	call = c.waitCompleted(r.Chat, c.say(r.Chat, "!exit"))
	if call.Success || call.PastTenseMessage != "Shell exited unexpectedly" {
		t.Fatalf("exit: %+v", call)
	}

	// A lone ! goes to the agent: there is none here.
	turn := c.say(chat, "!  ")
	c.waitFor("chat/error for a lone !", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/error" && strings.Contains(string(n.Envelope.Action), turn) &&
			strings.Contains(string(n.Envelope.Action), "no agent is attached to this session")
	})
}

func TestBangCommandInteractive(t *testing.T) {
	h := startHost(t, withPty(true))
	c := h.dial("alt")
	chat := c.openSession("ahp-session:/alt", t.TempDir())
	call := c.waitCompleted(chat, c.say(chat, `!printf '\033[?1049h'; sleep 5`))
	if call.PastTenseMessage != "Command opened an interactive terminal" {
		t.Fatalf("alt screen: %+v", call)
	}
	// The next command gets a shell of its own and runs as usual.
	call = c.waitCompleted(chat, c.say(chat, "!echo under-a-pty"))
	if !call.Success || call.PastTenseMessage != "Ran command" || !call.Content[0].IsPty || !strings.Contains(call.Content[0].Result.Preview, "under-a-pty") {
		t.Fatalf("a command after the interactive one: %+v", call)
	}
}

func TestQueuedAndConcurrentCommands(t *testing.T) {
	h := startHost(t)
	c := h.dial("q")
	chat := c.openSession("ahp-session:/queue", t.TempDir())
	first := c.say(chat, "!sleep 1; echo first-done")
	// Queued behind the running turn: runs when it ends.
	c.dispatch(chat, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1",
		"message": map[string]any{"text": "!echo queued-ran", "origin": map[string]any{"kind": "user"}}})
	c.waitCompleted(chat, first)
	started := c.waitFor("the queued turn's start", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/turnStarted" && strings.Contains(string(n.Envelope.Action), `"queuedMessageId":"q1"`)
	})
	var a struct{ TurnID string }
	_ = json.Unmarshal(started.Envelope.Action, &a)
	call := c.waitCompleted(chat, a.TurnID)
	if !strings.Contains(call.Content[0].Result.Preview, "queued-ran") {
		t.Fatalf("queued command: %+v", call)
	}

	// A command sent while another turn runs is taken at once.
	long := c.say(chat, "!sleep 3; echo long-done")
	quick := c.say(chat, "!echo quick-done")
	q := c.waitCompleted(chat, quick)
	if !strings.Contains(q.Content[0].Result.Preview, "quick-done") {
		t.Fatalf("concurrent command: %+v", q)
	}
	c.waitCompleted(chat, long)
}

func TestDisposeSessionEndsItsTerminals(t *testing.T) {
	h := startHost(t)
	c := h.dial("d")
	chat := c.openSession("ahp-session:/gone", t.TempDir())
	call := c.waitCompleted(chat, c.say(chat, "!echo bye"))
	uri := call.Content[0].Resource
	waitRoot(c, func(r []messages.TerminalInfo) bool { return findRow(r, uri) != nil })
	c.mustRequest("disposeSession", map[string]any{"channel": "ahp-session:/gone"})
	waitRoot(c, func(r []messages.TerminalInfo) bool { return findRow(r, uri) == nil })
	if _, err := c.Subscribe(c.ctx(), uri); err == nil {
		t.Fatal("a disposed session's terminal is still served")
	}
}

func TestDisposeChatDropsWhatWasKept(t *testing.T) {
	h := startHost(t)
	c := h.dial("dc")
	chat := c.openSession("ahp-session:/dc", t.TempDir())
	call := c.waitCompleted(chat, c.say(chat, "!echo kept-then-gone"))
	uri := call.Content[0].Resource
	c.mustRequest("disposeChat", map[string]any{"channel": chat})
	waitRoot(c, func(r []messages.TerminalInfo) bool { return findRow(r, uri) == nil })
	if _, err := c.Subscribe(c.ctx(), uri); err == nil {
		t.Fatal("a disposed chat's terminal is still served")
	}
	if _, err := c.Subscribe(c.ctx(), chat); err == nil {
		t.Fatal("a disposed chat is still served")
	}
}

// TestClosingHostEndsACommandUnrun stops the host while a command runs: its turn is
// ended with the host's sentence and kept, so after a restart the chat says so.
func TestClosingHostEndsACommandUnrun(t *testing.T) {
	dir := t.TempDir()
	h := startHostIn(t, dir, "127.0.0.1:0")
	c := h.dial("close")
	chat := c.openSession("ahp-session:/closing", t.TempDir())
	c.say(chat, "!echo started-long; sleep 100")
	c.waitFor("the command's terminal", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/toolCallContentChanged"
	})
	h.stop()
	h2 := startHostIn(t, dir, "127.0.0.1:0")
	c2 := h2.dial("after")
	snap, err := c2.Subscribe(c2.ctx(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap.State), "This host is closing, so nothing new starts on it") {
		t.Fatalf("chat after a closing host: %s", snap.State)
	}
}

// TestClaimingACommandsTerminalBackgroundsIt: a client that claims a running
// command's terminal for the session, with no tool call, sends it to the background.
func TestClaimingACommandsTerminalBackgroundsIt(t *testing.T) {
	h := startHost(t)
	c := h.dial("bg")
	chat := c.openSession("ahp-session:/bg", t.TempDir())
	turn := c.say(chat, "!echo long-running; sleep 100")
	n := c.waitFor("the command's terminal", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/toolCallContentChanged"
	})
	var a struct{ Content []struct{ Resource string } }
	_ = json.Unmarshal(n.Envelope.Action, &a)
	uri := a.Content[0].Resource
	c.dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "session", "session": "ahp-session:/bg", "chat": chat}})
	call := c.waitCompleted(chat, turn)
	if call.PastTenseMessage != "Command is running in the background" {
		t.Fatalf("backgrounded: %+v", call)
	}
	// Another client's claim on a session's terminal is refused.
	c.dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "bg"}})
	c.waitFor("the refused claim", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == uri && n.Envelope.Type == messages.TerminalClaimed && n.Envelope.RejectionReason != ""
	})
}

// A `!` command in a shell without marks (sh) that reads the terminal reads what a
// person types into it, not the line that echoes the sentinel, and the turn ends
// when the command does. Before, `head -n 1` took the sentinel's line, printed it
// and ended, the shell never echoed the sentinel, and the call timed out.
func TestBangCommandInASentinelShellReadsOnlyWhatIsTyped(t *testing.T) {
	if !ptyAvailable() {
		t.Skip("no pseudoterminal on this machine")
	}
	h := startHost(t, withPty(true), withDefaultShell("/bin/sh"))
	// head is reading the terminal once the shell has read the line: the terminal
	// echoes it then.
	headReadsWhatIsTyped(t, h, "bang-sh", "!head -n 1; echo after-$?", "head -n 1")
}

// The same on pipes, where the shell reads its commands from a pipe and a command
// that reads its standard input reads that pipe: the sentinel's line is written
// to it only once the shell itself reads it again, so head reads the person's line.
// Before, head took the sentinel's line and the turn waited out its two minutes.
// The shell is bash, which marks nothing on pipes and reads them a byte at a time,
// leaving what follows a command's line to the command (dash reads ahead, and takes
// a line typed after the command itself).
func TestBangCommandInASentinelShellOnPipesReadsOnlyWhatIsTyped(t *testing.T) {
	h := startHost(t, withPty(false), withDefaultShell("/bin/bash"))
	// Nothing echoes on pipes: "reading" says the shell has read the line and runs
	// it, so what is typed from then on is head's.
	headReadsWhatIsTyped(t, h, "bang-sh-pipes", "!echo reading; head -n 1; echo after-$?", "reading")
}

// headReadsWhatIsTyped runs a quick command and then command, whose head reads
// the terminal, in a new session of h; once the terminal shows ready, a person
// types a line, which head prints, and the call completes as the command ran.
func headReadsWhatIsTyped(t *testing.T, h *testHost, name, command, ready string) {
	t.Helper()
	c := h.dial(name)
	chat := c.openSession("ahp-session:/"+name, t.TempDir())

	quick := c.waitCompleted(chat, c.say(chat, "!echo one; false"))
	if quick.PastTenseMessage != "Command exited with code 1" || len(quick.Content) != 1 || !strings.Contains(quick.Content[0].Result.Preview, "one") ||
		strings.Contains(quick.Content[0].Result.Preview, "SENTINEL") {
		t.Fatalf("a quick command completed %+v", quick)
	}

	turn := c.say(chat, command)
	var uri string
	c.waitFor("the call's terminal", func(n *client.Notification) bool {
		if n.Envelope == nil || n.Envelope.Type != "chat/toolCallContentChanged" || !strings.Contains(string(n.Envelope.Action), turn) {
			return false
		}
		var a struct{ Content []struct{ Resource string } }
		_ = json.Unmarshal(n.Envelope.Action, &a)
		if len(a.Content) == 1 {
			uri = a.Content[0].Resource
		}
		return uri != ""
	})
	snap, err := c.Subscribe(c.ctx(), uri)
	if err != nil {
		t.Fatal(err)
	}
	// What shows the command runs may come before the subscribe, or after it.
	if _, text := terminalText(t, snap); !strings.Contains(text, ready) {
		c.waitFor(fmt.Sprintf("%q in the terminal", ready), func(n *client.Notification) bool {
			return n.Envelope != nil && n.Envelope.Channel == uri && n.Envelope.Type == "terminal/data" && strings.Contains(string(n.Envelope.Action), ready)
		})
	}
	c.dispatch(uri, map[string]any{"type": "terminal/input", "data": "typed-by-a-person\r"})
	call := c.waitCompleted(chat, turn)
	if !call.Success || call.PastTenseMessage != "Ran command" || len(call.Content) != 1 {
		t.Fatalf("completed call %+v", call)
	}
	preview := call.Content[0].Result.Preview
	if !strings.Contains(preview, "typed-by-a-person") || !strings.Contains(preview, "after-0") || strings.Contains(preview, "SENTINEL") {
		t.Fatalf("the call's text:\n%s", preview)
	}
}
