package main

import (
	"strings"
	"testing"
)

// A node stopped with SIGTERM marks its key in etcd as leaving before it removes it:
// the others let it go at once, not after the grace a key that vanished gets (a dead
// node's, or a stalled one's). (Its terminal leaves their lists before that either
// way: a node that stops ends its terminals and says so.)
func TestClusterEtcdNodeThatLeavesGoesAtOnce(t *testing.T) {
	t.Parallel()
	ctx, a, _, c := etcdCluster(t)
	rootA := a.dial(ctx, "root-a2")

	c.stop()
	two := map[string]string{"ahp-terminal:/on-a": "a", "ahp-terminal:/on-b": "b"}
	waitList(t, ctx, rootA, "node c's terminal off node a's list", hasRows(two))
	waitLog(t, ctx, a, "a node was lost", c.nodeAddr, "the membership provider no longer lists it")
	// Let go past the grace, node a would have said so before it took node c for lost.
	for _, line := range strings.Split(a.logs(), "\n") {
		if strings.Contains(line, "past the grace") && strings.Contains(line, c.nodeAddr) {
			t.Fatalf("node a waited out the grace for node c, which left: %s", line)
		}
	}
}

// A node that stops with SIGTERM tells the others first that it takes no new
// terminals: until their provider lets it go (three missed polls with seeds), a
// terminal placed with no node named goes to a node that is still there, though the
// one stopping holds the fewest.
func TestClusterNodeThatStopsIsPassedByAtOnce(t *testing.T) {
	t.Parallel()
	ctx, a, _, c := seedsCluster(t)
	placer := a.dial(ctx, "placer")
	c.stop()
	const uri = "ahp-terminal:/placed"
	createOn(t, ctx, placer, "placer", uri, "")
	if node := rootRows(t, ctx, placer)[uri]; node != "a" && node != "b" {
		t.Fatalf("a terminal placed just after node c stopped went to %q", node)
	}
}
