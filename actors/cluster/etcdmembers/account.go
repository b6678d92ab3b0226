package etcdmembers

import (
	"slices"
	"time"
)

// Node is a member as its key in etcd holds it (JSON).
type Node struct {
	ID    string   `json:"id"`
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Kinds []string `json:"kinds"`
	// Leaving is set by a node that shuts down: the others let it go at once,
	// without waiting out the grace a vanished key gets.
	Leaving bool `json:"leaving,omitempty"`
}

// Account is what a provider knows of the members: the keys etcd holds, and the
// keys that vanished less than a grace ago (a lease that expired while its node
// stalled: the node puts its key back as soon as it runs again). It is pure; the
// provider's loop owns it.
type Account struct {
	grace   time.Duration
	present map[string]Node
	vanish  map[string]vanished
}

type vanished struct {
	node Node
	at   time.Time
}

// NewAccount keeps a vanished key's node a member for grace.
func NewAccount(grace time.Duration) *Account {
	return &Account{grace: grace, present: map[string]Node{}, vanish: map[string]vanished{}}
}

// Reset replaces what etcd holds (a fresh read of every key); a node that was a
// member and is no longer there vanishes at now.
func (a *Account) Reset(nodes []Node, now time.Time) {
	was := a.present
	a.present = map[string]Node{}
	for _, n := range nodes {
		a.Put(n)
	}
	for id, n := range was {
		if _, ok := a.present[id]; !ok {
			a.present[id] = n
			a.Delete(id, now)
		}
	}
}

// Put is a key written: a node joined, came back, or (Leaving) is going.
func (a *Account) Put(n Node) {
	delete(a.vanish, n.ID)
	if n.Leaving {
		delete(a.present, n.ID)
		return
	}
	a.present[n.ID] = n
}

// Present is the node whose key etcd holds under id, if any.
func (a *Account) Present(id string) (Node, bool) {
	n, ok := a.present[id]
	return n, ok
}

// Delete is a key gone at now: its node stays a member for the grace.
func (a *Account) Delete(id string, now time.Time) {
	n, ok := a.present[id]
	if !ok {
		return
	}
	delete(a.present, id)
	a.vanish[id] = vanished{node: n, at: now}
}

// Expire lets go of the nodes whose keys vanished a grace or more before now.
func (a *Account) Expire(now time.Time) (gone []Node) {
	for id, v := range a.vanish {
		if !now.Before(v.at.Add(a.grace)) {
			delete(a.vanish, id)
			gone = append(gone, v.node)
		}
	}
	return gone
}

// Next is when the next vanished node's grace ends (zero when none waits).
func (a *Account) Next() (next time.Time) {
	for _, v := range a.vanish {
		if end := v.at.Add(a.grace); next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return next
}

// Members are the nodes present and those still within their grace, by id.
func (a *Account) Members() []Node {
	out := make([]Node, 0, len(a.present)+len(a.vanish))
	for _, n := range a.present {
		out = append(out, n)
	}
	for _, v := range a.vanish {
		out = append(out, v.node)
	}
	slices.SortFunc(out, func(x, y Node) int {
		switch {
		case x.ID < y.ID:
			return -1
		case x.ID > y.ID:
			return 1
		}
		return 0
	})
	return out
}
