package terminal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// TestSubscribeDuringAFlood subscribes a second client while a command floods the
// terminal: its snapshot and every terminal/data after it are exactly the output,
// as a subscriber from the start saw it, with no byte lost or doubled between the
// two (the subscribe is answered inside the terminal's mailbox, between two chunks).
// The scrollback cap is raised above the output so the snapshot holds all of it.
func TestSubscribeDuringAFlood(t *testing.T) {
	for _, mode := range []struct {
		name   string
		usePty bool
	}{{"pty", true}, {"pipes", false}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.usePty && !pty.Available() {
				t.Skip("no pseudoterminal here")
			}
			const half = 150_000 // 1.9 MB of output in all
			system := newTestSystem(t)
			r := testRoot{cfg: Config{UsePty: mode.usePty, ScrollbackLimit: 8 << 20}}
			uri := "ahp-terminal:/flood"
			// The second half waits for a line typed once the late subscriber is in,
			// so it floods after that snapshot however fast the machine is; the first
			// half is most likely still arriving when it subscribes.
			terminalPID, first := r.start(t, system, &Create{URI: uri, Claim: clientClaim("c"),
				Spec: Spec{Shell: "/bin/sh", Command: fmt.Sprintf("seq 1 %d; read line; seq %d %d", half, half+1, 2*half)}})
			first.waitUntil(t, "the flood", func() bool { return len(first.output()) >= 64<<10 })

			late := newCollector()
			st := subscribe(t, system, terminalPID, uri, late)
			late.mu.Lock()
			late.snapshot = contentText(st)
			late.mu.Unlock()
			newline := "\n"
			if mode.usePty {
				newline = "\r\n"
			}
			first.waitOutput(t, fmt.Sprintf("%s%d%s", newline, half, newline))
			dispatcher(system, terminalPID, uri, "c", first)(input("\r"))
			for _, c := range []*collector{first, late} {
				c.waitUntil(t, "exit", func() bool { return len(c.actions(messages.TerminalExited)) > 0 })
			}

			var want strings.Builder
			for i := 1; i <= 2*half; i++ {
				fmt.Fprintf(&want, "%d%s", i, newline)
				if i == half && mode.usePty {
					want.WriteString("\r\n") // the terminal's echo of the typed line
				}
			}
			t.Logf("the late subscriber's snapshot held %d of %d characters", len(st.Content[0].Text()), want.Len())
			sameOutput(t, "from the start", first.output(), want.String())
			sameOutput(t, "mid-flood", late.output(), want.String())
		})
	}
}

// sameOutput fails with where got and want part, if they do.
func sameOutput(t *testing.T, who, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-40, 0)
	t.Fatalf("the subscriber %s saw %d characters, want %d; they part at %d: got %q, want %q", who, len(got), len(want), i,
		got[from:min(i+40, len(got))], want[from:min(i+40, len(want))])
}
