package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// TestFramesMatchTheSchemas runs a terminal's whole life and a `!` command, and
// validates what the host sent against the AHP JSON Schemas where a definition
// applies: the initialize result, every snapshot's state and every action envelope.
func TestFramesMatchTheSchemas(t *testing.T) {
	v := schematest.Load(t)
	h := startHost(t, withPty(true))
	c := h.dialRaw(h.owner)
	c.clientID = "schema"
	res, err := c.Initialize(c.ctx(), "schema", messages.RootURI)
	if err != nil {
		t.Fatal(err)
	}
	check := schemaCheck(t, v)
	check("InitializeResult", res.Raw)
	check("RootState", res.Snapshots[0].State)

	uri := "ahp-terminal:/schema"
	snap := c.createTerminal(uri, map[string]any{"name": "s", "cols": 90, "rows": 20})
	check("TerminalState", snap.State)
	c.input(uri, "echo schema-$((2+3)); (exit 7)\r")
	c.waitOutput(uri, "schema-5")
	c.dispatch(uri, map[string]any{"type": "terminal/resized", "cols": 100, "rows": 30})
	c.dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "t2"})
	c.dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "someone"}})
	c.input(uri, "exit 3\r")
	c.waitExit(uri)
	snap, _ = c.Subscribe(c.ctx(), uri)
	check("TerminalState", snap.State)

	chat := c.openSession("ahp-session:/schema", t.TempDir())
	call := c.waitCompleted(chat, c.say(chat, "!echo schema-command"))
	chatSnap, _ := c.Subscribe(c.ctx(), chat)
	check("ChatState", chatSnap.State)
	kept, _ := c.Subscribe(c.ctx(), call.Content[0].Resource)
	check("TerminalState", kept.State)
	c.say(chat, "hello")
	c.waitFor("the no-agent error", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "chat/error"
	})

	envelopes := 0
	for _, n := range c.seen {
		if n.Method != "action" {
			continue
		}
		envelopes++
		check("ActionEnvelope", n.Params)
		if strings.HasPrefix(n.Envelope.Type, "terminal/") && n.Envelope.RejectionReason == "" && strings.Contains(string(n.Params), `"lifecycle"`) {
			t.Logf("1.x lifecycle sent beside the flat exitCode: %s", truncate(string(n.Params), 120))
		}
	}
	if envelopes < 10 {
		t.Fatalf("only %d envelopes seen", envelopes)
	}
}

// schemaCheck validates what the host sent against the schema definition def, as an
// error of t's naming the definition and the frame.
func schemaCheck(t *testing.T, v *schematest.Validator) func(def string, raw []byte) {
	return func(def string, raw []byte) {
		t.Helper()
		if err := v.Validate(def, json.RawMessage(raw)); err != nil {
			t.Errorf("%s does not match the schema: %v\n%s", def, err, truncate(string(raw), 600))
		}
	}
}

// TestAnOlderClientsFramesMatchItsSchemas: a client that negotiated 0.8.0 (the
// protocol's TS client offers it alone) runs a session with a `!` command, and every
// answer, snapshot and envelope it is sent is one the 0.8.0 schemas describe.
func TestAnOlderClientsFramesMatchItsSchemas(t *testing.T) {
	v := schematest.Load(t)
	h := startHost(t, withPty(true))
	c := h.dialRaw(h.owner)
	c.clientID = "old"
	raw := c.mustRequest("initialize", map[string]any{"channel": messages.RootURI, "protocolVersions": []string{"0.8.0"}, "clientId": "old", "initialSubscriptions": []string{messages.RootURI}})
	check := schemaCheck(t, v)
	check("InitializeResult", raw)
	chat := c.openSession("ahp-session:/old", t.TempDir())
	sraw := c.mustRequest("subscribe", map[string]any{"channel": "ahp-session:/old"})
	check("SubscribeResult", sraw)
	var sr struct {
		Snapshot struct{ State json.RawMessage }
	}
	_ = json.Unmarshal(sraw, &sr)
	check("SessionState", sr.Snapshot.State)
	call := c.waitCompleted(chat, c.say(chat, "!echo old-$((1+1))"))
	craw := c.mustRequest("subscribe", map[string]any{"channel": chat})
	_ = json.Unmarshal(craw, &sr)
	check("ChatState", sr.Snapshot.State)
	traw := c.mustRequest("subscribe", map[string]any{"channel": call.Content[0].Resource})
	_ = json.Unmarshal(traw, &sr)
	check("TerminalState", sr.Snapshot.State)
	c.mustRequest("disposeSession", map[string]any{"channel": "ahp-session:/old"})
	c.waitFor("the command's terminal off the root list", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == "root/terminalsChanged" && strings.Contains(string(n.Envelope.Action), `"terminals":[]`)
	})
	defs := map[string]string{"root/sessionAdded": "SessionAddedParams", "root/sessionRemoved": "SessionRemovedParams", "root/sessionSummaryChanged": "SessionSummaryChangedParams", "action": "ActionEnvelope"}
	for _, n := range c.seen {
		d, ok := defs[n.Method]
		if !ok {
			t.Errorf("a notification the test does not know: %s", n.Method)
			continue
		}
		check(d, n.Params)
	}
	// What was checked includes the command's whole run, not only the handshake.
	for _, want := range []string{"chat/turnStarted", "chat/toolCallComplete", "root/terminalsChanged"} {
		seen := false
		for _, n := range c.seen {
			seen = seen || (n.Envelope != nil && n.Envelope.Type == want)
		}
		if !seen {
			t.Errorf("no %s among the frames checked", want)
		}
	}
}
