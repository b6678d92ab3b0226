package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
)

// proxy stands in, on the calling node, for one terminal another node owns. It holds
// one subscription on the owner however many subscribers it has here, folds what
// comes with the terminals' own reducer, and answers each subscribe here with that
// state and then every later action, stamped by this node's journal: what a
// subscriber of a local terminal gets, nothing lost or doubled.
//
// A keystroke's way in and its echo's way out pass no actor of the proxy: the two
// are processes (an inbox and an outlet) that run on the goroutine that hands them a
// message, as the gateway does on the owner (see gateway). The outlet is the
// Terminal a subscribe here answers with, so a connection's dispatch goes from its
// own goroutine straight to the owner's gateway; the inbox is the PID the owner
// sends the subscription's frames to, and protoactor's endpoint reader stamps and
// delivers them on its goroutine. The actor does the rest: subscribes, unsubscribes,
// the node's loss.
type proxy struct {
	uri     string
	owner   *actor.PID // the owner's node actor: subscriptions
	gw      *actor.PID // the owner's gateway: dispatches
	journal *delivery.Journal
	system  *actor.ActorSystem
	// self is the actor; inbox and outlet its processes.
	self, inbox, outlet *actor.PID

	// mu guards the subscription and its state: the actor and the inbox take it.
	mu sync.Mutex
	// gen numbers this proxy's subscriptions on the owner; what an earlier one still
	// sends is dropped.
	gen   uint64
	phase phase
	// doc is the state of a session's or chat's channel (sessions.go); nil for a
	// terminal, whose state is state and sb.
	doc   *doc
	state messages.TerminalState
	sb    messages.Scrollback
	// dataPrefix is how every terminal/data frame of this channel begins, up to its
	// data; unfolded holds output that came as such frames and is not folded into
	// state yet, still JSON-escaped, with a quote before it: folding it takes one
	// decode for many frames instead of two for each (see frame).
	dataPrefix []byte
	unfolded   []byte
	// inputPrefix is how the echo of a keystroke to this channel begins.
	inputPrefix []byte

	subs    map[delivery.Subscriber]bool
	waiting []waiter
	// viewing are subscribes of a chat that wait for the owner to bring in the
	// older turns their views ask for (see sessions.go); showing says a
	// wire.ShowTurns (number round) is on its way, asking for asked turns (nil:
	// all). asked is also what the subscription itself asked for, while it is made.
	viewing []waiter
	showing bool
	asked   *int
	round   uint64

	// dmu guards the dispatches' side; the outlet takes it alone (never mu), so a
	// connection that dispatches from inside a delivery made under mu does not wait
	// on it.
	dmu sync.Mutex
	// keys name each local dispatcher to the owner, for a refusal to find its way back.
	keys    map[delivery.Subscriber]uint64
	byKey   map[uint64]delivery.Subscriber
	nextKey uint64
	// While a subscription is being made, dispatches wait in held: sent at once they
	// could reach the terminal before the subscription does, and their echo would be
	// missing after the snapshot.
	holding bool
	held    []*wire.Dispatch
}

type phase int

// subscribeLapsed is the deadline of subscription gen on the owner.
type subscribeLapsed struct{ gen uint64 }

// subscribeDeadline is how long a proxy waits for the owner's answer to a subscribe:
// well within the client's own wait (channel.RequestTimeout), so the client is told.
const subscribeDeadline = channel.RequestTimeout / 3

const (
	idle phase = iota
	subscribing
	live
)

// waiter is a subscribe that waits for the owner's snapshot.
type waiter struct {
	sub    delivery.Subscriber
	sender *actor.PID
	turns  *int // a chat subscriber's view
}

// Props makes the proxy of uri, a channel of kind that owner (the owning node's
// node actor) holds; gateway is the owner's gateway process, where keystrokes go.
// Frames are stamped by journal; limit caps a terminal's scrollback as the owner's
// (0: the host's default).
func Props(uri string, kind Kind, owner, gateway *actor.PID, journal *delivery.Journal, limit int) *actor.Props {
	if limit <= 0 {
		limit = 200_000
	}
	return actor.PropsFromProducer(func() actor.Actor {
		var d *doc
		if kind != Terminal {
			d = &doc{kind: kind}
		}
		return &proxy{uri: uri, owner: owner, doc: d, gw: gateway, journal: journal, sb: messages.Scrollback{Limit: limit},
			dataPrefix: messages.DataFramePrefix(uri), inputPrefix: messages.InputFramePrefix(uri), subs: map[delivery.Subscriber]bool{}, keys: map[delivery.Subscriber]uint64{}, byKey: map[uint64]delivery.Subscriber{}}
	})
}

func (p *proxy) Receive(ctx actor.Context) {
	switch m := wire.Decode(ctx.Message()).(type) {
	case *actor.Started:
		p.system, p.self = ctx.ActorSystem(), ctx.Self()
		p.inbox, _ = p.system.ProcessRegistry.Add(proxyInbox{p}, p.self.Id+"/in")
		p.outlet, _ = p.system.ProcessRegistry.Add(proxyOutlet{p}, p.self.Id+"/out")
	case *actor.Stopped, *actor.Restarting:
		p.system.ProcessRegistry.Remove(p.inbox)
		p.system.ProcessRegistry.Remove(p.outlet)
	case *channel.Dispatch:
		// Sent through the root and the node actor (before a subscribe named the outlet).
		p.dispatch(m)
	case *wire.Subscribed, *wire.Frame, *wire.Rejected, *wire.TurnsShown:
		p.fromOwner(m)
	case *showLapsed:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.shown(m.gen, m.round)
	case *channel.Subscribe:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.subscribe(ctx, m)
	case *channel.Unsubscribe:
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.subs, m.Sub)
		p.waiting = slices.DeleteFunc(p.waiting, func(w waiter) bool { return w.sub == m.Sub })
		p.viewing = slices.DeleteFunc(p.viewing, func(w waiter) bool { return w.sub == m.Sub })
		p.dmu.Lock()
		if k, ok := p.keys[m.Sub]; ok {
			delete(p.keys, m.Sub)
			delete(p.byKey, k)
		}
		p.dmu.Unlock()
		if p.phase == live && len(p.subs) == 0 && len(p.viewing) == 0 {
			p.release()
		}
	case *NodeLost:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.nodeLost(ctx, m)
	case *subscribeLapsed:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.phase == subscribing && m.gen == p.gen {
			// The subscribe or its answer was lost on the way (a node's remote drops
			// what it sends while its link to a restarted node is made again): the
			// subscribers hear so, and the next subscribe asks again.
			p.system.Root.Send(p.owner, &wire.Unsubscribe{URI: p.uri, Proxy: p.inbox, Gen: p.gen})
			p.subscribed(&wire.Subscribed{Gen: p.gen, Err: messages.Errorf(messages.CodeInternalError, "Internal error: the node of %s did not answer in time", p.uri)})
		}
	case *actor.Stopping:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.phase != idle {
			p.system.Root.Send(p.owner, &wire.Unsubscribe{URI: p.uri, Proxy: p.inbox, Gen: p.gen})
		}
	}
}

// fromOwner is what the owner sends the inbox.
func (p *proxy) fromOwner(msg any) {
	switch m := msg.(type) {
	case *wire.Subscribed:
		p.mu.Lock()
		defer p.mu.Unlock()
		if m.Gen == p.gen && p.phase == subscribing {
			p.subscribed(m)
		}
	case *wire.Frame:
		echotrace.Mark("inbox decoded")
		p.mu.Lock()
		defer p.mu.Unlock()
		if m.Gen == p.gen && p.phase == live {
			p.frames(m.Take())
		}
	case *wire.Rejected:
		p.rejected(m)
	case *wire.TurnsShown:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.shown(m.Gen, m.Round)
	}
}

// proxyInbox is the proxy's process for what its owner sends it.
type proxyInbox struct{ p *proxy }

func (i proxyInbox) SendUserMessage(_ *actor.PID, msg any) {
	echotrace.Mark("inbox")
	_, msg, _ = actor.UnwrapEnvelope(msg)
	i.p.fromOwner(wire.Decode(msg))
}
func (proxyInbox) SendSystemMessage(*actor.PID, any) {}
func (proxyInbox) Stop(*actor.PID)                   {}

// proxyOutlet is the proxy's process for its subscribers' dispatches: it sends them
// on to the owner's gateway on the sender's goroutine. Anything else goes to the
// actor.
type proxyOutlet struct{ p *proxy }

func (o proxyOutlet) SendUserMessage(_ *actor.PID, msg any) {
	if d, ok := msg.(*channel.Dispatch); ok {
		o.p.dispatch(d)
		return
	}
	o.p.system.Root.Send(o.p.self, msg)
}
func (proxyOutlet) SendSystemMessage(*actor.PID, any) {}
func (proxyOutlet) Stop(*actor.PID)                   {}

// dispatch sends a subscriber's dispatch to the owner's gateway, or holds it while a
// subscription is being made.
func (p *proxy) dispatch(m *channel.Dispatch) {
	echotrace.Mark("outlet")
	p.dmu.Lock()
	defer p.dmu.Unlock()
	k, ok := p.keys[m.Sub]
	if !ok {
		p.nextKey++
		k = p.nextKey
		p.keys[m.Sub], p.byKey[k] = k, m.Sub
	}
	rd := &wire.Dispatch{URI: p.uri, Action: m.Raw, Origin: m.Origin, By: m.By, Proxy: p.inbox, Key: k,
		Who: wire.CarryFor(m.Principal, auth.ActionGrant(m.Action.Type))}
	if p.holding {
		p.held = append(p.held, rd)
		return
	}
	p.system.Root.Send(p.gw, rd)
	echotrace.Mark("outlet sent")
}

// hold starts or ends holding dispatches; ending it sends what was held, unless the
// terminal is gone (drop).
func (p *proxy) hold(on, drop bool) {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	p.holding = on
	if on {
		return
	}
	held := p.held
	p.held = nil
	if drop {
		return
	}
	for _, rd := range held {
		p.system.Root.Send(p.gw, rd)
	}
}

func (p *proxy) subscribe(ctx actor.Context, m *channel.Subscribe) {
	w := waiter{sub: m.Sub, sender: ctx.Sender(), turns: m.Turns}
	if p.phase == live {
		if !p.doc.holds(m.Turns) {
			p.view(w)
			return
		}
		p.subs[m.Sub] = true
		ctx.Respond(p.snapshot())
		return
	}
	p.waiting = append(p.waiting, w)
	if p.phase == idle {
		p.gen++
		p.phase = subscribing
		p.asked = m.Turns
		p.hold(true, false)
		p.system.Root.Send(p.owner, &wire.Subscribe{URI: p.uri, Proxy: p.inbox, Gen: p.gen, Turns: m.Turns})
		self, system, gen := p.self, p.system, p.gen
		time.AfterFunc(subscribeDeadline, func() { system.Root.Send(self, &subscribeLapsed{gen: gen}) })
	}
}

func (p *proxy) snapshot() *channel.SubscribeResult {
	if p.doc != nil {
		return &channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: p.uri, State: p.doc.state(), FromSeq: p.journal.Current()}}
	}
	p.fold()
	p.sb.Settle(&p.state)
	return &channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: p.uri, State: p.state.Clone(), FromSeq: p.journal.Current()}, Terminal: p.outlet}
}

func (p *proxy) subscribed(m *wire.Subscribed) {
	waiting := p.waiting
	p.waiting = nil
	var state messages.TerminalState
	err := m.Err
	if err == nil {
		uerr := error(nil)
		if p.doc != nil {
			uerr = p.doc.load(m.State)
		} else {
			uerr = json.Unmarshal(m.State, &state)
		}
		if uerr != nil {
			err = messages.Errorf(messages.CodeInternalError, "Internal error: reading %s's state from its node: %v", p.uri, uerr)
		}
	}
	if err != nil {
		p.phase = idle
		for _, w := range waiting {
			p.system.Root.Send(w.sender, &channel.SubscribeResult{Err: err})
		}
		p.hold(false, false)
		return
	}
	p.state, p.phase = state, live
	p.sb = messages.Scrollback{Limit: p.sb.Limit}
	p.answer(waiting)
	// The owner's gateway knew the terminal before it answered: what was held goes
	// to it directly, after the subscription.
	p.hold(false, false)
	if len(p.subs) == 0 && len(p.viewing) == 0 {
		p.release()
	}
}

// release ends the subscription on the owner once nobody here reads the terminal.
func (p *proxy) release() {
	p.system.Root.Send(p.owner, &wire.Unsubscribe{URI: p.uri, Proxy: p.inbox, Gen: p.gen})
	p.phase = idle
	p.showing, p.viewing = false, nil
	p.state, p.unfolded = messages.TerminalState{}, nil
	if p.doc != nil {
		p.doc.reset()
	}
}

// foldAfter is how many escaped bytes of output may wait unfolded: the scrollback's
// own trimming bounds memory beyond it.
const foldAfter = 256 << 10

// frames folds the frames from the owner and hands them to every subscriber here,
// each with this node's next serverSeq, in one batch where the subscriber takes one
// (a connection's outbox writes them at once).
func (p *proxy) frames(fs [][]byte) {
	outs := make([][]byte, 0, len(fs))
	for _, f := range fs {
		if out := p.frame(f); out != nil {
			outs = append(outs, out)
		}
	}
	echotrace.Mark("proxy stamped")
	if len(outs) == 0 {
		return
	}
	for s := range p.subs {
		if b, ok := s.(batchSubscriber); ok && len(outs) > 1 {
			b.DeliverBatch(p.uri, outs)
			continue
		}
		for _, out := range outs {
			s.Deliver(p.uri, out)
		}
	}
	echotrace.Mark("proxy delivered")
}

// batchSubscriber is a subscriber that takes several frames of a channel at once
// (delivery.Outbox).
type batchSubscriber interface {
	DeliverBatch(channel string, frames [][]byte)
}

// frame folds one frame from the owner and stamps it with this node's next
// serverSeq; nil for a frame that cannot be read. Output, nearly every frame, is not
// decoded: its action is cut out of the frame as it is, and its escaped data waits in
// unfolded until something needs the state (a snapshot, another action, or enough of
// it).
func (p *proxy) frame(f []byte) []byte {
	var action json.RawMessage
	var origin *messages.Origin
	if p.doc != nil {
		var ok bool
		if action, origin, ok = p.doc.fold(f); !ok {
			return nil
		}
	} else if data, raw, ok := messages.SplitDataFrame(f, p.dataPrefix); ok {
		if len(p.unfolded) == 0 {
			p.unfolded = append(p.unfolded, '"')
		}
		p.unfolded = append(p.unfolded, data...)
		if len(p.unfolded) > foldAfter {
			p.fold()
		}
		action = raw
	} else if bytes.HasPrefix(f, p.inputPrefix) {
		// A keystroke's echo changes nothing in a terminal's state (ReduceTerminal has
		// no case for it), so neither its action is decoded nor the output waiting
		// folded: folding it would copy the last part's text, up to the scrollback's
		// limit, for every keystroke.
		var ok bool
		if action, origin, ok = messages.SplitInputFrame(f, p.inputPrefix); !ok {
			env, ok := readEnvelope(f)
			if !ok {
				return nil
			}
			action, origin = env.Action, env.Origin
		}
	} else {
		env, a, ok := readFrame(f)
		if !ok {
			return nil
		}
		p.fold()
		p.sb.Apply(&p.state, a)
		action, origin = env.Action, env.Origin
	}
	return p.journal.Stamp(&messages.Envelope{Channel: p.uri, Action: action, Origin: origin})
}

// fold decodes the output waiting in unfolded, as one terminal/data, into state.
func (p *proxy) fold() {
	if len(p.unfolded) == 0 {
		return
	}
	data, err := messages.UnquoteString(p.unfolded[1:])
	p.unfolded = p.unfolded[:0]
	if err != nil {
		return // the owner's frames are its own encoding; this does not happen
	}
	p.sb.Apply(&p.state, &messages.Action{Type: messages.TerminalData, Data: &data})
}

func (p *proxy) rejected(m *wire.Rejected) {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	sub := p.byKey[m.Key]
	if sub == nil {
		return
	}
	env, _, ok := readFrame(m.Frame)
	if !ok || env.Origin == nil {
		return
	}
	p.journal.Reject(sub, p.uri, env.Action, *env.Origin, env.RejectionReason)
}

// nodeLost ends the terminal for its subscribers here: terminal/exited with no code
// and _meta.reason "node lost" (issue 17), then the proxy stops.
func (p *proxy) nodeLost(ctx actor.Context, m *NodeLost) {
	p.hold(false, true)
	for _, w := range append(p.waiting, p.viewing...) {
		ctx.Send(w.sender, &channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s: its node was lost", p.uri)})
	}
	// A session or chat has no exit of its own: it leaves the root's session list,
	// and its subscribers here hear so on its channel (sessionGoneFrame).
	if p.phase == live && p.doc != nil && m.Session != "" {
		out := sessionGoneFrame(p.uri, m.Session)
		for s := range p.subs {
			s.Deliver(p.uri, out)
		}
	}
	if p.phase == live && p.doc == nil {
		p.fold()
		a := &messages.Action{Type: messages.TerminalExited, Meta: map[string]any{"reason": "node lost"}}
		messages.ReduceTerminal(&p.state, a)
		out := p.journal.Stamp(&messages.Envelope{Channel: p.uri, Action: messages.EncodeAction(a)})
		for s := range p.subs {
			s.Deliver(p.uri, out)
		}
	}
	p.phase = idle
	ctx.Stop(ctx.Self())
}

// readFrame reads the envelope of an action frame and its action.
func readFrame(f []byte) (*messages.Envelope, *messages.Action, bool) {
	env, ok := readEnvelope(f)
	if !ok {
		return nil, nil, false
	}
	var a messages.Action
	if json.Unmarshal(env.Action, &a) != nil {
		return nil, nil, false
	}
	return env, &a, true
}

// readEnvelope reads the envelope of an action frame.
func readEnvelope(f []byte) (*messages.Envelope, bool) {
	raw := messages.EnvelopeOfFrame(f)
	if raw == nil {
		return nil, false
	}
	var env messages.Envelope
	if json.Unmarshal(raw, &env) != nil {
		return nil, false
	}
	return &env, true
}

// Kind is the kind of channel a proxy stands in for.
type Kind int

const (
	Terminal Kind = iota // a terminal, folded with the terminals' own reducer
	Session              // a session's channel, folded with its reducer
	Chat                 // a chat's channel, folded with its reducer
)

// NodeLost tells a proxy that its channel's node is gone; Session is the session a
// session's or chat's proxy tells its subscribers of.
type NodeLost struct{ Session string }

// doc is the state of a session's or a chat's channel as a proxy folds it: the
// owner's snapshot, then each action through the session's or chat's own reducer.
type doc struct {
	kind    Kind
	session messages.SessionState
	chat    messages.ChatState
}

// load takes the owner's snapshot of the state.
func (d *doc) load(raw json.RawMessage) error {
	if d.kind == Session {
		d.session = messages.SessionState{}
		return json.Unmarshal(raw, &d.session)
	}
	d.chat = messages.ChatState{}
	return json.Unmarshal(raw, &d.chat)
}

// state is a copy of the state, for a snapshot.
func (d *doc) state() any {
	if d.kind == Session {
		return d.session.Clone()
	}
	return d.chat.Clone()
}

// fold folds one frame from the owner and returns its action and origin, to be
// stamped here; false for a frame that is no action.
func (d *doc) fold(f []byte) (json.RawMessage, *messages.Origin, bool) {
	env, ok := readEnvelope(f)
	if !ok {
		if at, ok := wire.Dated(f); ok && d.kind == Chat && d.chat != nil {
			d.chat.SetModifiedAt(at)
		}
		return nil, nil, false
	}
	var a map[string]any
	if json.Unmarshal(env.Action, &a) != nil {
		return nil, nil, false
	}
	if d.kind == Session {
		messages.ReduceSession(d.session, a)
	} else {
		messages.ReduceChat(d.chat, a)
	}
	return env.Action, env.Origin, true
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
// subscriber's view asked for (wire.Subscribe.Turns). A later subscriber here whose
// view wants more waits while the proxy asks the owner to bring it in
// (wire.ShowTurns): the chat/turnsLoaded that brings the turns reaches the proxy
// through its subscription, folded and handed to the subscribers it has, and the
// answer (wire.TurnsShown) comes behind it on the same way, so the waiting subscriber's
// snapshot holds the turns and it hears of nothing twice.

// showLapsed is the deadline of a proxy's wire.ShowTurns.
type showLapsed struct{ gen, round uint64 }

// holds says whether the state has what a view of turns asks for (nil: every turn):
// a chat with nothing older to page in holds every view; a session's state has no
// turns.
func (d *doc) holds(turns *int) bool {
	if d == nil || d.kind != Chat || d.chat.TurnsCursor() == "" {
		return true
	}
	return turns != nil && d.chat.TurnCount() >= *turns
}

// covers says whether a view of asked (nil: every turn) asks at least what one of
// turns does.
func covers(asked, turns *int) bool {
	return asked == nil || (turns != nil && *turns <= *asked)
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
	p.system.Root.Send(p.owner, &wire.ShowTurns{URI: p.uri, Proxy: p.inbox, Gen: p.gen, Round: p.round, Turns: most})
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
