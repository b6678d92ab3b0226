package root

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

// The list a broadcast joins from rows encoded one by one is, byte for byte, the
// list encoded whole: empty, one terminal, and terminals of every shape.
func TestTerminalsChangedJoinsRows(t *testing.T) {
	code := 3
	var infos []messages.TerminalInfo
	for n := range 5 {
		info := messages.TerminalInfo{Resource: fmt.Sprintf("ahp-terminal:/t%d", n), Title: `a "title" <&>`,
			Claim: messages.Claim{Kind: messages.ClaimSession, Session: "ahp-session:/s", Chat: "ahp-chat:/c"}}
		if n%2 == 1 {
			info.Lifecycle = &messages.Lifecycle{Status: messages.StatusExited}
			info.ExitCode = &code
		}
		if n == 4 {
			info.Meta = map[string]any{"k": []any{1.5, "v"}}
		}
		infos = append(infos, info)
	}
	for n := range len(infos) + 1 {
		list := infos[:n]
		rows := make([]json.RawMessage, n)
		for i, info := range list {
			rows[i] = encodeRow(info)
		}
		want := messages.EncodeAction(&messages.Action{Type: messages.RootTerminalsChanged, Terminals: &list})
		if got := terminalsChangedJSON(list, rows); !bytes.Equal(got, want) {
			t.Fatalf("%d terminals:\n got %s\nwant %s", n, got, want)
		}
		if n > 0 {
			rows[0] = nil // a row that did not encode is encoded again
			if got := terminalsChangedJSON(list, rows); !bytes.Equal(got, want) {
				t.Fatalf("%d terminals, the first not encoded before:\n got %s\nwant %s", n, got, want)
			}
		}
	}
}

// The list of 900 terminals going out after one of them changed: encoded whole, as
// every broadcast did, against joined from the rows encoded when they changed.
func BenchmarkTerminalsChanged(b *testing.B) {
	infos := make([]messages.TerminalInfo, 900)
	rows := make([]json.RawMessage, len(infos))
	for i := range infos {
		infos[i] = messages.TerminalInfo{Resource: fmt.Sprintf("ahp-terminal:/termhost-command/c/cmd-%d", i), Title: "Terminal",
			Claim: messages.Claim{Kind: messages.ClaimSession, Session: "ahp-session:/bench", Chat: "ahp-chat:/bench", TurnID: fmt.Sprintf("turn-%d", i), ToolCallID: fmt.Sprintf("cmd-%d", i)}}
		rows[i] = encodeRow(infos[i])
	}
	b.Run("encoded whole", func(b *testing.B) {
		for b.Loop() {
			_ = messages.EncodeAction(&messages.Action{Type: messages.RootTerminalsChanged, Terminals: &infos})
		}
	})
	b.Run("joined rows", func(b *testing.B) {
		for b.Loop() {
			rows[0] = encodeRow(infos[0])
			_ = terminalsChangedJSON(infos, rows)
		}
	})
}

// A root subscriber is sent at most rootListRate bytes of lists a second, whatever
// the list's size, and a small list still goes within rootWindow.
func TestListWindowBoundsTheListBytes(t *testing.T) {
	cases := []struct {
		size int
		want time.Duration
	}{
		{0, rootWindow},
		{20 << 10, rootWindow},                // 20 KiB a window of 10 ms is 2 MiB/s
		{256 << 10, 62500 * time.Microsecond}, // a thousand rows
		{1 << 20, rootWindowMax},
		{64 << 20, rootWindowMax},
	}
	for _, c := range cases {
		got := listWindow(c.size)
		if got != c.want {
			t.Errorf("listWindow(%d) = %v, want %v", c.size, got, c.want)
		}
		if rate := float64(c.size) / got.Seconds(); got < rootWindowMax && rate > rootListRate*1.001 {
			t.Errorf("a list of %d bytes every %v is %.0f bytes a second", c.size, got, rate)
		}
	}
}
