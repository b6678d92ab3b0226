package server_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// withPresenceGrace sets how long a gone client keeps its place in a session.
func withPresenceGrace(d time.Duration) hostOption {
	return func(c *server.Config) { c.Root.PresenceGrace = d }
}

// activeClients is the session's activeClients as a fresh subscriber sees them.
func activeClients(t *testing.T, h *testHost, sessionURI string) []string {
	t.Helper()
	c := h.dial("presence-reader-" + time.Now().Format("150405.000000000"))
	raw := c.mustRequest("subscribe", map[string]any{"channel": sessionURI})
	var r struct {
		Snapshot struct {
			State struct {
				ActiveClients []struct {
					ClientID string `json:"clientId"`
				} `json:"activeClients"`
			} `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range r.Snapshot.State.ActiveClients {
		ids = append(ids, a.ClientID)
	}
	_ = c.Close()
	return ids
}

// TestPresenceSurvivesAResume: a client that set its presence in a session and whose
// transport dropped keeps its place when it resumes with reconnect; one that does not
// come back is taken off after the grace; a client sets only its own presence.
func TestPresenceSurvivesAResume(t *testing.T) {
	// The resume must come within the grace: 3 s holds on a loaded 2-CPU machine,
	// where three race-built suites at once took a resume past 1 s.
	h := startHost(t, withPresenceGrace(3*time.Second))
	a := h.dial("present")
	sessionURI := "ahp-session:/presence"
	a.openSession(sessionURI, t.TempDir())
	if _, err := a.Subscribe(a.ctx(), sessionURI); err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"type": messages.SessionActiveClientSet, "activeClient": map[string]any{"clientId": "present", "displayName": "A", "tools": []any{}}}
	seq := a.dispatch(sessionURI, set)
	if n := a.waitFor("the presence echo", envelopeFrom(sessionURI, "present", seq)); n.Envelope.RejectionReason != "" {
		t.Fatalf("setting one's own presence: %s", n.Envelope.RejectionReason)
	}
	other := map[string]any{"type": messages.SessionActiveClientSet, "activeClient": map[string]any{"clientId": "someone-else", "tools": []any{}}}
	seq = a.dispatch(sessionURI, other)
	if n := a.waitFor("the refused presence", envelopeFrom(sessionURI, "present", seq)); n.Envelope.RejectionReason == "" {
		t.Fatal("a client set another client's presence")
	}
	if got := activeClients(t, h, sessionURI); len(got) != 1 || got[0] != "present" {
		t.Fatalf("active clients %v; want [present]", got)
	}

	// The transport drops; the client resumes within the grace and keeps its place,
	// with no removal sent meanwhile.
	watcher := h.dial("presence-watcher")
	if _, err := watcher.Subscribe(watcher.ctx(), sessionURI); err != nil {
		t.Fatal(err)
	}
	_ = a.WS().CloseNow()
	b, _, err := h.resume(t, h.owner, "present", 0, sessionURI)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	// Past the grace, by an event: a removal would have gone to the watcher by the
	// time a second, shorter-lived client's removal does.
	c := h.dial("presence-gone")
	if _, err := c.Subscribe(c.ctx(), sessionURI); err != nil {
		t.Fatal(err)
	}
	seq = c.dispatch(sessionURI, map[string]any{"type": messages.SessionActiveClientSet, "activeClient": map[string]any{"clientId": "presence-gone", "tools": []any{}}})
	c.waitFor("the second client's echo", envelopeFrom(sessionURI, "presence-gone", seq))
	_ = c.WS().CloseNow()
	removed := watcher.waitFor("the gone client's removal", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Type == messages.SessionActiveClientRemoved
	})
	var r messages.SessionActiveClientRemovedAction
	_ = json.Unmarshal(removed.Envelope.Action, &r)
	if r.ClientID != "presence-gone" {
		t.Fatalf("the first removal is of %q; want the client that did not come back", r.ClientID)
	}
	if got := activeClients(t, h, sessionURI); len(got) != 1 || got[0] != "present" {
		t.Fatalf("active clients after the resume %v; want [present]", got)
	}
	_ = b.Close()
}
