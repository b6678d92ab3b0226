package etcdmembers

import (
	"slices"
	"testing"
	"time"
)

func ids(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// A node whose key vanishes stays a member for the grace: put back within it (a
// stalled node that runs again), it never left; not put back, it goes when the grace
// is over, and only then.
func TestAccountKeepsAVanishedNodeForTheGrace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewAccount(4 * time.Second)
	a.Reset([]Node{{ID: "a"}, {ID: "b"}}, t0)

	a.Delete("b", t0.Add(time.Second))
	if gone, next := a.Expire(t0.Add(3*time.Second)), a.Next(); len(gone) != 0 || !next.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("within the grace: gone %v, next %v", gone, next)
	}
	if got := ids(a.Members()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("members within the grace: %v", got)
	}
	a.Put(Node{ID: "b"})
	if gone, next := a.Expire(t0.Add(10*time.Second)), a.Next(); len(gone) != 0 || !next.IsZero() {
		t.Fatalf("put back: gone %v, next %v", gone, next)
	}

	a.Delete("b", t0.Add(20*time.Second))
	if gone := a.Expire(t0.Add(24*time.Second - time.Nanosecond)); len(gone) != 0 {
		t.Fatalf("just before the grace ends: gone %v", gone)
	}
	if gone, next := a.Expire(t0.Add(24*time.Second)), a.Next(); !slices.Equal(ids(gone), []string{"b"}) || !next.IsZero() {
		t.Fatalf("when the grace ends: gone %v, next %v", ids(gone), next)
	}
	if got := ids(a.Members()); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("members after the grace: %v", got)
	}
}

// A node that marks its key as leaving goes at once; a fresh read of every key
// keeps a node missing from it for the grace, as a deleted key.
func TestAccountLeavingAndReset(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := NewAccount(4 * time.Second)
	a.Reset([]Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}, t0)
	a.Put(Node{ID: "c", Leaving: true})
	a.Delete("c", t0) // the key's removal after the mark
	if got := ids(a.Members()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("members after c left: %v", got)
	}
	a.Reset([]Node{{ID: "a"}, {ID: "d"}}, t0.Add(time.Second))
	if got := ids(a.Members()); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("members after a read without b: %v", got)
	}
	if gone := a.Expire(t0.Add(5 * time.Second)); !slices.Equal(ids(gone), []string{"b"}) {
		t.Fatalf("gone after the grace: %v", ids(gone))
	}
}
