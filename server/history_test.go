package server_test

import (
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

// TestALongChatPagesItsHistory restarts a host whose chat kept 150 `!` commands: a
// client opening it is shown the newest 50 and a cursor, pages the rest in with
// fetchTurns (each page reaching every subscriber as chat/turnsLoaded before the
// answer), a client subscribing without a view is shown them all, a turn the chat let
// go of still opens its terminal, no turn's id (let go or held) starts a turn again, and once
// nobody watches the chat it lets go of all but its newest 50 again.
func TestALongChatPagesItsHistory(t *testing.T) {
	dir := t.TempDir()
	h := startHostIn(t, dir, "127.0.0.1:0")
	c := h.dial("writer")
	const sess = "ahp-session:/long-history"
	chat := c.openSession(sess, t.TempDir())
	first := c.say(chat, "!echo first-kept")
	firstCall := c.waitCompleted(chat, first)
	h.stop()

	// 149 more kept commands, appended to the chat's log as the host keeps them.
	const more = 149
	store, err := persistence.Open(filepath.Join(dir, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	all := []string{first}
	t0 := time.Now().Add(-time.Hour).UTC()
	for n := range more {
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

	h2 := startHostIn(t, dir, "127.0.0.1:0")
	pager := h2.dial("pager")
	ids, cursor := subscribeWithView(t, pager, chat, 10)
	if want := all[100:]; !slices.Equal(ids, want) || cursor == "" {
		t.Fatalf("a view of 10 turns shows %d turns (%s…) with cursor %q; want the newest 50 and a cursor", len(ids), first3(ids), cursor)
	}

	// A let-go turn's terminal still opens, and its id starts no turn.
	ts, err := pager.Subscribe(pager.ctx(), firstCall.Content[0].Resource)
	if err != nil {
		t.Fatalf("the terminal of a turn the chat let go of: %v", err)
	}
	if _, text := terminalText(t, ts); !strings.Contains(text, "first-kept") {
		t.Fatalf("the terminal of a let-go turn shows %q", text)
	}
	for _, held := range []string{all[5], all[149]} {
		seq := pager.dispatch(chat, map[string]any{"type": "chat/turnStarted", "turnId": held, "startedAt": time.Now().UTC().Format(time.RFC3339),
			"message": map[string]any{"text": "!echo again", "origin": map[string]any{"kind": "user"}}})
		e := pager.waitFor("the answer to turnStarted "+held, func(n *client.Notification) bool {
			return n.Envelope != nil && n.Envelope.Channel == chat && n.Envelope.Type == messages.ChatTurnStarted && n.Envelope.Origin != nil && n.Envelope.Origin.ClientSeq == seq
		}).Envelope
		if e.RejectionReason == "" {
			t.Fatalf("a turnStarted reusing the id of turn %s was applied: %s", held, e.Action)
		}
	}

	page, cursor2 := fetchPage(t, pager, chat, cursor)
	if want := all[50:100]; !slices.Equal(page, want) || cursor2 == "" || cursor2 == cursor {
		t.Fatalf("the first page: %d turns (%s…), cursor %q after %q; want the 50 before those shown and a new cursor", len(page), first3(page), cursor2, cursor)
	}

	// A subscribe without a view is shown every turn, and the pager is sent the rest.
	whole := h2.dial("whole")
	snap, err := whole.Subscribe(whole.ctx(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if got, cur := chatTurns(t, snap.State); !slices.Equal(got, all) || cur != "" {
		t.Fatalf("a subscribe without a view shows %d turns, cursor %q; want all %d and none", len(got), cur, len(all))
	}
	rest := pager.waitFor("the rest of the chat's turns", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == chat && n.Envelope.Type == messages.ChatTurnsLoaded && strings.Contains(string(n.Envelope.Action), `"`+first+`"`)
	})
	if got, cur := loadedTurns(t, rest.Envelope); !slices.Equal(got, all[:50]) || cur != "" {
		t.Fatalf("the pager was sent %d turns (%s…), cursor %q; want the oldest 50 and none", len(got), first3(got), cur)
	}

	// A cursor overtaken by another's fetch is answered (there is nothing left); one
	// the chat never gave is refused, and the host goes on serving.
	if _, err := pager.request("fetchTurns", map[string]any{"channel": chat, "cursor": cursor2}); err != nil {
		t.Fatalf("fetchTurns with an overtaken cursor: %v", err)
	}
	_, err = pager.request("fetchTurns", map[string]any{"channel": chat, "cursor": "not-a-cursor"})
	rpcError(t, err, messages.CodeInvalidParams)
	_, err = pager.request("fetchTurns", map[string]any{"channel": "ahp-chat:/no-such-chat", "cursor": cursor2})
	rpcError(t, err, messages.CodeNotFound)
	_, err = pager.request("subscribe", map[string]any{"channel": chat, "view": map[string]any{"turns": -1}})
	rpcError(t, err, messages.CodeInvalidParams)

	// Once nobody watches it, the chat holds its newest 50 again. Each client's
	// unsubscribe reaches the chat before its next request does.
	if err := whole.Unsubscribe(whole.ctx(), chat); err != nil {
		t.Fatal(err)
	}
	whole.mustRequest("fetchTurns", map[string]any{"channel": chat})
	if err := pager.Unsubscribe(pager.ctx(), chat); err != nil {
		t.Fatal(err)
	}
	if ids, cursor := subscribeWithView(t, pager, chat, 0); !slices.Equal(ids, all[100:]) || cursor == "" {
		t.Fatalf("after its last subscriber left, the chat shows %d turns (%s…) with cursor %q; want the newest 50 and a cursor", len(ids), first3(ids), cursor)
	}
	// A view asking for more than the chat holds brings in what it asks for.
	viewer := h2.dial("viewer")
	if ids, cursor := subscribeWithView(t, viewer, chat, 120); !slices.Equal(ids, all[30:]) || cursor == "" {
		t.Fatalf("a view of 120 turns shows %d turns (%s…) with cursor %q; want the newest 120 and a cursor", len(ids), first3(ids), cursor)
	}
	call := pager.waitCompleted(chat, pager.say(chat, "!echo still-runs"))
	if !call.Success || !strings.Contains(call.Content[0].Result.Preview, "still-runs") {
		t.Fatalf("a command in the paged chat: %+v", call)
	}
}

// subscribeWithView subscribes c to chat with view.turns and returns the ids of the
// snapshot's turns and its turnsNextCursor.
func subscribeWithView(t *testing.T, c *conn, chat string, turns int) ([]string, string) {
	t.Helper()
	raw := c.mustRequest("subscribe", map[string]any{"channel": chat, "view": map[string]any{"turns": turns}})
	var r struct{ Snapshot client.RawSnapshot }
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return chatTurns(t, r.Snapshot.State)
}

// fetchPage asks for the page before cursor and returns the turns of the
// chat/turnsLoaded that reached c before the answer, and the page's cursor.
func fetchPage(t *testing.T, c *conn, chat, cursor string) ([]string, string) {
	t.Helper()
	if r := c.mustRequest("fetchTurns", map[string]any{"channel": chat, "cursor": cursor}); string(r) != "{}" {
		t.Fatalf("fetchTurns answered %s, want {}", r)
	}
	// What the host sent before its answer is already read.
	for len(c.Notifications) > 0 {
		n := <-c.Notifications
		c.seen = append(c.seen, n)
		if n.Envelope != nil && n.Envelope.Channel == chat && n.Envelope.Type == messages.ChatTurnsLoaded {
			return loadedTurns(t, n.Envelope)
		}
	}
	t.Fatalf("no chat/turnsLoaded before fetchTurns answered; saw %s", c.describeSeen())
	return nil, ""
}

// loadedTurns is the ids of a chat/turnsLoaded's turns and its turnsNextCursor,
// which it carries as a chat's state does.
func loadedTurns(t *testing.T, e *client.Envelope) ([]string, string) {
	t.Helper()
	return chatTurns(t, e.Action)
}

// chatTurns is the ids of a chat state's turns and its turnsNextCursor.
func chatTurns(t *testing.T, state json.RawMessage) ([]string, string) {
	t.Helper()
	var st struct {
		Turns           []struct{ ID string }
		TurnsNextCursor string
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(st.Turns))
	for i, turn := range st.Turns {
		ids[i] = turn.ID
	}
	return ids, st.TurnsNextCursor
}

func first3(ids []string) string { return strings.Join(ids[:min(3, len(ids))], ",") }
