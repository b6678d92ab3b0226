package cluster

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/termhost/termhost/actors/channel"
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
// owner's node actor as a sessionRequest, checked again there with who asked.

// sessionRequest is a session request of a client of another node, for the node that
// holds (or is to hold) the session. Op says which; URI is the session (create,
// dispose, createChat) or the chat (disposeChat, stopBackgroundWork). The answer is a
// *sessionResult.
type sessionRequest struct {
	Op                 string    `json:"op"`
	URI                string    `json:"uri"`
	Chat               string    `json:"chat,omitempty"`
	ID                 string    `json:"id,omitempty"`
	Cursor             string    `json:"cursor,omitempty"`
	WorkingDirectories []string  `json:"workingDirectories,omitempty"`
	Agent              string    `json:"agent,omitempty"`
	By                 string    `json:"by,omitempty"`
	Who                principal `json:"who"`
}

// The requests' ops.
const (
	opCreate      = "create"
	opDispose     = "dispose"
	opCreateChat  = "createChat"
	opDisposeChat = "disposeChat"
	opStopWork    = "stopBackgroundWork"
	opFetchTurns  = "fetchTurns"
)

// sessionResult answers sessionRequest, as session.Result does.
type sessionResult struct {
	Err  *messages.Error `json:"err,omitempty"`
	Chat string          `json:"chat,omitempty"`
}

// presence is a client's last connection to a node gone (Left), or one back: every
// node's sessions hear of it, since the client may be active in any of them.
type presence struct {
	ClientID string `json:"clientId"`
	Left     bool   `json:"left,omitempty"`
}

// Kinds of the sessions' messages, apart from wire.go's so either list grows alone.
const (
	kindSessionRequest byte = 96 + iota
	kindSessionResult
	kindPresence
	kindReserve
	kindReserveAnswer
	kindReserveRelease
	kindShowTurns
	kindTurnsShown
)

// sessionMessage is an empty message of a sessions kind, or nil for another kind.
func sessionMessage(kind byte) any {
	switch kind {
	case kindSessionRequest:
		return &sessionRequest{}
	case kindSessionResult:
		return &sessionResult{}
	case kindPresence:
		return &presence{}
	case kindReserve:
		return &reserve{}
	case kindReserveAnswer:
		return &reserveAnswer{}
	case kindReserveRelease:
		return &reserveRelease{}
	case kindShowTurns:
		return &remoteShowTurns{}
	case kindTurnsShown:
		return &turnsShown{}
	}
	return nil
}

func (m *sessionRequest) Serialize() (remote.RootSerialized, error) {
	return pack(kindSessionRequest, m)
}
func (m *sessionResult) Serialize() (remote.RootSerialized, error) {
	return pack(kindSessionResult, m)
}
func (m *presence) Serialize() (remote.RootSerialized, error) { return pack(kindPresence, m) }
func (m *remoteShowTurns) Serialize() (remote.RootSerialized, error) {
	return pack(kindShowTurns, m)
}
func (m *turnsShown) Serialize() (remote.RootSerialized, error) { return pack(kindTurnsShown, m) }

// tellPresence tells every other node of a client of this one coming or going.
func (n *node) tellPresence(ctx actor.Context, p *presence) {
	for _, peer := range n.peers {
		ctx.Send(peer.pid, p)
	}
}

// heardPresence hands another node's client's coming or going to this node's sessions.
func (n *node) heardPresence(ctx actor.Context, p *presence) {
	var msg any = &session.ClientBack{ClientID: p.ClientID}
	if p.Left {
		msg = &session.ClientLeft{ClientID: p.ClientID}
	}
	ctx.Send(n.root, &root.RemotePresence{Msg: msg})
}

// requestOf is the wire form of a session request the root handed this node actor.
func requestOf(msg any) (*sessionRequest, bool) {
	switch m := msg.(type) {
	case *session.Create:
		return &sessionRequest{Op: opCreate, URI: m.URI, WorkingDirectories: m.WorkingDirectories, Agent: m.Agent, By: m.By, Who: carry(m.Who)}, true
	case *session.Dispose:
		return &sessionRequest{Op: opDispose, URI: m.URI, Who: carry(m.Who)}, true
	case *session.CreateChat:
		return &sessionRequest{Op: opCreateChat, URI: m.Session, Chat: m.Chat, Who: carry(m.Who)}, true
	case *session.DisposeChat:
		return &sessionRequest{Op: opDisposeChat, URI: m.Chat, Who: carry(m.Who)}, true
	case *session.StopBackgroundWork:
		return &sessionRequest{Op: opStopWork, URI: m.Chat, ID: m.ID, Who: carry(m.Who)}, true
	case *session.FetchTurns:
		return &sessionRequest{Op: opFetchTurns, URI: m.Chat, Cursor: m.Cursor, Who: carry(m.Who)}, true
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
func (n *node) gatewaySession(ctx actor.Context, m *sessionRequest) {
	who := m.Who.principal()
	grant := auth.GrantChatSend
	switch m.Op {
	case opStopWork:
		grant = auth.GrantTerminalInput
	case opFetchTurns:
		grant = auth.ReadGrant(m.URI)
	}
	if !who.Can(grant) {
		ctx.Respond(&sessionResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(grant))})
		return
	}
	var local any
	switch m.Op {
	case opCreate:
		local = &session.Create{URI: m.URI, WorkingDirectories: m.WorkingDirectories, Agent: m.Agent, By: m.By, Node: n.m.opts.Name, Who: who}
	case opDispose:
		local = &session.Dispose{URI: m.URI, Who: who}
	case opCreateChat:
		local = &session.CreateChat{Session: m.URI, Chat: m.Chat, Who: who}
	case opDisposeChat:
		local = &session.DisposeChat{Chat: m.URI, Who: who}
	case opStopWork:
		local = &session.StopBackgroundWork{Chat: m.URI, ID: m.ID, Who: who}
	case opFetchTurns:
		local = &session.FetchTurns{Chat: m.URI, Cursor: m.Cursor, Who: who}
	default:
		ctx.Respond(&sessionResult{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: no session request %q", m.Op)})
		return
	}
	f := ctx.RequestFuture(n.root, local, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		r, ok := res.(*session.Result)
		if err != nil || !ok {
			ctx.Respond(&sessionResult{Err: messages.Errorf(messages.CodeInternalError, "Internal error: no answer from the session on its node")})
			return
		}
		answer := &sessionResult{Err: r.Err, Chat: r.Chat}
		// What was made is answered once the rows that list it went to the other
		// nodes, as a created terminal is (gatewayCreate).
		made := ""
		if r.Err == nil && m.Op == opCreate {
			made = m.URI
		} else if r.Err == nil && m.Op == opCreateChat {
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

// Kinds of channel a proxy stands in for.
type channelKind int

const (
	terminalChannel channelKind = iota
	sessionChannel
	chatChannel
)

// channelOwner is the peer holding uri and what uri is there: one of its sessions, one
// of its chats, or a command terminal of one of its chats (retained after its command
// or live). Nil when no peer holds it.
func (n *node) channelOwner(uri string) (*peer, channelKind) {
	chat, _, isCommand := toolterm.Parse(uri)
	for _, p := range n.peers {
		switch {
		case isCommand && slices.Contains(p.chats, chat):
			return p, terminalChannel
		case slices.Contains(p.chats, uri):
			return p, chatChannel
		case slices.ContainsFunc(p.sessions, func(s map[string]any) bool { return s["resource"] == uri }):
			return p, sessionChannel
		}
	}
	return nil, terminalChannel
}

// doc is the state of a session's or a chat's channel as a proxy folds it: the
// owner's snapshot, then each action through the session's or chat's own reducer.
type doc struct {
	kind    channelKind
	session messages.SessionState
	chat    messages.ChatState
}

// load takes the owner's snapshot of the state.
func (d *doc) load(raw json.RawMessage) error {
	if d.kind == sessionChannel {
		d.session = messages.SessionState{}
		return json.Unmarshal(raw, &d.session)
	}
	d.chat = messages.ChatState{}
	return json.Unmarshal(raw, &d.chat)
}

// state is a copy of the state, for a snapshot.
func (d *doc) state() any {
	if d.kind == sessionChannel {
		return d.session.Clone()
	}
	return d.chat.Clone()
}

// fold folds one frame from the owner and returns its action and origin, to be
// stamped here; false for a frame that is no action.
func (d *doc) fold(f []byte) (json.RawMessage, *messages.Origin, bool) {
	env, ok := readEnvelope(f)
	if !ok {
		if at, ok := dated(f); ok && d.kind == chatChannel && d.chat != nil {
			d.chat.SetModifiedAt(at)
		}
		return nil, nil, false
	}
	var a map[string]any
	if json.Unmarshal(env.Action, &a) != nil {
		return nil, nil, false
	}
	if d.kind == sessionChannel {
		messages.ReduceSession(d.session, a)
	} else {
		messages.ReduceChat(d.chat, a)
	}
	return env.Action, env.Origin, true
}

// The owner dates a chat's every change as it sends it, and no action carries the
// date: the owner's gateway sends it after the change's frame as a frame of its own,
// {"x-modifiedAt":"…"}, which the proxy folds into its copy of the chat and hands
// nobody. A snapshot served on another node then has the owner's modifiedAt, not the
// time the last frame arrived there.
var datedHead = []byte(`{"x-modifiedAt":`)

// datedFrame is the frame that carries a chat change's modifiedAt.
func datedFrame(modifiedAt string) []byte {
	b, _ := json.Marshal(modifiedAt)
	return append(append(append([]byte(nil), datedHead...), b...), '}')
}

// dated reads a datedFrame; false for any other frame.
func dated(f []byte) (string, bool) {
	if !bytes.HasPrefix(f, datedHead) || len(f) < len(datedHead)+1 {
		return "", false
	}
	var at string
	if json.Unmarshal(f[len(datedHead):len(f)-1], &at) != nil {
		return "", false
	}
	return at, true
}

// DeliverDated is, on the owner, Deliver for a chat's change with its date
// (session.DatedSubscriber): the dated frame follows the change's in the same order.
func (s *remoteSub) DeliverDated(ch string, f []byte, modifiedAt string) {
	s.Deliver(ch, f)
	s.Deliver(ch, datedFrame(modifiedAt))
}

// sessionOf is the session a lost node p held a session's or chat's channel uri of,
// for telling the channel's subscribers here it is gone: the session itself, or for
// a chat the session it was minted under (this host names a session's chats after
// it); "" when that cannot be told (a chat a client named itself).
func sessionOf(p *peer, uri string, kind channelKind) string {
	switch kind {
	case sessionChannel:
		return uri
	case chatChannel:
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

// sessionGoneFrame tells a subscriber of a session's or chat's channel whose node was
// lost that the session is gone from this host's view: root/sessionRemoved, as every
// root subscriber hears, scoped to the channel it subscribed (params.channel, which
// is how a client routes a notification to that subscription), with _meta.reason
// "node lost" as a lost terminal's terminal/exited has. When the node comes back the
// session is listed again (root/sessionAdded) and may be subscribed anew.
func sessionGoneFrame(channel, session string) []byte {
	f, _ := messages.NotificationFrame("root/sessionRemoved", map[string]any{
		"channel": channel, "session": session, "_meta": map[string]any{"reason": "node lost"}})
	return f
}

func (d *doc) reset() { d.session, d.chat = nil, nil }

// A chat's view across nodes. A chat holds its newest turns and pages older ones in
// when a subscriber's view asks for them (session.ShowTurns). A proxy of a chat holds
// what its owner's chat holds for the proxy's one subscription, which its first
// subscriber's view asked for (remoteSubscribe.Turns). A later subscriber here whose
// view wants more waits while the proxy asks the owner to bring it in
// (remoteShowTurns): the chat/turnsLoaded that brings the turns reaches the proxy
// through its subscription, folded and handed to the subscribers it has, and the
// answer (turnsShown) comes behind it on the same way, so the waiting subscriber's
// snapshot holds the turns and it hears of nothing twice.

// remoteShowTurns asks the owner of the chat that Proxy's subscription Gen reads to
// hold at least Turns of its newest turns (every one it keeps when nil).
type remoteShowTurns struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
	Round uint64     `json:"round"`
	Turns *int       `json:"turns,omitempty"`
}

// turnsShown answers remoteShowTurns through the subscription, behind the frames the
// chat sent it meanwhile.
type turnsShown struct {
	Gen   uint64          `json:"gen"`
	Round uint64          `json:"round"`
	Err   *messages.Error `json:"err,omitempty"`
}

// showLapsed is the deadline of a proxy's remoteShowTurns.
type showLapsed struct{ gen, round uint64 }

// holds says whether the state has what a view of turns asks for (nil: every turn):
// a chat with nothing older to page in holds every view; a session's state has no
// turns.
func (d *doc) holds(turns *int) bool {
	if d == nil || d.kind != chatChannel || d.chat.TurnsCursor() == "" {
		return true
	}
	return turns != nil && d.chat.TurnCount() >= *turns
}

// covers says whether a view of asked (nil: every turn) asks at least what one of
// turns does.
func covers(asked, turns *int) bool {
	return asked == nil || (turns != nil && *turns <= *asked)
}

// gatewayShowTurns brings in, on the owner, what a proxy's subscriber's view asks
// for, and answers behind the chat/turnsLoaded it made.
func (n *node) gatewayShowTurns(ctx actor.Context, m *remoteShowTurns) {
	shown := &turnsShown{Gen: m.Gen, Round: m.Round}
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

// view answers a subscribe here whose view the proxy's chat does not hold yet, once
// the owner brought in what it asks for.
func (p *proxy) view(w waiter) {
	p.viewing = append(p.viewing, w)
	if p.showing {
		return // checked again when the owner answers
	}
	var most *int
	for i, v := range p.viewing {
		if v.turns == nil {
			most = nil
			break
		}
		if i == 0 || *v.turns > *most {
			most = v.turns
		}
	}
	p.round++
	p.showing, p.asked = true, most
	p.system.Root.Send(p.owner, &remoteShowTurns{URI: p.uri, Proxy: p.inbox, Gen: p.gen, Round: p.round, Turns: most})
	self, system, gen, round := p.self, p.system, p.gen, p.round
	time.AfterFunc(subscribeDeadline, func() { system.Root.Send(self, &showLapsed{gen: gen, round: round}) })
}

// shown takes the owner's answer (or its lapse): the subscribes whose views it
// covered are answered with what the proxy holds now, as a subscribe on the owner is
// when older turns cannot be read; the rest ask again.
func (p *proxy) shown(gen, round uint64) {
	if !p.showing || gen != p.gen || round != p.round || p.phase != live {
		return
	}
	p.showing = false
	viewing := p.viewing
	p.viewing = nil
	p.answer(viewing)
}

// answer answers the subscribes the proxy's copy serves now: those whose view it
// holds, or whose view the owner was last asked for (asked), which is what the owner
// holds when it could not read more. The rest wait while the owner is asked (view).
func (p *proxy) answer(waiting []waiter) {
	var more []waiter
	for _, w := range waiting {
		if !covers(p.asked, w.turns) && !p.doc.holds(w.turns) {
			more = append(more, w)
			continue
		}
		p.subs[w.sub] = true
		p.system.Root.Send(w.sender, p.snapshot())
	}
	for _, w := range more {
		p.view(w)
	}
}
