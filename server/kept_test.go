package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

// TestTurnsWhoseOutputIsGoneStillLoad restarts a host whose kept terminal files are
// gone (as a crash before they were written would leave them): the chat comes back
// with every turn, a terminal whose preview is whole opens from it, one whose preview
// was cut is refused as the seed says (-32008), and the chat runs commands as before.
func TestTurnsWhoseOutputIsGoneStillLoad(t *testing.T) {
	dir := t.TempDir()
	h := startHostIn(t, dir, "127.0.0.1:0")
	c := h.dial("gone")
	chat := c.openSession("ahp-session:/gone-output", t.TempDir())
	small := c.waitCompleted(chat, c.say(chat, "!echo small-kept"))
	big := c.waitCompleted(chat, c.say(chat, "!seq 1 20000"))
	if !big.Content[0].Result.Truncated || small.Content[0].Result.Truncated {
		t.Fatalf("previews: big truncated %v, small truncated %v", big.Content[0].Result.Truncated, small.Content[0].Result.Truncated)
	}
	h.stop()

	removed := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(path)) == "terminals" {
			removed++
			return os.Remove(path)
		}
		return nil
	})
	if removed != 2 {
		t.Fatalf("removed %d kept terminals, want 2", removed)
	}

	h2 := startHostIn(t, dir, "127.0.0.1:0")
	c2 := h2.dial("again")
	snap, err := c2.Subscribe(c2.ctx(), chat)
	if err != nil {
		t.Fatalf("the chat without its kept output: %v", err)
	}
	if uris := commandTerminals(t, snap.State); len(uris) != 2 || uris[0] != small.Content[0].Resource || uris[1] != big.Content[0].Resource {
		t.Fatalf("the chat's turns name %v, want both commands' terminals", uris)
	}
	ts, err := c2.Subscribe(c2.ctx(), small.Content[0].Resource)
	if err != nil {
		t.Fatalf("a terminal with a whole preview: %v", err)
	}
	if st, text := terminalText(t, ts); st.Lifecycle.Status != messages.StatusExited || !strings.Contains(text, "small-kept") {
		t.Fatalf("rebuilt from the preview: %s", ts.State)
	}
	_, err = c2.Subscribe(c2.ctx(), big.Content[0].Resource)
	rpcError(t, err, messages.CodeNotFound)

	call := c2.waitCompleted(chat, c2.say(chat, "!echo still-works"))
	if !call.Success || !strings.Contains(call.Content[0].Result.Preview, "still-works") {
		t.Fatalf("a command after the restart: %+v", call)
	}
}

// commandTerminals lists the terminals the chat's turns name, in order.
func commandTerminals(t *testing.T, state json.RawMessage) []string {
	t.Helper()
	var chat struct {
		Turns []struct {
			ResponseParts []struct {
				ToolCall *struct {
					Content []struct{ Type, Resource string }
				}
			}
		}
	}
	if err := json.Unmarshal(state, &chat); err != nil {
		t.Fatalf("chat state: %v", err)
	}
	var uris []string
	for _, turn := range chat.Turns {
		for _, p := range turn.ResponseParts {
			if p.ToolCall == nil {
				continue
			}
			for _, b := range p.ToolCall.Content {
				if b.Type == "terminal" {
					uris = append(uris, b.Resource)
				}
			}
		}
	}
	return uris
}
