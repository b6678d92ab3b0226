package root

import (
	"maps"
	"reflect"
	"slices"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
)

// What the root does on a cluster node (Options.Node and Options.Cluster set; see
// actors/cluster). On a host alone none of it runs: no row carries a node and nothing
// is routed anywhere else.

// LocalRows is this node's own rows, each with its node in _meta.node, sent to the
// node actor whenever they change so that it tells the other nodes.
// Chats are the chats of this node's sessions: a terminal a command of one of them ran
// in (retained or live) is routed here from every node by its chat.
type LocalRows struct {
	Rows  []messages.TerminalInfo
	Chats []string
}

// RemoteRows replaces the rows another node (Source, its address) lists: the root
// lists them after its own, and routes their URIs to the node actor. No rows take
// that node's off the list.
type RemoteRows struct {
	Source string
	Rows   []messages.TerminalInfo
	Chats  []string
}

// ResendRows asks the root to send the node actor its rows and chats again: the node
// actor starts after the root, and what the root said before that went nowhere.
type ResendRows struct{}

// withNode is info as a row of this node's: on a cluster node its _meta names the
// node. It is added when the row is stored, so the row encoded once (rootlist.go) is
// the row every list shows.
func (h *rootActor) withNode(info messages.TerminalInfo) messages.TerminalInfo {
	if !h.clustered() {
		return info
	}
	meta := maps.Clone(info.Meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[NodeMeta] = h.opts.Node
	info.Meta = meta
	return info
}

// NodeMeta is the _meta key a row names its node by.
const NodeMeta = "node"

func (h *rootActor) clustered() bool { return h.opts.Cluster != nil }

// toCluster forwards the message being handled to the node actor when uri is a
// terminal another node owns, and reports whether it did.
//
// In a cluster every channel not held here goes, listed or not: a terminal this
// node has just placed on another is known to the node actor from the create's
// answer, before that node's rows say so here, and its creator may subscribe the
// moment it has the answer. The node actor answers for a channel nobody owns as the
// root would.
func (h *rootActor) toCluster(ctx actor.Context, uri string) bool {
	if !h.clustered() {
		return false
	}
	ctx.Forward(h.opts.Cluster)
	return true
}

// placeInCluster hands a client's create to the node actor to be placed, unless it is
// already placed here; a session's terminal (one with a watcher) stays on the
// session's node.
func (h *rootActor) placeInCluster(ctx actor.Context, m *terminal.Create) bool {
	if !h.clustered() || m.Watcher != nil || m.Node == h.opts.Node {
		return false
	}
	ctx.Forward(h.opts.Cluster)
	return true
}

func (h *rootActor) remoteRows(ctx actor.Context, m *RemoteRows) {
	// Each remote row is encoded once when it arrives, as a local one is when it
	// changes (rootlist.go).
	for _, r := range h.remote[m.Source] {
		delete(h.remoteURIs, r.Resource)
	}
	if len(m.Rows) == 0 {
		delete(h.remote, m.Source)
	} else {
		h.remote[m.Source] = m.Rows
	}
	for _, r := range m.Rows {
		h.remoteURIs[r.Resource] = encodeRow(r)
	}
	if len(m.Chats) == 0 {
		delete(h.remoteChats, m.Source)
	} else {
		h.remoteChats[m.Source] = m.Chats
	}
	h.publishTerminals(ctx)
}

// clusterList marks this node's rows with its name, tells the node actor when they
// changed, and lists the other nodes' rows after them, by node.
func (h *rootActor) clusterList(ctx actor.Context, local []messages.TerminalInfo) []messages.TerminalInfo {
	if !h.clustered() {
		return local
	}
	// Only a change of its own: a node that told the others its rows each time theirs
	// came would have them all echoing one another without end.
	chats := slices.Sorted(maps.Keys(h.chats))
	if !reflect.DeepEqual(local, h.sentLocal) || !slices.Equal(chats, h.sentChats) {
		h.sentLocal, h.sentChats = slices.Clone(local), chats
		ctx.Send(h.opts.Cluster, &LocalRows{Rows: h.sentLocal, Chats: chats})
	}
	list := local
	for _, source := range slices.Sorted(maps.Keys(h.remote)) {
		list = append(list, h.remote[source]...)
	}
	return list
}
