package main

import (
	"context"
	"strings"
	"testing"
)

// A node known to another by its hello alone, never listed by that node's provider
// (here: outside its seeds), is still taken off that node's list when it dies. The
// provider, which never listed it, never says it is gone; its silence does.
func TestAnUnlistedNodeThatDiesIsLost(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	all := seedsFlags(t, 3)
	provider := func(slot int) []string {
		flags := all(slot)
		if slot != 1 {
			return flags
		}
		// Node b polls only b's and c's seeds: it hears of node a by a's hello.
		seeds := strings.Split(flags[1], ",")
		flags[1] = strings.Join(seeds[1:], ",")
		return flags
	}
	a, b, c := startThreeNodes(t, bin, provider, "the cluster's secret")
	_, rootB, _ := rootsThatListEveryNode(t, ctx, a, b, c)

	a.kill()
	two := map[string]string{"ahp-terminal:/on-b": "b", "ahp-terminal:/on-c": "c"}
	waitList(t, ctx, rootB, "node a's terminal off node b's list, where only a's hello had made a known", hasRows(two))
	if !strings.Contains(b.logs(), "it has not been heard from, and the membership provider does not list it") {
		t.Fatalf("node b took node a off its list for another reason:\n%s", b.logs())
	}
}
