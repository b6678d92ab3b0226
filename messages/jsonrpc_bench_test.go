package messages_test

import (
	"testing"

	"github.com/termhost/termhost/messages"
)

var benchFrame = []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t1","clientSeq":12345,"action":{"type":"terminal/input","data":"l"}}}`)

func BenchmarkParseInboundKeystroke(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, e := messages.ParseInbound(benchFrame); e != nil {
			b.Fatal(e)
		}
	}
}
