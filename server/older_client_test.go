package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

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
