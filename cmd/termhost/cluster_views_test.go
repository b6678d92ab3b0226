package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// TestClusterChatViews: a long chat on node b, opened from node a, shows each client
// there what its view asks for, as it would on node b itself. Node b restarts with a
// chat that kept 150 `!` commands, so it holds its newest 50. From node a: a view of
// 10 is shown those 50 and a cursor (not all 150, which a subscribe without a view
// asks for); a view of 120 on the same node, whose proxy holds 50, is shown the newest
// 120 once node b brought them in, and the first client is sent them as
// chat/turnsLoaded; a subscribe without a view is shown every turn, and the others are
// sent the rest.
func TestClusterChatViews(t *testing.T) {
	t.Parallel()
	ctx, a, b, _ := seedsCluster(t)
	watcher := a.dial(ctx, "watcher")
	owner := a.dial(ctx, "owner")
	const sess = "ahp-session:/long-far"
	chat := createSessionOn(t, ctx, owner, sess, "b")
	if _, err := owner.Subscribe(ctx, chat); err != nil {
		t.Fatal(err)
	}
	s := &stream{t: t, c: owner, uri: chat}
	startTurn(t, ctx, owner, chat, 1, "first", "!echo first-kept")
	s.until(ctx, "the first turn's end", isType(messages.ChatTurnComplete))

	// Node b stops; 149 more kept commands are appended to the chat's log as node b
	// keeps them; node b comes back with its state folder.
	b.stop()
	waitCatalog(t, ctx, watcher, "root/sessionRemoved", sess)
	store, err := persistence.Open(filepath.Join(b.state, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"first"}
	t0 := time.Now().Add(-time.Hour).UTC()
	for n := range 149 {
		id, key := fmt.Sprintf("old-%03d", n), fmt.Sprintf("old-call-%03d", n)
		result := fmt.Sprintf(`{"success":true,"pastTenseMessage":"Ran command","content":[{"type":"terminal","resource":"ahp-terminal:/termhost-command/gone/%s","title":"Terminal","result":{"exitCode":0,"preview":"%d\n","truncated":false}}]}`, key, n)
		turn := persistence.LocalTurn{ID: id, AnchorTurnID: all[len(all)-1], Text: fmt.Sprintf("!echo %d", n),
			StartedAt: t0.Add(time.Duration(n) * time.Second), EndedAt: t0.Add(time.Duration(n)*time.Second + time.Millisecond),
			ToolCallID: key, Result: json.RawMessage(result), State: persistence.TurnComplete}
		if err := store.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	b.start("the cluster's secret")
	waitCatalog(t, ctx, watcher, "root/sessionAdded", sess)

	few := a.dial(ctx, "few")
	ids, cursor := viewOf(t, ctx, few, chat, 10)
	if want := all[100:]; !slices.Equal(ids, want) || cursor == "" {
		t.Fatalf("from node a, a view of 10 turns shows %d turns (%v…) with cursor %q; want the newest 50 and a cursor", len(ids), head(ids), cursor)
	}
	fewStream := &stream{t: t, c: few, uri: chat}

	more := a.dial(ctx, "more")
	ids, cursor = viewOf(t, ctx, more, chat, 120)
	if want := all[30:]; !slices.Equal(ids, want) || cursor == "" {
		t.Fatalf("from node a, a view of 120 turns shows %d turns (%v…) with cursor %q; want the newest 120 and a cursor", len(ids), head(ids), cursor)
	}
	moreStream := &stream{t: t, c: more, uri: chat}
	loaded := fewStream.until(ctx, "the turns the view of 120 brought in", isType(messages.ChatTurnsLoaded))
	if got := loadedIDs(t, loaded.Action); !slices.Equal(got, all[30:100]) {
		t.Fatalf("the first client was sent %d turns (%v…); want the 70 before the 50 it holds", len(got), head(got))
	}

	whole := a.dial(ctx, "whole")
	ids, cursor = viewOf(t, ctx, whole, chat, -1)
	if !slices.Equal(ids, all) || cursor != "" {
		t.Fatalf("from node a, a subscribe without a view shows %d turns (%v…) with cursor %q; want all %d and none", len(ids), head(ids), cursor, len(all))
	}
	for name, st := range map[string]*stream{"few": fewStream, "more": moreStream} {
		rest := st.until(ctx, "the rest of the chat's turns", isType(messages.ChatTurnsLoaded))
		if got := loadedIDs(t, rest.Action); !slices.Equal(got, all[:30]) {
			t.Fatalf("client %s was sent %d turns (%v…); want the oldest 30", name, len(got), head(got))
		}
	}
}

// viewOf subscribes c to chat with view.turns (none when turns < 0) and returns the
// snapshot's turn ids and turnsNextCursor.
func viewOf(t *testing.T, ctx context.Context, c *client.Conn, chat string, turns int) ([]string, string) {
	t.Helper()
	params := map[string]any{"channel": chat}
	if turns >= 0 {
		params["view"] = map[string]any{"turns": turns}
	}
	raw, err := c.Request(ctx, "subscribe", params)
	if err != nil {
		t.Fatalf("subscribe %s with a view of %d: %v", chat, turns, err)
	}
	var r struct {
		Snapshot struct {
			State json.RawMessage `json:"state"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("subscribe %s: %s", chat, raw)
	}
	var st struct {
		Cursor string `json:"turnsNextCursor"`
	}
	_ = json.Unmarshal(r.Snapshot.State, &st)
	return turnIDs(t, r.Snapshot.State), st.Cursor
}

// loadedIDs is the ids of the turns a chat/turnsLoaded brings.
func loadedIDs(t *testing.T, action json.RawMessage) []string {
	t.Helper()
	var a struct{ Turns []struct{ ID string } }
	if err := json.Unmarshal(action, &a); err != nil {
		t.Fatalf("chat/turnsLoaded: %v: %s", err, action)
	}
	ids := make([]string, 0, len(a.Turns))
	for _, turn := range a.Turns {
		ids = append(ids, turn.ID)
	}
	return ids
}

// head is the first few of ids, for a failure's message.
func head(ids []string) string { return strings.Join(ids[:min(3, len(ids))], ",") }
