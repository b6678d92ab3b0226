package main

import (
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

// A client of node a active in a session of node b whose connection goes is taken off
// the session's active clients once --presence-grace has passed, as a client of node b
// itself would be: a watcher on node c sees session/activeClientRemoved.
func TestClusterPresenceLeaves(t *testing.T) {
	t.Parallel()
	ctx, a, _, c := seedsCluster(t, "--presence-grace", "200ms")

	const uri = "ahp-session:/presence"
	pa := a.dial(ctx, "pa")
	createSessionOn(t, ctx, pa, uri, "b")
	watcher := c.dial(ctx, "watcher")
	if _, err := watcher.Subscribe(ctx, uri); err != nil {
		t.Fatalf("subscribe %s from node c: %v", uri, err)
	}
	w := &stream{t: t, c: watcher, uri: uri}
	if _, err := pa.Subscribe(ctx, uri); err != nil {
		t.Fatalf("subscribe %s from node a: %v", uri, err)
	}
	_ = pa.Dispatch(ctx, uri, 1, map[string]any{"type": messages.SessionActiveClientSet, "activeClient": map[string]any{"clientId": "pa", "tools": []any{}}})
	if e := w.until(ctx, "pa's presence", isType(messages.SessionActiveClientSet)); !strings.Contains(string(e.Action), `"pa"`) {
		t.Fatalf("the presence node c saw: %s", e.Action)
	}
	// pa's only connection goes; after the grace the session, on node b, takes it off.
	_ = pa.Close()
	removed := w.until(ctx, "pa's removal", isType(messages.SessionActiveClientRemoved))
	if !strings.Contains(string(removed.Action), `"pa"`) || removed.Origin != nil {
		t.Fatalf("the removal node c saw: %+v %s", removed, removed.Action)
	}
}
