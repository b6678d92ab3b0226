package ahp

import (
	"testing"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// The keystroke path, hop by hop (issue 13). A keystroke is a dispatchAction frame:
// it is decoded here (BenchmarkKeystrokeDecode), admitted here (BenchmarkKeystrokeAdmit),
// routed to its terminal (BenchmarkKeystrokeInputPath in package server/ahp_test, with
// a real terminal), written to the pseudoterminal (pty.BenchmarkKeystrokePtyWrite),
// stamped (delivery.BenchmarkKeystrokeStamp), encoded (messages.BenchmarkKeystrokeEncode)
// and written to the socket (server.BenchmarkKeystrokeSocketWrite).

var keystrokeFrame = []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/bench-t1","clientSeq":12345,"action":{"type":"terminal/input","data":"l"}}}`)

// BenchmarkKeystrokeDecode is the frame to a typed dispatch: the JSON-RPC envelope, the
// params and the action, each checked for exact member names.
func BenchmarkKeystrokeDecode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		msg, e := messages.ParseInbound(keystrokeFrame)
		if e != nil {
			b.Fatal(e)
		}
		var p dispatchParams
		var a messages.Action
		if ok, reason := decodeDispatch(msg.Params, &p, &a); !ok || reason != "" {
			b.Fatal("not a dispatch", reason)
		}
	}
}

// BenchmarkKeystrokeAdmit is who is asking, read again as for every frame (the users
// file may have changed: one stat, a token hash), and the grant the action needs.
func BenchmarkKeystrokeAdmit(b *testing.B) {
	store, err := auth.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tok, err := store.AddToken("bench", auth.RoleOwner)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, ok := store.Authenticate(tok)
		if !ok || !p.Can(auth.ActionGrant(messages.TerminalInput)) {
			b.Fatal("refused")
		}
	}
}
