package session_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// A command's turn is complete for its clients only once it is kept: whoever sees
// chat/turnComplete can read the turn, and the output it names, from the store right
// then, so a host killed at that moment has lost nothing it said was done. The runs
// behind the turns are let go once kept, and the chat goes on.
func TestTurnIsKeptBeforeItIsComplete(t *testing.T) {
	store, err := persistence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{store: store, workDir: t.TempDir()})
	from := 0
	for i := range 5 {
		turnID := fmt.Sprintf("t%d", i)
		h.say(turnID, fmt.Sprintf("!echo kept-%d", i))
		done, _ := h.log.waitFor(t, from, "chat/turnComplete of "+turnID, isType(messages.ChatTurnComplete, turnID))
		from = done
		// Read at once, with nothing waited for but the completion itself.
		turns, err := store.Turns(h.uri, h.chat)
		if err != nil || len(turns) != i+1 || turns[i].ID != turnID {
			t.Fatalf("when %s completed the store kept %d turns (%v), want %d ending with it", turnID, len(turns), err, i+1)
		}
		if i > 0 && turns[i].AnchorTurnID != turns[i-1].ID {
			t.Fatalf("turn %s is anchored to %q, want %q", turnID, turns[i].AnchorTurnID, turns[i-1].ID)
		}
		kept, err := store.LoadTerminal(h.uri, h.chat, turns[i].TerminalKey)
		if err != nil || !strings.Contains(kept.Output, fmt.Sprintf("kept-%d", i)) {
			t.Fatalf("when %s completed its output read %q, %v", turnID, kept.Output, err)
		}
	}
	// The chat still answers for every command's terminal: the live ones, and the
	// completed calls naming them.
	var st struct{ Turns []struct{ ID, State string } }
	if err := json.Unmarshal(h.subscribe(h.chat), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Turns) != 5 || st.Turns[4].State != messages.TurnStateComplete {
		t.Fatalf("the chat after five commands: %+v", st.Turns)
	}
}
