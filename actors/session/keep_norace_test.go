//go:build !race

// The race detector makes restoring 20,000 turns take longer than a spawn may (it
// runs in the session's producer), so this heavy test runs without it (STYLE.md,
// section 6: heavy tests are labelled, never timed).

package session_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// A chat that kept 20,000 turns over its life comes back with every one of them after
// a restart, in order, and its next command is anchored to the last. The log on disk
// is what the host writes, one line a turn: here its first turn is kept by a command,
// and 19,999 more lines are appended after it as the host would have.
func TestTwentyThousandTurnChatComesBackAfterARestart(t *testing.T) {
	const total = 20_000
	store, err := persistence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{store: store, workDir: t.TempDir()})
	h.say("turn-0", "!echo first")
	_, result := h.completedResult(0, "turn-0")
	if !result.Success {
		t.Fatalf("the first command: %+v", result)
	}
	h.log.waitFor(t, 0, "chat/turnComplete of turn-0", isType(messages.ChatTurnComplete, "turn-0"))
	if _, err := h.system.Root.RequestFuture(h.session, &channel.Shutdown{}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	first, err := store.Turns(h.uri, h.chat)
	if err != nil || len(first) != 1 {
		t.Fatalf("the first turn: %+v, %v", first, err)
	}

	var logPath string
	_ = filepath.WalkDir(store.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "turns.jsonl" {
			logPath = p
		}
		return nil
	})
	if logPath == "" {
		t.Fatal("no turns.jsonl under the store")
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for n := 1; n < total; n++ {
		turn := first[0]
		turn.ID, turn.AnchorTurnID = fmt.Sprintf("turn-%d", n), fmt.Sprintf("turn-%d", n-1)
		turn.Text = fmt.Sprintf("!echo %d", n)
		turn.StartedAt = turn.StartedAt.Add(time.Duration(n) * time.Second)
		turn.EndedAt = turn.StartedAt.Add(time.Millisecond)
		if err := enc.Encode(turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// The host restarts: a new store on the same folder.
	store, err = persistence.Open(store.Root())
	if err != nil {
		t.Fatal(err)
	}
	records, problems := store.Sessions()
	if len(problems) != 0 || len(records) != 1 {
		t.Fatalf("kept sessions: %+v, %v", records, problems)
	}
	again := newHarness(t, harnessOptions{store: store, record: &records[0]})
	var st struct {
		Turns []struct {
			ID      string
			Message struct{ Text string }
		}
	}
	if err := json.Unmarshal(again.subscribe(again.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Turns) != total {
		t.Fatalf("the chat came back with %d turns, want %d", len(st.Turns), total)
	}
	for n, turn := range st.Turns {
		if turn.ID != fmt.Sprintf("turn-%d", n) {
			t.Fatalf("turn %d came back as %s", n, turn.ID)
		}
	}
	if st.Turns[total-1].Message.Text != fmt.Sprintf("!echo %d", total-1) {
		t.Fatalf("the last turn: %+v", st.Turns[total-1])
	}

	again.say("turn-next", "!echo next")
	again.completedResult(0, "turn-next")
	again.log.waitFor(t, 0, "chat/turnComplete of turn-next", isType(messages.ChatTurnComplete, "turn-next"))
	turns, err := store.Turns(again.uri, again.chat)
	if err != nil || len(turns) != total+1 {
		t.Fatalf("after the next command: %d turns, %v; want %d", len(turns), err, total+1)
	}
	if last := turns[total]; last.ID != "turn-next" || last.AnchorTurnID != fmt.Sprintf("turn-%d", total-1) {
		t.Fatalf("the next command's turn %s is anchored to %q", last.ID, last.AnchorTurnID)
	}
}
