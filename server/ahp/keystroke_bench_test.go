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

// BenchmarkKeystrokeDecode is the frame to a typed dispatch. one-pass is what a
// keystroke in the clients' shape takes (decodeKeystroke); general is every other
// frame's path: the JSON-RPC envelope, the params and the action, each checked for
// exact member names.
func BenchmarkKeystrokeDecode(b *testing.B) {
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p dispatchParams
			var a messages.Action
			if !decodeKeystroke(keystrokeFrame, &p, &a) {
				b.Fatal("not read in one pass")
			}
		}
	})
	b.Run("general", func(b *testing.B) {
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
	})
}

// BenchmarkKeystrokeAdmit is who is asking, read again as for every frame (the users
// file may have changed), and the grant the action needs. follow is what a frame
// does (auth.Store.Follow: one stat); authenticate is the full sign-in it replaced
// (a stat, the token hashed, the tokens searched).
func BenchmarkKeystrokeAdmit(b *testing.B) {
	store, err := auth.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tok, err := store.AddToken("bench", auth.RoleOwner)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		who  func() (auth.Principal, bool)
	}{
		{"follow", store.Follow(tok)},
		{"authenticate", func() (auth.Principal, bool) { return store.Authenticate(tok) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, ok := bc.who()
				if !ok || !p.Can(auth.ActionGrant(messages.TerminalInput)) {
					b.Fatal("refused")
				}
			}
		})
	}
}
