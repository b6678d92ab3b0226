package proxy

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

// A proxy does not apply a keystroke's echo to its state: only the output waiting
// would be folded by it. The state read at any point is the same as when every
// echo is applied, whatever the output and the scrollback's limit.
func TestSkippingInputLeavesTheSameState(t *testing.T) {
	pieces := []string{"a", "bc\r\n", "é", "中文", strings.Repeat("x", 40), "\r\n", "$ ", strings.Repeat("yz", 90)}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		limit := 1 + rng.IntN(120)
		all, skip := messages.Scrollback{Limit: limit}, messages.Scrollback{Limit: limit}
		var sAll, sSkip messages.TerminalState
		for step := range 300 {
			var a *messages.Action
			switch r := rng.IntN(10); {
			case r < 6:
				d := pieces[rng.IntN(len(pieces))]
				a = &messages.Action{Type: messages.TerminalData, Data: &d}
			case r < 9:
				d := "k"
				a = &messages.Action{Type: messages.TerminalInput, Data: &d}
			default:
				a = nil // a snapshot
			}
			if a == nil {
				all.Settle(&sAll)
				skip.Settle(&sSkip)
				if !reflect.DeepEqual(sAll, sSkip) {
					t.Fatalf("seed %d step %d (limit %d): with every echo %+v, without %+v", seed, step, limit, sAll, sSkip)
				}
				continue
			}
			all.Apply(&sAll, a)
			if a.Type != messages.TerminalInput {
				skip.Apply(&sSkip, a)
			}
		}
		all.Settle(&sAll)
		skip.Settle(&sSkip)
		if !reflect.DeepEqual(sAll, sSkip) {
			t.Fatalf("seed %d (limit %d): with every echo %+v, without %+v", seed, limit, sAll, sSkip)
		}
	}
}
