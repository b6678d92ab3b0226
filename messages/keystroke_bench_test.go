package messages_test

import (
	"testing"

	"github.com/termhost/termhost/messages"
)

// BenchmarkKeystrokeEncode is what a keystroke's two envelopes cost to encode: the
// echoed terminal/input with its origin, and the terminal/data the process answers
// with (one character each).
func BenchmarkKeystrokeEncode(b *testing.B) {
	input := []byte(`{"type":"terminal/input","data":"l"}`)
	origin := &messages.Origin{ClientID: "bench-client", ClientSeq: 12345}
	b.ReportAllocs()
	for b.Loop() {
		in := messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-terminal:/bench-t1", Action: input, Origin: origin, ServerSeq: 1000})
		out := messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-terminal:/bench-t1", Action: messages.DataAction("l"), ServerSeq: 1001})
		if len(in) == 0 || len(out) == 0 {
			b.Fatal("empty frame")
		}
	}
}
