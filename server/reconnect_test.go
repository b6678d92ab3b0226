package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestReconnectReplaysWhatWasMissed(t *testing.T) {
	h := startHost(t)
	a := h.dial("re")
	uri := "ahp-terminal:/replayed"
	gone := "ahp-terminal:/gone"
	a.createTerminal(uri, nil)
	a.createTerminal(gone, nil)
	a.input(uri, "echo first\r")
	a.waitOutput(uri, "first")
	last := a.seen[len(a.seen)-1].Envelope.ServerSeq
	_ = a.Close()

	// While nobody watches: more output, and one terminal goes.
	w := h.dial("watcher")
	if _, err := w.Subscribe(w.ctx(), uri); err != nil {
		t.Fatal(err)
	}
	w.input(uri, "echo second\r")
	w.waitOutput(uri, "second")
	w.mustRequest("disposeTerminal", map[string]any{"channel": gone})

	b := h.dialRaw(h.owner)
	b.clientID = "re"
	if _, err := b.Initialize(b.ctx(), "re"); err != nil {
		t.Fatal(err)
	}
	raw := b.mustRequest("reconnect", map[string]any{"channel": messages.RootURI, "clientId": "re", "lastSeenServerSeq": last, "subscriptions": []string{uri, gone}})
	var r struct {
		Type    string            `json:"type"`
		Actions []json.RawMessage `json:"actions"`
		Missing []string          `json:"missing"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Type != "replay" || len(r.Missing) != 1 || r.Missing[0] != gone {
		t.Fatalf("reconnect: %s", raw)
	}
	var replayed strings.Builder
	prev := last
	for _, env := range r.Actions {
		var e messages.Envelope
		if err := json.Unmarshal(env, &e); err != nil {
			t.Fatal(err)
		}
		if e.ServerSeq <= prev {
			t.Fatalf("replay out of order or not after lastSeen: %d after %d", e.ServerSeq, prev)
		}
		prev = e.ServerSeq
		var a messages.Action
		_ = json.Unmarshal(e.Action, &a)
		if a.Type == messages.TerminalData {
			replayed.WriteString(*a.Data)
		}
	}
	if !strings.Contains(replayed.String(), "second") || strings.Contains(replayed.String(), "first") {
		t.Fatalf("replayed output %q: want what came after lastSeen only", replayed.String())
	}
	// And the stream goes on after the replay.
	b.input(uri, "echo third\r")
	b.waitOutput(uri, "third")
}
