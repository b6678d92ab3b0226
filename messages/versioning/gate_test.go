package versioning

import (
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestActionGateHoldsBackOnlyWhatTheVersionDoesNotKnow(t *testing.T) {
	frame := func(typ, text string) []byte {
		return messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-chat:/c", Action: []byte(`{"type":"` + typ + `","text":` + text + `}`), ServerSeq: 9})
	}
	bg := frame("chat/backgroundWorkSet", `"x"`)
	wd := frame("chat/workingDirectorySet", `"x"`)
	// A delta whose text names a newer action is still a delta.
	delta := frame("chat/delta", `"\"chat/backgroundWorkSet\""`)
	for _, tc := range []struct {
		version      string
		bg, wd, text bool
	}{
		{"1.0.0", true, true, true},
		{"0.9.0", true, true, true},
		{"0.8.0", false, true, true},
		{"0.6.0", false, false, true},
		{"not a version", true, true, true},
	} {
		g := NewActionGate(tc.version)
		if got := g.Admits(bg); got != tc.bg {
			t.Errorf("%s: backgroundWorkSet admitted %v, want %v", tc.version, got, tc.bg)
		}
		if got := g.Admits(wd); got != tc.wd {
			t.Errorf("%s: workingDirectorySet admitted %v, want %v", tc.version, got, tc.wd)
		}
		if got := g.Admits(delta); got != tc.text {
			t.Errorf("%s: a delta naming a newer action admitted %v, want %v", tc.version, got, tc.text)
		}
		if !g.Admits([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`)) {
			t.Errorf("%s: an answer was held back", tc.version)
		}
	}
	if NewActionGate("1.0.0") != nil {
		t.Error("a current version has a gate: every frame would pay for it")
	}
}
