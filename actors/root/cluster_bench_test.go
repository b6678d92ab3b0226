package root

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/termhost/termhost/messages"
)

// A cluster node's root compares its own rows with those it last told the node actor
// on every publish. With a thousand terminals: the rows' encodings compared where
// they lie (sameRows, what the root does) against reflect.DeepEqual of the rows (what
// it did).
func BenchmarkSameRows(b *testing.B) {
	const n = 1000
	infos := make([]messages.TerminalInfo, n)
	rows := make([]json.RawMessage, n)
	for i := range infos {
		infos[i] = messages.TerminalInfo{Resource: fmt.Sprintf("ahp-terminal:/t%d", i), Title: "bash", Claim: messages.Claim{Kind: "client", ClientID: "c"},
			Lifecycle: &messages.Lifecycle{Status: messages.StatusRunning}, Meta: map[string]any{NodeMeta: "n1"}}
		rows[i] = encodeRow(infos[i])
	}
	sentInfos, sentRows := slices.Clone(infos), slices.Clone(rows)
	b.Run("encoded", func(b *testing.B) {
		for b.Loop() {
			if !sameRows(rows, sentRows) {
				b.Fatal("differ")
			}
		}
	})
	b.Run("deepequal", func(b *testing.B) {
		for b.Loop() {
			if !reflect.DeepEqual(infos, sentInfos) {
				b.Fatal("differ")
			}
		}
	})
}

func TestSameRows(t *testing.T) {
	a, b := json.RawMessage(`{"resource":"x"}`), json.RawMessage(`{"resource":"y"}`)
	same := slices.Clone(a)
	for _, c := range []struct {
		x, y []json.RawMessage
		want bool
	}{
		{[]json.RawMessage{a}, []json.RawMessage{a}, true},
		{[]json.RawMessage{a}, []json.RawMessage{same}, true}, // encoded again, unchanged
		{[]json.RawMessage{a}, []json.RawMessage{b}, false},
		{[]json.RawMessage{a}, []json.RawMessage{a, b}, false},
		{[]json.RawMessage{}, []json.RawMessage{}, true},
	} {
		if got := sameRows(c.x, c.y); got != c.want {
			t.Errorf("sameRows(%s, %s) = %v", c.x, c.y, got)
		}
	}
}
