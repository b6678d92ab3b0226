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
type LocalRows struct{ Rows []messages.TerminalInfo }

// RemoteRows replaces the rows another node (Source, its address) lists: the root
// lists them after its own, and routes their URIs to the node actor. No rows take
// that node's off the list.
type RemoteRows struct {
	Source string
	Rows   []messages.TerminalInfo
}

// NodeMeta is the _meta key a row names its node by.
const NodeMeta = "node"

func (h *rootActor) clustered() bool { return h.opts.Cluster != nil }

// toCluster forwards the message being handled to the node actor when uri is a
// terminal another node owns, and reports whether it did.
func (h *rootActor) toCluster(ctx actor.Context, uri string) bool {
	if !h.remoteURIs[uri] {
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
	if len(m.Rows) == 0 {
		delete(h.remote, m.Source)
	} else {
		h.remote[m.Source] = m.Rows
	}
	clear(h.remoteURIs)
	for _, rows := range h.remote {
		for _, r := range rows {
			h.remoteURIs[r.Resource] = true
		}
	}
	h.publishTerminals(ctx)
}

// clusterList marks this node's rows with its name, tells the node actor when they
// changed, and lists the other nodes' rows after them, by node.
func (h *rootActor) clusterList(ctx actor.Context, local []messages.TerminalInfo) []messages.TerminalInfo {
	if !h.clustered() {
		return local
	}
	for i := range local {
		meta := maps.Clone(local[i].Meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[NodeMeta] = h.opts.Node
		local[i].Meta = meta
	}
	// Only a change of its own: a node that told the others its rows each time theirs
	// came would have them all echoing one another without end.
	if !reflect.DeepEqual(local, h.sentLocal) {
		h.sentLocal = slices.Clone(local)
		ctx.Send(h.opts.Cluster, &LocalRows{Rows: h.sentLocal})
	}
	list := local
	for _, source := range slices.Sorted(maps.Keys(h.remote)) {
		list = append(list, h.remote[source]...)
	}
	return list
}
