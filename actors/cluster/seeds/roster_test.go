package seeds

import (
	"errors"
	"slices"
	"testing"
)

var errTimeout = errors.New("timeout")

func ids(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// A node that misses fewer polls in a row than allowed stays a member throughout;
// one that misses the last allowed leaves, and is back when it answers again.
func TestRosterKeepsAStalledNodeAndLetsADeadOneGo(t *testing.T) {
	self := &Node{ID: "self", ClusterName: "c"}
	b := &Node{ID: "b", ClusterName: "c"}
	r := NewRoster("c", self, []string{"s:1", "b:1"}, 3)

	if got := r.Observe("s:1", self, nil); got != Unchanged {
		t.Fatalf("this node's own seed answering: %v, want Unchanged", got)
	}
	if got := r.Observe("b:1", b, nil); got != Answers {
		t.Fatalf("b's first answer: %v, want Answers", got)
	}
	if got := ids(r.Members()); !slices.Equal(got, []string{"self", "b"}) {
		t.Fatalf("members: %v", got)
	}
	// A stall: two misses, then an answer. b never leaves.
	for i := range 2 {
		if got := r.Observe("b:1", nil, errTimeout); got != Missed {
			t.Fatalf("miss %d: %v, want Missed", i+1, got)
		}
		if got := ids(r.Members()); !slices.Equal(got, []string{"self", "b"}) {
			t.Fatalf("members after miss %d: %v", i+1, got)
		}
	}
	if got := r.Observe("b:1", b, nil); got != Unchanged {
		t.Fatalf("b answering after two misses: %v, want Unchanged", got)
	}
	// Death: three misses in a row, and b leaves; more misses change nothing.
	want := []Change{Missed, Missed, Lost, Unchanged, Unchanged}
	for i, w := range want {
		if got := r.Observe("b:1", nil, errTimeout); got != w {
			t.Fatalf("miss %d after the answer: %v, want %v", i+1, got, w)
		}
	}
	if got := ids(r.Members()); !slices.Equal(got, []string{"self"}) {
		t.Fatalf("members after b missed three: %v", got)
	}
	// Restarted, b answers as a new instance and is a member again.
	b2 := &Node{ID: "b2", ClusterName: "c"}
	if got := r.Observe("b:1", b2, nil); got != Answers {
		t.Fatalf("b restarted: %v, want Answers", got)
	}
	if got := ids(r.Members()); !slices.Equal(got, []string{"self", "b2"}) {
		t.Fatalf("members after b restarted: %v", got)
	}
}

// This node is a member whatever its own seed answers; a node of another cluster, a
// seed not polled and a seed not yet answering are not; a node named by two seeds is
// listed once.
func TestRosterMembers(t *testing.T) {
	self := &Node{ID: "self", ClusterName: "c"}
	r := NewRoster("c", self, []string{"s:1", "o:1", "x:1", "x2:1", "late:1"}, 3)
	r.Observe("s:1", nil, errTimeout)
	r.Observe("o:1", &Node{ID: "other", ClusterName: "not-c"}, nil)
	r.Observe("x:1", &Node{ID: "x", ClusterName: "c"}, nil)
	r.Observe("x2:1", &Node{ID: "x", ClusterName: "c"}, nil)
	if got := r.Observe("nowhere:1", &Node{ID: "n", ClusterName: "c"}, nil); got != Unchanged {
		t.Fatalf("a seed not polled: %v", got)
	}
	if got := r.Observe("late:1", nil, errTimeout); got != Missed {
		t.Fatalf("a seed not answering yet: %v, want Missed", got)
	}
	if got := ids(r.Members()); !slices.Equal(got, []string{"self", "x"}) {
		t.Fatalf("members: %v", got)
	}
	client := NewRoster("c", nil, []string{"x:1"}, 3)
	client.Observe("x:1", &Node{ID: "x", ClusterName: "c"}, nil)
	if got := ids(client.Members()); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("a client's members: %v", got)
	}
}
