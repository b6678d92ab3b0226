package ahp_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/pty"
	"github.com/termhost/termhost/server/ahp"
)

// BenchmarkKeystrokeInputPath is the keystroke's way in, end to end inside the host: a
// dispatchAction frame handed to a connection actor (decode, admit, route), taken by a
// real terminal (written to its pseudoterminal, where cat reads it) and echoed as the
// stamped terminal/input envelope on the connection's outbox. One op is one keystroke.
func BenchmarkKeystrokeInputPath(b *testing.B) {
	if !pty.Available() {
		b.Skip("no pseudoterminal here")
	}
	r := newRig(b)
	c := r.connect(r.principal("bench", auth.RoleOwner))
	c.ask(initialize, "1")
	uri := "ahp-terminal:/bench-input"
	c.ask(`{"jsonrpc":"2.0","id":2,"method":"createTerminal","params":{"channel":"`+uri+`","_meta":{"x-termhost":{"command":"stty raw -echo; echo ready; exec cat >/dev/null"}}}}`, "2")
	c.ask(`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"`+uri+`"}}`, "3")
	ctx := context.Background()
	echoed := []byte(`"type":"terminal/input"`)
	b.ReportAllocs()
	seq := 0
	for b.Loop() {
		seq++
		frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"terminal/input","data":"l"}}}`, uri, seq)
		r.system.Root.Send(c.pid, &ahp.Frame{Data: frame})
	wait:
		for {
			frames, err := c.ob.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range frames {
				if bytes.Contains(f, echoed) {
					break wait
				}
			}
		}
	}
}
