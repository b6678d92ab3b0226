package cluster

import (
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/cluster/rendezvous"
	"github.com/termhost/termhost/actors/cluster/reservations"
	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/messages"
)

// Reservations: one create of a URI wins cluster-wide. Two clients that create the
// same session or terminal URI on two nodes at once would each pass their own node's
// check (neither is listed anywhere yet) and both be made. So the node that is about
// to make a client's session or terminal first reserves its URI at the URI's home
// node: the node with the highest rendezvous hash of (its address, the URI) among
// this node and the peers it knows (package rendezvous), so every node that knows
// the same members picks the same home. The home keeps who reserved each URI and refuses another node's
// reservation while the first one holds: while its node is alive and lists the URI,
// or for reservations.Hold after the reservation while its create is under way (a
// pseudoterminal is listed only once it has printed). The owner releases it when the
// channel goes; a lost node's go with it.
//
// It costs one request to the home node per client create (none to another node when
// the home is this one), made before the create, and nothing per keystroke or frame.
// A home that does not answer within reserveDeadline (its node just died) does not
// stop the create: it is made as before reservations were. Nodes that do not yet
// agree on the members (one is joining) may pick different homes for a moment.

// reserveDeadline is how long a create waits for the home's answer.
const reserveDeadline = 2 * time.Second

// home is the node that keeps uri's reservation: nil for this node.
func (n *node) home(uri string) *peer {
	nodes := func(yield func(string) bool) {
		if !yield(n.m.addr) {
			return
		}
		for addr := range n.peers {
			if !yield(addr) {
				return
			}
		}
	}
	if addr := rendezvous.Home(uri, nodes); addr != n.m.addr {
		return n.peers[addr]
	}
	return nil
}

// reserveFor asks the root's URI's home for it and answers the root with a
// *root.Reserved.
func (n *node) reserveFor(ctx actor.Context, m *root.Reserve) {
	r := &wire.Reserve{URI: m.URI, Addr: n.m.addr, Instance: n.m.instance}
	home := n.home(m.URI)
	if home == nil {
		ctx.Respond(&root.Reserved{Taken: n.decideReserve(r)})
		return
	}
	f := ctx.RequestFuture(home.pid, r, reserveDeadline)
	ctx.ReenterAfter(f, func(res any, err error) {
		a, ok := wire.Decode(res).(*wire.ReserveAnswer)
		if err != nil || !ok {
			n.m.opts.Logger.Warn("a URI's home node did not answer its reservation; the create goes ahead", "uri", m.URI, "home", home.name)
			a = &wire.ReserveAnswer{}
		}
		ctx.Respond(&root.Reserved{Taken: a.Taken})
	})
}

// decideReserve is the home's verdict on r: true when another node holds the URI.
func (n *node) decideReserve(r *wire.Reserve) bool {
	return n.reserved.Take(r.URI, reservations.Holder{Addr: r.Addr, Instance: r.Instance, At: time.Now()},
		func(h reservations.Holder) bool { return n.holds(h, r.URI) })
}

// holds says whether a reservation still stands: its node is the one that made it and
// lists the URI, or has had no time to yet.
func (n *node) holds(r reservations.Holder, uri string) bool {
	lists := false
	if r.Addr == n.m.addr {
		if r.Instance != n.m.instance {
			return false
		}
		lists = n.lists(uri)
	} else {
		p := n.peers[r.Addr]
		if p == nil || p.instance != r.Instance {
			return false
		}
		lists = slices.ContainsFunc(p.rows, func(row messages.TerminalInfo) bool { return row.Resource == uri }) ||
			slices.Contains(p.chats, uri) ||
			slices.ContainsFunc(p.sessions, func(s map[string]any) bool { return s["resource"] == uri })
	}
	return lists || r.Fresh()
}

// release gives back a reservation of this node's (the root's word that the channel
// is gone), at its home.
func (n *node) release(ctx actor.Context, m *root.Release) {
	r := &wire.ReserveRelease{URI: m.URI, Addr: n.m.addr, Instance: n.m.instance}
	if home := n.home(m.URI); home != nil {
		ctx.Send(home.pid, r)
		return
	}
	n.released(r)
}

func (n *node) released(r *wire.ReserveRelease) {
	n.reserved.Release(r.URI, r.Addr, r.Instance)
}
