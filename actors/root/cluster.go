package root

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
)

// What the root does on a cluster node (Options.Node and Options.Cluster set; see
// actors/cluster). On a host alone none of it runs: no row carries a node and nothing
// is routed anywhere else.

// LocalRows is this node's own rows, each with its node in _meta.node, sent to the
// node actor whenever they change so that it tells the other nodes.
// Chats are the chats of this node's sessions: a terminal a command of one of them ran
// in (retained or live) is routed here from every node by its chat.
// Sessions are this node's sessions' summaries, each with its node in _meta.node:
// every node lists them, and routes their channels here.
type LocalRows struct {
	Rows     []messages.TerminalInfo
	Chats    []string
	Sessions []map[string]any
}

// RemoteRows replaces the rows another node (Source, its address) lists: the root
// lists them after its own, and routes their URIs to the node actor. No rows take
// that node's off the list.
// Lost says the node is gone (SIGKILL, a restart): its sessions leave the list, but
// they are not disposed, and they come back with it.
type RemoteRows struct {
	Source   string
	Rows     []messages.TerminalInfo
	Chats    []string
	Sessions []map[string]any
	Lost     bool
}

// RemotePresence is a client's coming or going on another node (a *session.ClientLeft
// or *session.ClientBack there), for this node's sessions.
type RemotePresence struct{ Msg any }

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
// terminal, a session or a chat another node holds, and reports whether it did.
func (h *rootActor) toCluster(ctx actor.Context, uri string) bool {
	if _, remote := h.remoteURIs[uri]; !remote && !h.remoteChat(uri) && !h.remoteSession(uri) {
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
	h.placeAndAnswer(ctx, m.URI, m, func(err *messages.Error) any { return &terminal.CreateResult{Err: err} })
	return true
}

// placeWait bounds the root's wait for a create it handed to the node actor, which
// itself waits up to channel.RequestTimeout for the node it placed the create on.
const placeWait = channel.RequestTimeout + 5*time.Second

// placeAndAnswer hands the create of uri being handled to the node actor and answers
// its sender with the node actor's answer. Until then a subscribe to uri waits here
// (waitCreate): a client that sends its subscribe right behind its create finds the
// channel, wherever it was placed, as on a host alone. The rows that list a channel
// made on another node reach this root before the answer does (the node actor sends
// them first), and the held subscribes are handled after them.
func (h *rootActor) placeAndAnswer(ctx actor.Context, uri string, m any, failed func(*messages.Error) any) {
	h.placing[uri]++
	f := ctx.RequestFuture(h.opts.Cluster, m, placeWait)
	ctx.ReenterAfter(f, func(res any, err error) {
		if h.placing[uri]--; h.placing[uri] <= 0 {
			delete(h.placing, uri)
		}
		if err != nil || res == nil {
			res = failed(messages.Errorf(messages.CodeInternalError, "Internal error: placing %s in the cluster did not answer in time", uri))
		}
		ctx.Respond(res)
		h.releaseHeld(ctx, uri)
	})
}

// remoteChat reports whether uri is a chat another node holds, or a command terminal
// of one.
func (h *rootActor) remoteChat(uri string) bool {
	chat, _, ok := toolterm.Parse(uri)
	if !ok {
		chat = uri
	}
	if h.chats[chat] != nil {
		return false
	}
	for _, chats := range h.remoteChats {
		if slices.Contains(chats, chat) {
			return true
		}
	}
	return false
}

// sameRows reports whether two lists of encoded rows are the same. A row is encoded
// once when it changes, so an unchanged row is the very same bytes: most rows are
// told apart by where their bytes are, not by reading them. (It was reflect.DeepEqual
// of the rows themselves, on every publish, which with a thousand terminals was
// most of what a publish cost; see BenchmarkSameRows.)
func sameRows(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		if len(a[i]) > 0 && &a[i][0] != &b[i][0] && !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
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
	h.remoteSessionsOf(ctx, m.Source, m.Sessions, m.Lost)
	h.publishTerminals(ctx)
}

// clusterList tells the node actor this node's rows (encoded: each one's encoding,
// see rootlist.go) when they changed, and lists the other nodes' rows after them, by
// node.
func (h *rootActor) clusterList(ctx actor.Context, local []messages.TerminalInfo, encoded []json.RawMessage) []messages.TerminalInfo {
	if !h.clustered() {
		return local
	}
	// Only a change of its own: a node that told the others its rows each time theirs
	// came would have them all echoing one another without end.
	chats := slices.Sorted(maps.Keys(h.chats))
	// (sentLocal is nil only before the first send and after ResendRows.)
	if h.sentLocal == nil || !sameRows(encoded, h.sentLocal) || !slices.Equal(chats, h.sentChats) || h.sessionsChanged {
		h.sentLocal, h.sentChats, h.localRows = encoded, chats, slices.Clone(local)
		h.sendLocal(ctx)
	}
	list := local
	for _, source := range slices.Sorted(maps.Keys(h.remote)) {
		list = append(list, h.remote[source]...)
	}
	return list
}

// sendLocal tells the node actor this node's rows, chats and sessions as last listed.
func (h *rootActor) sendLocal(ctx actor.Context) {
	h.sessionsChanged = false
	sessions := make([]map[string]any, 0, len(h.summaries))
	for _, uri := range slices.Sorted(maps.Keys(h.summaries)) {
		sessions = append(sessions, h.summaries[uri])
	}
	ctx.Send(h.opts.Cluster, &LocalRows{Rows: h.localRows, Chats: h.sentChats, Sessions: sessions})
}

// sessionsMoved tells the other nodes this node's sessions and chats now, when they
// changed without any terminal's row changing (a session made, disposed or renamed).
func (h *rootActor) sessionsMoved(ctx actor.Context) {
	if !h.clustered() {
		return
	}
	h.sessionsChanged = true
	if h.sentLocal == nil {
		return // the first publish sends them
	}
	h.sentChats = slices.Sorted(maps.Keys(h.chats))
	h.sendLocal(ctx)
}

// withNodeSummary is a session's summary as it is listed: on a cluster node its
// _meta names the node, as a terminal's row does.
func (h *rootActor) withNodeSummary(summary map[string]any) map[string]any {
	if !h.clustered() {
		return summary
	}
	out := maps.Clone(summary)
	meta, _ := out["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[NodeMeta] = h.opts.Node
	out["_meta"] = meta
	return out
}

// remoteSession reports whether uri is a session another node holds.
func (h *rootActor) remoteSession(uri string) bool {
	_, ok := h.remoteSessionAt[uri]
	return ok
}

// summaryIdentity are the fields of a session's summary that never change
// (SessionSummaryChangedParams): a change notification does not carry them.
var summaryIdentity = map[string]bool{"resource": true, "provider": true, "createdAt": true}

// remoteSessionsOf takes another node's sessions now, and tells the root's subscribers
// what changed since it last said, as they hear of this node's own: a session new
// here is root/sessionAdded, one gone (disposed, or its node lost) root/sessionRemoved,
// and one whose summary moved root/sessionSummaryChanged with the fields that did.
func (h *rootActor) remoteSessionsOf(ctx actor.Context, source string, sessions []map[string]any, lost bool) {
	before := map[string]map[string]any{}
	for _, s := range h.remoteSessions[source] {
		uri, _ := s["resource"].(string)
		before[uri] = s
	}
	now := map[string]bool{}
	for _, s := range sessions {
		uri, _ := s["resource"].(string)
		if uri == "" || h.sessions[uri] != nil {
			continue // a node that says it holds a session of this one's is not listened to
		}
		now[uri] = true
		h.remoteSessionAt[uri] = source
		old := before[uri]
		if old == nil {
			h.tellCatalog("root/sessionAdded", map[string]any{"channel": messages.RootURI, "summary": s})
			continue
		}
		changes := map[string]any{}
		for k, v := range s {
			if !summaryIdentity[k] && !reflect.DeepEqual(old[k], v) {
				changes[k] = v
			}
		}
		if len(changes) > 0 {
			h.tellCatalog("root/sessionSummaryChanged", map[string]any{"channel": messages.RootURI, "session": uri, "changes": changes})
		}
	}
	for uri := range before {
		if !now[uri] && h.remoteSessionAt[uri] == source {
			delete(h.remoteSessionAt, uri)
			h.tellCatalog("root/sessionRemoved", map[string]any{"channel": messages.RootURI, "session": uri})
			if pid := h.holders[uri]; pid != nil && !lost {
				// Disposed on its node: the claims naming it here are released.
				delete(h.holders, uri)
				ctx.Stop(pid)
			}
		}
	}
	if len(sessions) == 0 {
		delete(h.remoteSessions, source)
	} else {
		h.remoteSessions[source] = sessions
	}
}

// remoteSummaries are the other nodes' sessions' summaries, by node, for listSessions.
func (h *rootActor) remoteSummaries() []map[string]any {
	var out []map[string]any
	for _, source := range slices.Sorted(maps.Keys(h.remoteSessions)) {
		out = append(out, h.remoteSessions[source]...)
	}
	return out
}

// placeSessionInCluster hands a client's createSession to the node actor to be placed,
// unless it is placed here already or stays here.
func (h *rootActor) placeSessionInCluster(ctx actor.Context, m *session.Create) bool {
	if !h.clustered() || m.Node == h.opts.Node || m.Node == "" && !m.Anywhere {
		return false
	}
	h.placeAndAnswer(ctx, m.URI, m, func(err *messages.Error) any { return &session.Result{Err: err} })
	return true
}

// holderOf is the actor a terminal's claim watches for the session it names
// (terminal.HolderQuery): the session's own on this node; for a session another node
// holds, a stand-in of this root's that stops when the session is disposed there, so
// the claim is released as it is for a session here. A node lost is no disposal: the
// stand-in stays, and the claim with it, since the session comes back with its node.
// Nil for a session no node holds (an agent backend's, say).
func (h *rootActor) holderOf(ctx actor.Context, session string) *actor.PID {
	if pid := h.sessions[session]; pid != nil || !h.clustered() {
		return pid
	}
	if pid := h.holders[session]; pid != nil {
		return pid
	}
	if !h.remoteSession(session) {
		return nil
	}
	pid := ctx.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	h.holders[session] = pid
	return pid
}

// Reserve asks the node actor to reserve URI cluster-wide before this node makes a
// client's session or terminal of it (actors/cluster, reserve.go); the answer is a
// *Reserved. Release gives the reservation back once the channel is gone.
type (
	Reserve  struct{ URI string }
	Reserved struct{ Taken bool }
	Release  struct{ URI string }
)

// reserveWait bounds the root's wait for a reservation; the node actor answers
// sooner, going ahead itself when the URI's home node is silent.
const reserveWait = 5 * time.Second

// reserveFirst holds a client's create of uri on a cluster node until uri is reserved
// cluster-wide, and reports whether it did: then again (the create handled anew, its
// checks made again) runs once the reservation is made, and taken when another node
// holds uri. A second create of uri here while the first waits is taken at once, as
// a duplicate on one node is.
func (h *rootActor) reserveFirst(ctx actor.Context, uri string, again, taken func()) bool {
	if !h.clustered() || h.reservedNow == uri {
		return false
	}
	if h.reserving[uri] {
		taken()
		return true
	}
	h.reserving[uri] = true
	f := ctx.RequestFuture(h.opts.Cluster, &Reserve{URI: uri}, reserveWait)
	ctx.ReenterAfter(f, func(res any, err error) {
		delete(h.reserving, uri)
		// The subscribes that came meanwhile are handled again after the create.
		defer h.releaseHeld(ctx, uri)
		if r, ok := res.(*Reserved); ok && r.Taken {
			taken()
			return
		}
		h.reservations[uri] = true
		h.reservedNow = uri
		again()
		h.reservedNow = ""
	})
	return true
}

// heldSubscribe is a subscribe that waits for its channel's create.
type heldSubscribe struct {
	msg    *channel.Subscribe
	sender *actor.PID
}

// waitCreate holds a subscribe to a channel whose create is under way here (waiting
// for its URI's reservation, or handed to the node actor to be placed), and reports
// whether it did: a client that sends its subscribe right behind its create
// (pipelined) finds the channel, as on a host alone.
func (h *rootActor) waitCreate(ctx actor.Context, m *channel.Subscribe) bool {
	if !h.reserving[m.Channel] && h.placing[m.Channel] == 0 {
		return false
	}
	h.afterCreate[m.Channel] = append(h.afterCreate[m.Channel], heldSubscribe{msg: m, sender: ctx.Sender()})
	return true
}

// releaseHeld handles again, behind what is already in the mailbox, the subscribes
// to uri that waited for its create, once no create of uri is under way.
func (h *rootActor) releaseHeld(ctx actor.Context, uri string) {
	if h.reserving[uri] || h.placing[uri] > 0 {
		return
	}
	for _, w := range h.afterCreate[uri] {
		ctx.RequestWithCustomSender(ctx.Self(), w.msg, w.sender)
	}
	delete(h.afterCreate, uri)
}

// released gives back uri's reservation, if this node made one: its channel is gone.
func (h *rootActor) released(ctx actor.Context, uri string) {
	if h.reservations[uri] {
		delete(h.reservations, uri)
		ctx.Send(h.opts.Cluster, &Release{URI: uri})
	}
}
