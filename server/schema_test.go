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
