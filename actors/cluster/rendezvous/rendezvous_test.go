package rendezvous

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Every node that knows the same members picks the same home for a URI, whatever
// order it lists them in: that is what makes a reservation's home one node.
func TestHomeIsTheSameInAnyOrder(t *testing.T) {
	addrs := []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000", "10.0.0.4:7000"}
	for i := range 200 {
		uri := fmt.Sprintf("ahp-session:/s%d", i)
		want := Home(uri, slices.Values(addrs))
		if !slices.Contains(addrs, want) {
			t.Fatalf("the home of %s is %q, not one of the nodes", uri, want)
		}
		for _, order := range [][]string{
			{addrs[3], addrs[2], addrs[1], addrs[0]},
			{addrs[2], addrs[0], addrs[3], addrs[1]},
		} {
			if got := Home(uri, slices.Values(order)); got != want {
				t.Fatalf("the home of %s is %s listed one way and %s another", uri, want, got)
			}
		}
	}
}

// URIs with random ids spread over the nodes, and a node that leaves moves only the
// URIs it was home to.
func TestHomesSpreadAndMoveOnlyWithTheirNode(t *testing.T) {
	addrs := []string{"a:1", "b:1", "c:1"}
	homes := map[string]string{}
	count := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		uri := fmt.Sprintf("ahp-terminal:/%016x", rng.Uint64())
		homes[uri] = Home(uri, slices.Values(addrs))
		count[homes[uri]]++
	}
	for _, a := range addrs {
		if count[a] < 50 {
			t.Fatalf("of 300 URIs, %s is home to %d: %v", a, count[a], count)
		}
	}
	for uri, home := range homes {
		got := Home(uri, slices.Values(addrs[:2]))
		if home != "c:1" && got != home {
			t.Fatalf("%s moved from %s to %s when c:1 left", uri, home, got)
		}
	}
}

// Equal weights (here: one address listed twice) go to the greater address, and no
// node is no home.
func TestHomeTiesAndNone(t *testing.T) {
	if got := Home("k", slices.Values([]string{"b:1", "b:1"})); got != "b:1" {
		t.Fatalf("home of one address listed twice: %q", got)
	}
	if got := Home("k", slices.Values([]string(nil))); got != "" {
		t.Fatalf("home among no nodes: %q", got)
	}
}
