package main

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// A node that stalls (a long pause, a busy machine's stolen time; SIGSTOP here) long
// enough for the membership provider to notice stays in the cluster: once it runs
// again, a client of another node types into its terminal and sees the answer, and
// its terminal never exited there. (protoactor-go's own providers dropped such a
// node at once, and a member dropped once is refused by every node for good.)
func TestClusterSeedsNodeThatStallsStays(t *testing.T) {
	t.Parallel()
	ctx, a, b, _ := seedsCluster(t)
	// The seeds provider's sign: node a missed a poll of node b's seed.
	stallUntil(t, ctx, a, b, "a seed did not answer this node's poll", "127.0.0.1:"+b.arg("--seed-port"))
}

func TestClusterEtcdNodeThatStallsStays(t *testing.T) {
	t.Parallel()
	ctx, a, b, _ := etcdCluster(t)
	// The etcd provider's sign: node b's lease expired, and node a saw its key go.
	stallUntil(t, ctx, a, b, "a member's key vanished from etcd", b.nodeAddr)
}

// stallUntil stops node b until node a logs a line holding every one of sign (the
// provider noticed), and then has a client of node a type into b's terminal.
func stallUntil(t *testing.T, ctx context.Context, a, b *clusterNode, sign ...string) {
	t.Helper()
	watcher := a.dial(ctx, "watcher")
	st, onB, _ := subscribeStream(t, ctx, watcher, "ahp-terminal:/on-b")
	onB.data.WriteString(st.Text())
	onB.untilPrompt(ctx) // typing before the prompt could be lost

	before := len(a.logs())
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitLogSince(t, ctx, a, before, sign...)
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

// arg is the value n was started with for flag.
func (n *clusterNode) arg(flag string) string {
	for i, a := range n.args {
		if a == flag && i+1 < len(n.args) {
			return n.args[i+1]
		}
	}
	return ""
}
