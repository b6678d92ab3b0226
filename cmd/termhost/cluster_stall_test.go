package main

import (
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// A node that stalls (a long pause, a busy machine's stolen time; SIGSTOP here) misses
// a poll of the seeds provider. It stays in the cluster: once it runs again, a client
// of another node types into its terminal and sees the answer, and its terminal never
// exited there. (protoactor-go's own automanaged provider dropped a node at its first
// missed poll, and a member dropped once is refused by every node for good.)
func TestClusterSeedsNodeThatStallsStays(t *testing.T) {
	t.Parallel()
	ctx, a, b, _ := seedsCluster(t)
	watcher := a.dial(ctx, "watcher")
	st, onB, _ := subscribeStream(t, ctx, watcher, "ahp-terminal:/on-b")
	onB.data.WriteString(st.Text())
	onB.untilPrompt(ctx) // typing before the prompt could be lost

	before := len(a.logs())
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitLogSince(t, ctx, a, before, seedMissLine, "127.0.0.1:"+b.arg("--seed-port"))
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	_ = watcher.Dispatch(ctx, "ahp-terminal:/on-b", 1, map[string]any{"type": "terminal/input", "data": "echo back-$((2+3))\r"})
	end := onB.until(ctx, "the command's output", func(e *client.Envelope) bool {
		return e.Type == messages.TerminalExited || strings.Contains(onB.data.String(), "back-5")
	})
	if end.Type == messages.TerminalExited {
		t.Fatalf("node b's terminal exited on node a when b stalled: %s", end.Action)
	}
}

// seedMissLine is in what a node logs when a seed did not answer its poll (one miss,
// or the last before it lets the seed's node go).
const seedMissLine = "a seed did not answer this node's poll"

// arg is the value n was started with for flag.
func (n *clusterNode) arg(flag string) string {
	if i := slices.Index(n.args, flag); i >= 0 && i+1 < len(n.args) {
		return n.args[i+1]
	}
	return ""
}
