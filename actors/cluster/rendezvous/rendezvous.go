// Package rendezvous picks a key's home among a set of nodes by rendezvous (highest
// random weight) hashing: each node's weight for the key is a hash of its address
// and the key, and the heaviest is the home. Every node that knows the same set
// picks the same home, whatever order it lists them in, and a node joining or
// leaving moves only the keys it wins or held. It is pure: no state, no I/O, and it
// knows nothing of what a node or a key is beyond their strings.
//
// Package cluster reserves a client's new URI at the URI's home (reserve.go).
package rendezvous

import (
	"hash/fnv"
	"iter"
)

// Home is the address among addrs with the highest weight for key, ties going to
// the greater address; "" when addrs is empty.
func Home(key string, addrs iter.Seq[string]) string {
	home, best := "", uint64(0)
	for addr := range addrs {
		if w := weight(addr, key); home == "" || w > best || w == best && addr > home {
			home, best = addr, w
		}
	}
	return home
}

// weight is addr's weight for key: FNV-1a of the address, a zero byte, the key.
// FNV-1a stirs its last bytes in weakly: keys that differ only in their last
// characters (t1, t2, …) spread over the nodes unevenly; keys with random ids spread
// evenly.
func weight(addr, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(addr))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}
