package cluster

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
)

// remoteSub is, on the owner, the subscriber a remote proxy's subscription is: every
// frame the terminal delivers goes to the proxy as it is. Frames delivered before the
// subscribe's answer has gone are held, so the proxy hears the snapshot first. Deliver
// never blocks: sending to a remote PID only queues for the endpoint's writer.
//
// Frames go out in the message the endpoint writer has not taken yet, while there is
// one (open): a terminal's output that comes faster than the writer sends it crosses
// as a few messages of many frames, not one message per chunk, and nothing waits for
// it, since the writer takes the frames the moment it gets to the message (see
// wire.Frame.Take).
//
// The echo of a client's action (a keystroke's terminal/input, a resize) waits up to
// echoLinger for the next frame and goes with it in one message: the output a
// keystroke causes comes a moment after its echo, and sent apart the two cross
// between the nodes twice, the first crossing competing for the CPUs with the very
// process whose output the client waits for.
type remoteSub struct {
	system *actor.ActorSystem
	gw     *gateway
	uri    string
	proxy  *actor.PID
	gen    uint64
	// dataPrefix begins every terminal/data frame of the terminal: output, which
	// never waits.
	dataPrefix []byte

	mu     sync.Mutex // guards the fields below
	ready  bool
	closed bool
	held   [][]byte
	// echoes wait for the next frame, or for linger to fire.
	echoes [][]byte
	linger *time.Timer
	// open is the last frame message sent, while the endpoint writer has not taken
	// it: later frames join it. openBytes is what it holds, opened when it was sent.
	open      *wire.Frame
	openBytes int
	opened    time.Time
	openFor   time.Duration
}

// openLimit is how much a frame message gathers before the next frames start
// another: the proxy hands a message's frames to a connection in one write.
const openLimit = 256 << 10

// openFor is how long a frame message gathers. The writer takes a message within
// moments unless it is far behind, or the message was dropped unsent (protoactor's
// remote drops what it is sent while its link to the node is down): frames must not
// go on joining a message nobody will send.
const openFor = 10 * time.Millisecond

// echoLinger is how long the echo of a client's action waits for the output it
// causes. A shell's echo of a keystroke takes tens to hundreds of microseconds; when
// none comes in time, the echo goes alone, a little late, and nothing else changes.
const echoLinger = 2 * time.Millisecond

func newRemoteSub(system *actor.ActorSystem, gw *gateway, uri string, proxy *actor.PID, gen uint64) *remoteSub {
	return &remoteSub{system: system, gw: gw, uri: uri, proxy: proxy, gen: gen, dataPrefix: messages.DataFramePrefix(uri), openFor: openFor}
}

// originMark is how an envelope frame carries its origin: only the echo of a
// client's action has one (messages.EnvelopeFrame writes it after the serverSeq).
var originMark = []byte(`,"origin":{"clientId":`)

// isEcho says whether f is the echo of a client's action.
func (s *remoteSub) isEcho(f []byte) bool {
	return !bytes.HasPrefix(f, s.dataPrefix) && bytes.Contains(f, originMark)
}

func (s *remoteSub) Deliver(_ string, f []byte) {
	echotrace.Mark("remoteSub deliver")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
	case !s.ready:
		s.held = append(s.held, f)
	case s.isEcho(f):
		s.echoes = append(s.echoes, f)
		if len(s.echoes) > 1 {
			return
		}
		if s.linger == nil {
			s.linger = time.AfterFunc(echoLinger, s.flush)
		} else {
			s.linger.Reset(echoLinger)
		}
	default:
		frames := append(s.echoes, f)
		s.echoes = nil
		if s.linger != nil {
			s.linger.Stop()
		}
		s.send(frames)
	}
}

// send sends frames to the proxy: in the open message if there is one with room,
// else in a new one, open until the endpoint writer takes it. Under mu.
func (s *remoteSub) send(frames [][]byte) {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	if s.open != nil && s.openBytes+n <= openLimit && time.Since(s.opened) < s.openFor {
		s.open.Frames = append(s.open.Frames, frames...)
		s.openBytes += n
		return
	}
	s.open, s.openBytes, s.opened = wire.NewFrame(s.gen, frames, s), n, time.Now()
	s.system.Root.Send(s.proxy, s.open)
}

// Taken ends m's gathering (wire.Gatherer): the endpoint writer took it, and what
// is sent next goes in a message of its own.
func (s *remoteSub) Taken(m *wire.Frame) [][]byte {
	s.mu.Lock()
	if s.open == m {
		s.seal()
	}
	fs := m.Frames
	s.mu.Unlock()
	return fs
}

// seal ends the open message: what is sent next goes after it. Under mu.
func (s *remoteSub) seal() { s.open = nil }

// flush sends the echoes that waited in vain.
func (s *remoteSub) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *remoteSub) flushLocked() {
	if len(s.echoes) == 0 || s.closed {
		return
	}
	s.send(s.echoes)
	s.echoes = nil
}

// answer sends the subscribe's answer, then what was held, in order.
func (s *remoteSub) answer(m *wire.Subscribed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.system.Root.Send(s.proxy, m)
	if len(s.held) > 0 {
		s.system.Root.Send(s.proxy, &wire.Frame{Gen: s.gen, Frames: s.held})
	}
	s.held, s.ready = nil, true
}

// afterEchoes sends msg to the proxy behind the echoes waiting: a refusal of a
// client's action comes after the echo of the one before it, as on one node.
func (s *remoteSub) afterEchoes(msg any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	s.seal()
	s.system.Root.Send(s.proxy, msg)
}

func (s *remoteSub) close() {
	s.mu.Lock()
	s.closed, s.held, s.echoes, s.open = true, nil, nil, nil
	if s.linger != nil {
		s.linger.Stop()
	}
	s.mu.Unlock()
	s.gw.unlink(s)
}

// rejectSub takes a dispatch's refusal on the owner back to the proxy, for the one
// local subscriber that sent it, behind the echoes the proxy's subscription holds.
type rejectSub struct {
	system *actor.ActorSystem
	proxy  *actor.PID
	key    uint64
	via    *remoteSub // nil when the proxy has no subscription here
}

func (s rejectSub) Deliver(_ string, f []byte) {
	m := &wire.Rejected{Key: s.key, Frame: f}
	if s.via != nil {
		s.via.afterEchoes(m)
		return
	}
	s.system.Root.Send(s.proxy, m)
}

func (n *node) gatewaySubscribe(ctx actor.Context, m *wire.Subscribe) {
	key := subKey(m.Proxy, m.Gen)
	if n.subs[key] != nil {
		return
	}
	s := newRemoteSub(ctx.ActorSystem(), n.m.gw, m.URI, m.Proxy, m.Gen)
	n.subs[key] = s
	self, system := ctx.Self(), ctx.ActorSystem()
	f := ctx.RequestFuture(n.root, &channel.Subscribe{Channel: m.URI, Sub: s, Turns: m.Turns}, channel.RequestTimeout)
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
		s.answer(&wire.Subscribed{Gen: s.gen, Err: messages.Errorf(messages.CodeInternalError, "Internal error: no answer from %s on its node", s.uri)})
	case r.Err != nil:
		delete(n.subs, m.key)
		s.answer(&wire.Subscribed{Gen: s.gen, Err: r.Err})
	default:
		state, err := json.Marshal(r.Snapshot.State)
		if err != nil {
			delete(n.subs, m.key)
			s.answer(&wire.Subscribed{Gen: s.gen, Err: messages.Errorf(messages.CodeInternalError, "Internal error: %v", err)})
			return
		}
		if r.Terminal != nil {
			n.m.gw.named(s.uri, r.Terminal)
		}
		n.m.gw.link(s)
		s.answer(&wire.Subscribed{Gen: s.gen, State: state})
	}
}

// GatewayName is the name of every node's gateway: where other nodes' proxies send
// their clients' dispatches.
const GatewayName = "termhost-gateway"

// gateway is the owner side of a keystroke: it takes another node's wire.Dispatch
// and acts it out here, as the entry node admitted it. It is a process, not an actor:
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
	// subs are the live subscriptions by their proxy's inbox, for a refusal to go
	// behind the echoes its subscription holds.
	subs map[string]*remoteSub
}

func newGateway(system *actor.ActorSystem, journal *delivery.Journal, root *actor.PID) *gateway {
	return &gateway{system: system, journal: journal, root: root, terminals: map[string]*actor.PID{}, viaRoot: map[string]bool{}, subs: map[string]*remoteSub{}}
}

// SendUserMessage is a message from another node (or the node actor) for the gateway.
func (g *gateway) SendUserMessage(_ *actor.PID, msg any) {
	echotrace.Mark("gateway")
	_, msg, _ = actor.UnwrapEnvelope(msg)
	if m, ok := wire.Decode(msg).(*wire.Dispatch); ok {
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

func pidKey(pid *actor.PID) string { return pid.GetAddress() + "/" + pid.GetId() }

// link keeps s as its proxy's subscription, until unlink.
func (g *gateway) link(s *remoteSub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.subs[pidKey(s.proxy)] = s
}

func (g *gateway) unlink(s *remoteSub) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k := pidKey(s.proxy); g.subs[k] == s {
		delete(g.subs, k)
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
func (g *gateway) dispatch(m *wire.Dispatch) {
	var a messages.Action
	if err := json.Unmarshal(m.Action, &a); err != nil || a.Type == "" {
		return // the entry node read it; this does not happen between termhost nodes
	}
	who := m.Who.Auth()
	sub := rejectSub{system: g.system, proxy: m.Proxy, key: m.Key}
	if m.Proxy != nil {
		g.mu.Lock()
		sub.via = g.subs[pidKey(m.Proxy)]
		g.mu.Unlock()
	}
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
func (n *node) gatewayDispose(ctx actor.Context, m *wire.Dispose) {
	if who := m.Who.Auth(); !who.Can(auth.GrantTerminalDispose) {
		ctx.Respond(&wire.DisposeResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(auth.GrantTerminalDispose))})
		return
	}
	f := ctx.RequestFuture(n.root, &terminal.Dispose{URI: m.URI, By: m.Who.Auth()}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(any, error) { ctx.Respond(&wire.DisposeResult{}) })
}

func (n *node) gatewayCreate(ctx actor.Context, m *wire.Create) {
	who := m.Who.Auth()
	if !who.Can(auth.GrantTerminalCreate) {
		ctx.Respond(&wire.CreateResult{Err: messages.Errorf(messages.CodePermissionDenied, "%s", who.Refusal(auth.GrantTerminalCreate))})
		return
	}
	c := &terminal.Create{URI: m.URI, Claim: m.Claim, Name: m.Name, Cwd: m.Cwd, Cols: m.Cols, Rows: m.Rows, Spec: terminal.Spec(m.Spec), Node: n.m.opts.Name, By: who}
	f := ctx.RequestFuture(n.root, c, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		r, ok := res.(*terminal.CreateResult)
		if err != nil || !ok {
			ctx.Respond(&wire.CreateResult{Err: messages.Errorf(messages.CodeInternalError, "Internal error: the terminal did not start in time")})
			return
		}
		answer := &wire.CreateResult{Err: r.Err, IsPty: r.IsPty, Detection: r.Detection}
		if r.Err != nil {
			ctx.Respond(answer)
			return
		}
		n.answerMade(ctx, m.URI, answer)
	})
}
