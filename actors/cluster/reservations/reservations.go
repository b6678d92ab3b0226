// Package reservations owns a home node's book of URI reservations: which node (by
// address and instance) reserved each session or terminal URI whose home it is, and
// the rule that a later reservation by another node is refused while the first one
// stands. Whether it stands (its node alive and listing the URI) is the node
// actor's to say; the book asks, and keeps the rest.
package reservations

import "time"

// Hold is how long a reservation stands before its URI is listed: a
// pseudoterminal is listed only once it has printed, and its create is under way
// meanwhile.
const Hold = 30 * time.Second

// A Holder is the node that reserved a URI, and when.
type Holder struct {
	Addr, Instance string
	At             time.Time
}

// Fresh says whether the reservation is within Hold of being made.
func (h Holder) Fresh() bool { return time.Since(h.At) < Hold }

// A Book is a home node's reservations, by URI. The zero value is empty and ready.
type Book struct{ held map[string]Holder }

// Take reserves uri for h unless another node (another address, or another instance
// at the same address: the node restarted) holds it and stands(holder) says its
// reservation still stands; it reports whether uri was taken by that other node.
func (b *Book) Take(uri string, h Holder, stands func(Holder) bool) (taken bool) {
	if cur, ok := b.held[uri]; ok && (cur.Addr != h.Addr || cur.Instance != h.Instance) && stands(cur) {
		return true
	}
	if b.held == nil {
		b.held = map[string]Holder{}
	}
	b.held[uri] = h
	return false
}

// Release gives uri back if the node at addr, as instance, holds it.
func (b *Book) Release(uri, addr, instance string) {
	if cur, ok := b.held[uri]; ok && cur.Addr == addr && cur.Instance == instance {
		delete(b.held, uri)
	}
}

// Drop forgets every reservation of the node at addr, which is gone.
func (b *Book) Drop(addr string) {
	for uri, h := range b.held {
		if h.Addr == addr {
			delete(b.held, uri)
		}
	}
}
