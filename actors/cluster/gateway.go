package cluster

import (
	"encoding/json"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// remoteSub is, on the owner, the subscriber a remote proxy's subscription is: every
// frame the terminal delivers goes to the proxy as it is. Frames delivered before the
// subscribe's answer has gone are held, so the proxy hears the snapshot first. Deliver
// never blocks: sending to a remote PID only queues for the endpoint's writer.
type remoteSub struct {
	system *actor.ActorSystem
	uri    string
	proxy  *actor.PID
	gen    uint64

	mu     sync.Mutex // guards the fields below
	ready  bool
	closed bool
	held   [][]byte
}

func (s *remoteSub) Deliver(_ string, f []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case !s.ready:
		s.held = append(s.held, f)
	default:
		s.system.Root.Send(s.proxy, &frame{Gen: s.gen, Frame: f})
	}
}

// answer sends the subscribe's answer, then what was held, in order.
func (s *remoteSub) answer(m *subscribed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.system.Root.Send(s.proxy, m)
	for _, f := range s.held {
		s.system.Root.Send(s.proxy, &frame{Gen: s.gen, Frame: f})
	}
	s.held, s.ready = nil, true
}

func (s *remoteSub) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.held = true, nil
}

// rejectSub takes a dispatch's refusal on the owner back to the proxy, for the one
// local subscriber that sent it.
type rejectSub struct {
	system *actor.ActorSystem
	proxy  *actor.PID
	key    uint64
}

func (s rejectSub) Deliver(_ string, f []byte) {
	s.system.Root.Send(s.proxy, &rejected{Key: s.key, Frame: f})
}

func (n *node) gatewaySubscribe(ctx actor.Context, m *remoteSubscribe) {
	key := subKey(m.Proxy, m.Gen)
	if n.subs[key] != nil {
		return
	}
	s := &remoteSub{system: ctx.ActorSystem(), uri: m.URI, proxy: m.Proxy, gen: m.Gen}
	n.subs[key] = s
	self, system := ctx.Self(), ctx.ActorSystem()
	f := ctx.RequestFuture(n.root, &channel.Subscribe{Channel: m.URI, Sub: s}, channel.RequestTimeout)
	// Not ReenterAfter: the answer may come after the subscription was undone, and
	// the message says which subscription it was for.
	go func() {
		res, err := f.Result()
		system.Root.Send(self, &gatewaySubscribed{key: key, res: res, err: err})
	}()
}

func (n *node) gatewaySubscribed(m *gatewaySubscribed) {
	s := n.subs[m.key]
	if s == nil {
		// Undone meanwhile: the Unsubscribe went after the Subscribe through the root,
		// so the terminal has already let it go.
		return
	}
	r, ok := m.res.(*channel.SubscribeResult)
	switch {
	case m.err != nil || !ok:
		delete(n.subs, m.key)
		s.answer(&subscribed{Gen: s.gen, Err: messages.Errorf(messages.CodeInternalError, "Internal error: no answer from %s on its node", s.uri)})
	case r.Err != nil:
		delete(n.subs, m.key)
		s.answer(&subscribed{Gen: s.gen, Err: r.Err})
	default:
		state, err := json.Marshal(r.Snapshot.State)
		if err != nil {
			delete(n.subs, m.key)
			s.answer(&subscribed{Gen: s.gen, Err: messages.Errorf(messages.CodeInternalError, "Internal error: %v", err)})
			return
		}
		if r.Terminal != nil {
			n.m.gw.named(s.uri, r.Terminal)
		}
		s.answer(&subscribed{Gen: s.gen, State: state})
	}
}

// GatewayName is the name of every node's gateway: where other nodes' proxies send
// their clients' dispatches.
const GatewayName = "termhost-gateway"

// gateway is the owner side of a keystroke: it takes another node's remoteDispatch and
// acts it out here, as the entry node admitted it. It is a process, not an actor:
// protoactor's endpoint reader hands it each message on the reader's own goroutine,
// so a keystroke reaches its terminal's mailbox with no actor in between (an actor's
// mailbox is a hand-off to another goroutine, which is most of a hop's cost).
// The reader delivers one node's messages one at a time and in order, so a proxy's
// dispatches stay in order; mu orders them against other nodes' and the node actor.
type gateway struct {
	system  *actor.ActorSystem
	journal *delivery.Journal
	root    *actor.PID

	mu sync.Mutex // guards the fields below
	// terminals are what dispatches go to directly once a subscribe named them, as a
	// connection does (channel.SubscribeResult.Terminal); viaRoot are those whose
	// dispatches went through the root and keep going that way, since a direct one
	// could overtake a dispatch still on its way through the root.
	terminals map[string]*actor.PID
	viaRoot   map[string]bool
}

func newGateway(system *actor.ActorSystem, journal *delivery.Journal, root *actor.PID) *gateway {
	return &gateway{system: system, journal: journal, root: root, terminals: map[string]*actor.PID{}, viaRoot: map[string]bool{}}
}

// SendUserMessage is a message from another node (or the node actor) for the gateway.
func (g *gateway) SendUserMessage(_ *actor.PID, msg any) {
	_, msg, _ = actor.UnwrapEnvelope(msg)
	if m, ok := Decode(msg).(*remoteDispatch); ok {
		g.dispatch(m)
	}
}

func (g *gateway) SendSystemMessage(*actor.PID, any) {}
func (g *gateway) Stop(*actor.PID)                   {}

// named keeps the terminal a subscribe named, for dispatches to go to it directly,
// unless a dispatch to it already went through the root. Called before the
// subscription is answered, so the proxy's held dispatches find it.
func (g *gateway) named(uri string, pid *actor.PID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.viaRoot[uri] {
		g.terminals[uri] = pid
	}
}

// forget drops what is kept of the terminals this node no longer lists.
func (g *gateway) forget(listed map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for uri := range g.terminals {
		if !listed[uri] {
			delete(g.terminals, uri)
		}
	}
	for uri := range g.viaRoot {
		if !listed[uri] {
			delete(g.viaRoot, uri)
		}
	}
}

// dispatch acts out a remote client's dispatch here: accepted, its echo reaches every
// subscriber (the proxies among them); refused, the refusal goes back to the one that
// sent it.
func (g *gateway) dispatch(m *remoteDispatch) {
	var a messages.Action
	if err := json.Unmarshal(m.Action, &a); err != nil || a.Type == "" {
		return // the entry node read it; this does not happen between termhost nodes
	}
	who := m.Who.principal()
	sub := rejectSub{system: g.system, proxy: m.Proxy, key: m.Key}
	if grant := auth.ActionGrant(a.Type); grant != "" && !who.Can(grant) {
		g.journal.Reject(sub, m.URI, m.Action, m.Origin, who.Refusal(grant))
		return
	}
	d := &channel.Dispatch{Channel: m.URI, Action: &a, Raw: m.Action, Origin: m.Origin, By: m.By, Principal: who, Sub: sub}
	to := g.route(m.URI)
	g.system.Root.Send(to, d)
}

// route is where a dispatch to uri goes: its terminal, or the root.
func (g *gateway) route(uri string) *actor.PID {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pid := g.terminals[uri]; pid != nil {
		if _, alive := g.system.ProcessRegistry.Get(pid); alive {
			return pid
		}
		delete(g.terminals, uri)
	}
	g.viaRoot[uri] = true
	return g.root
}

// gatewayDispose disposes a terminal here for a client of another node, checked again
// with who the entry node said they are.
func (n *node) gatewayDispose(ctx actor.Context, m *remoteDispose) {
	if who := m.Who.principal(); !who.Can(auth.GrantTerminalDispose) {
		ctx.Respond(&disposeResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(auth.GrantTerminalDispose))})
		return
	}
	f := ctx.RequestFuture(n.root, &terminal.Dispose{URI: m.URI, By: m.Who.principal()}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(any, error) { ctx.Respond(&disposeResult{}) })
}

func (n *node) gatewayCreate(ctx actor.Context, m *remoteCreate) {
	who := m.Who.principal()
	if !who.Can(auth.GrantTerminalCreate) {
		ctx.Respond(&createResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(auth.GrantTerminalCreate))})
		return
	}
	c := &terminal.Create{URI: m.URI, Claim: m.Claim, Name: m.Name, Cwd: m.Cwd, Cols: m.Cols, Rows: m.Rows, Spec: terminal.Spec(m.Spec), Node: n.m.opts.Name, By: who}
	f := ctx.RequestFuture(n.root, c, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		r, ok := res.(*terminal.CreateResult)
		if err != nil || !ok {
			ctx.Respond(&createResult{Err: messages.Errorf(messages.CodeInternalError, "Internal error: the terminal did not start in time")})
			return
		}
		answer := &createResult{Err: r.Err, IsPty: r.IsPty, Detection: r.Detection}
		if r.Err != nil || n.listed[m.URI] && n.rowsTimer == nil {
			ctx.Respond(answer)
			return
		}
		// The answer waits for the rows that list the terminal to have gone to the
		// other nodes: they go first on the same stream, so the caller knows where the
		// terminal is by the time its client hears it was made.
		sender := ctx.Sender()
		n.afterRow[m.URI] = append(n.afterRow[m.URI], func() { ctx.Send(sender, answer) })
	})
}
