package cluster

import (
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/cluster/proxy"
	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
)

// Sessions across nodes. A session is placed on a node as a terminal is (the node
// createSession names, else the least loaded) and runs its terminals and agent there.
// Each node tells the others its sessions' summaries with its rows, so every root lists
// every node's sessions and tells its subscribers of them (actors/root/cluster.go).
// A session's channel and its chats' are reached from another node through the same
// proxy a remote terminal is (proxy.go): one subscription on the owner, the state
// folded there with the session's or chat's own reducer (doc), each local subscribe
// answered with a snapshot and then every action stamped by this node's journal, and
// dispatches carried to the owner's gateway with the one grant they need. Requests
// (create, dispose, a chat made or disposed, a background work stopped) go to the
// owner's node actor as a wire.SessionRequest, checked again there with who asked.

// tellPresence tells every other node of a client of this one coming or going.
func (n *node) tellPresence(ctx actor.Context, p *wire.Presence) {
	for _, peer := range n.peers {
		ctx.Send(peer.pid, p)
	}
}

// heardPresence hands another node's client's coming or going to this node's sessions.
func (n *node) heardPresence(ctx actor.Context, p *wire.Presence) {
	var msg any = &session.ClientBack{ClientID: p.ClientID}
	if p.Left {
		msg = &session.ClientLeft{ClientID: p.ClientID}
	}
	ctx.Send(n.root, &root.RemotePresence{Msg: msg})
}

// requestOf is the wire form of a session request the root handed this node actor.
func requestOf(msg any) (*wire.SessionRequest, bool) {
	switch m := msg.(type) {
	case *session.Create:
		return &wire.SessionRequest{Op: wire.OpCreate, URI: m.URI, WorkingDirectories: m.WorkingDirectories, Agent: m.Agent, By: m.By, Who: wire.Carry(m.Who)}, true
	case *session.Dispose:
		return &wire.SessionRequest{Op: wire.OpDispose, URI: m.URI, Who: wire.Carry(m.Who)}, true
	case *session.CreateChat:
		return &wire.SessionRequest{Op: wire.OpCreateChat, URI: m.Session, Chat: m.Chat, Who: wire.Carry(m.Who)}, true
	case *session.DisposeChat:
		return &wire.SessionRequest{Op: wire.OpDisposeChat, URI: m.Chat, Who: wire.Carry(m.Who)}, true
	case *session.StopBackgroundWork:
		return &wire.SessionRequest{Op: wire.OpStopWork, URI: m.Chat, ID: m.ID, Who: wire.Carry(m.Who)}, true
	case *session.FetchTurns:
		return &wire.SessionRequest{Op: wire.OpFetchTurns, URI: m.Chat, Cursor: m.Cursor, Who: wire.Carry(m.Who)}, true
	}
	return nil, false
}

// placeSession puts a client's new session on the node it names, else on the least
// loaded node, as a terminal is placed.
func (n *node) placeSession(ctx actor.Context, m *session.Create) {
	target, err := n.pick(m.Node)
	if err != nil {
		ctx.Respond(&session.Result{Err: err})
		return
	}
	if target == nil {
		local := *m
		local.Node = n.m.opts.Name
		ctx.RequestWithCustomSender(n.root, &local, ctx.Sender())
		return
	}
	target.placed++
	req, _ := requestOf(m)
	n.askAfterRows(ctx, target, req)
}

// toOwner sends a request about a session another node holds to that node.
func (n *node) toOwner(ctx actor.Context, msg any) {
	req, _ := requestOf(msg)
	p, _ := n.channelOwner(req.URI)
	if p == nil {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionNotFound, "No session %s on this host", req.URI)})
		return
	}
	// Its answer too comes after the rows the owner sent before it: a chat made there
	// is listed here by the time its client hears of it.
	n.askAfterRows(ctx, p, req)
}

// gatewaySession acts out here a session request of another node's client, checked
// again with who the entry node said they are.
func (n *node) gatewaySession(ctx actor.Context, m *wire.SessionRequest) {
	who := m.Who.Auth()
	grant := auth.GrantChatSend
	switch m.Op {
	case wire.OpStopWork:
		grant = auth.GrantTerminalInput
	case wire.OpFetchTurns:
		grant = auth.ReadGrant(m.URI)
	}
	if !who.Can(grant) {
		ctx.Respond(&wire.SessionResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(grant))})
		return
	}
	var local any
	switch m.Op {
	case wire.OpCreate:
		local = &session.Create{URI: m.URI, WorkingDirectories: m.WorkingDirectories, Agent: m.Agent, By: m.By, Node: n.m.opts.Name, Who: who}
	case wire.OpDispose:
		local = &session.Dispose{URI: m.URI, Who: who}
	case wire.OpCreateChat:
		local = &session.CreateChat{Session: m.URI, Chat: m.Chat, Who: who}
	case wire.OpDisposeChat:
		local = &session.DisposeChat{Chat: m.URI, Who: who}
	case wire.OpStopWork:
		local = &session.StopBackgroundWork{Chat: m.URI, ID: m.ID, Who: who}
	case wire.OpFetchTurns:
		local = &session.FetchTurns{Chat: m.URI, Cursor: m.Cursor, Who: who}
	default:
		ctx.Respond(&wire.SessionResult{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: no session request %q", m.Op)})
		return
	}
	f := ctx.RequestFuture(n.root, local, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		r, ok := res.(*session.Result)
		if err != nil || !ok {
			ctx.Respond(&wire.SessionResult{Err: messages.Errorf(messages.CodeInternalError, "Internal error: no answer from the session on its node")})
			return
		}
		answer := &wire.SessionResult{Err: r.Err, Chat: r.Chat}
		// What was made is answered once the rows that list it went to the other
		// nodes, as a created terminal is (gatewayCreate).
		made := ""
		if r.Err == nil && m.Op == wire.OpCreate {
			made = m.URI
		} else if r.Err == nil && m.Op == wire.OpCreateChat {
			made = r.Chat
		}
		if made == "" {
			ctx.Respond(answer)
			return
		}
		n.answerMade(ctx, made, answer)
	})
}

// answerMade answers another node's create of uri (a terminal, a session, a chat)
// once the rows that list uri have gone to that node: they go first on the same
// stream, so the asker knows where uri is by the time its client hears it was made,
// and a subscribe sent right behind the create finds it.
//
// The rows go to the nodes this one knows. The asker may not be one of them: a node
// taken for lost (its health check timed out under load, say) is dropped here, and
// protoactor-go's member list blocks it for good, so it is known again only when its
// next message here makes this node greet it. Its create can come before that; the
// rows then go to it alone, ahead of the answer. Its subscribe was once told "No
// session … on this host".
func (n *node) answerMade(ctx actor.Context, uri string, answer any) {
	sender := ctx.Sender()
	send := func() {
		if p := n.peers[sender.GetAddress()]; p == nil && sender.GetAddress() != n.m.addr {
			ctx.Send(actor.NewPID(sender.GetAddress(), NodeName), n.rowsNow())
		}
		ctx.Send(sender, answer)
	}
	if n.lists(uri) && n.rowsTimer == nil {
		send()
		return
	}
	n.afterRow[uri] = append(n.afterRow[uri], send)
}

// lists reports whether this node's rows, as it last told the others, list uri: one of
// its terminals, sessions or chats.
func (n *node) lists(uri string) bool {
	return n.listed[uri] || n.sessionAt[uri] || slices.Contains(n.chats, uri)
}

// localSessions takes this node's sessions as the root lists them.
func (n *node) localSessions(sessions []map[string]any) {
	n.sessions = sessions
	n.sessionAt = make(map[string]bool, len(sessions))
	for _, s := range sessions {
		if uri, _ := s["resource"].(string); uri != "" {
			n.sessionAt[uri] = true
		}
	}
}

// channelOwner is the peer holding uri and what uri is there: one of its sessions, one
// of its chats, or a command terminal of one of its chats (retained after its command
// or live). Nil when no peer holds it.
func (n *node) channelOwner(uri string) (*peer, proxy.Kind) {
	chat, _, isCommand := toolterm.Parse(uri)
	for _, p := range n.peers {
		switch {
		case isCommand && slices.Contains(p.chats, chat):
			return p, proxy.Terminal
		case slices.Contains(p.chats, uri):
			return p, proxy.Chat
		case slices.ContainsFunc(p.sessions, func(s map[string]any) bool { return s["resource"] == uri }):
			return p, proxy.Session
		}
	}
	return nil, proxy.Terminal
}

// DeliverDated is, on the owner, Deliver for a chat's change with its date
// (session.DatedSubscriber): the dated frame (wire.DatedFrame) follows the change's
// in the same order.
func (s *remoteSub) DeliverDated(ch string, f []byte, modifiedAt string) {
	s.Deliver(ch, f)
	s.Deliver(ch, wire.DatedFrame(modifiedAt))
}

// sessionOf is the session a lost node p held a session's or chat's channel uri of,
// for telling the channel's subscribers here it is gone: the session itself, or for
// a chat the session it was minted under (this host names a session's chats after
// it); "" when that cannot be told (a chat a client named itself).
func sessionOf(p *peer, uri string, kind proxy.Kind) string {
	switch kind {
	case proxy.Session:
		return uri
	case proxy.Chat:
		best := ""
		for _, s := range p.sessions {
			if su, _ := s["resource"].(string); strings.HasPrefix(uri, su+"/") && len(su) > len(best) {
				best = su
			}
		}
		return best
	}
	return ""
}

// gatewayShowTurns brings in, on the owner, what a proxy's subscriber's view asks
// for, and answers behind the chat/turnsLoaded it made.
func (n *node) gatewayShowTurns(ctx actor.Context, m *wire.ShowTurns) {
	shown := &wire.TurnsShown{Gen: m.Gen, Round: m.Round}
	s := n.subs[subKey(m.Proxy, m.Gen)]
	if s == nil {
		shown.Err = messages.Errorf(messages.CodeNotFound, "No subscription to %s on its node", m.URI)
		ctx.Send(m.Proxy, shown)
		return
	}
	f := ctx.RequestFuture(n.root, &session.ShowTurns{Chat: m.URI, Turns: m.Turns}, channel.RequestTimeout)
	go func() {
		res, err := f.Result()
		if r, ok := res.(*session.Result); err != nil || !ok {
			shown.Err = messages.Errorf(messages.CodeInternalError, "Internal error: no answer from %s on its node", m.URI)
		} else if r.Err != nil {
			shown.Err = r.Err
		}
		s.afterEchoes(shown)
	}()
}
