package cluster

import (
	"bytes"
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// proxy stands in, on the calling node, for one terminal another node owns. It holds
// one subscription on the owner however many subscribers it has here, folds what
// comes with the terminals' own reducer, and answers each subscribe here with that
// state and then every later action, stamped by this node's journal: what a
// subscriber of a local terminal gets, nothing lost or doubled.
type proxy struct {
	uri     string
	owner   *actor.PID
	journal *delivery.Journal

	// gen numbers this proxy's subscriptions on the owner; what an earlier one still
	// sends is dropped.
	gen   uint64
	phase phase
	state messages.TerminalState
	sb    messages.Scrollback
	// dataPrefix is how every terminal/data frame of this channel begins, up to its
	// data; unfolded holds output that came as such frames and is not folded into
	// state yet, still JSON-escaped, with a quote before it: folding it takes one
	// decode for many frames instead of two for each (see frame).
	dataPrefix []byte
	unfolded   []byte

	subs    map[delivery.Subscriber]bool
	waiting []waiter

	// keys name each local dispatcher to the owner, for a refusal to find its way back.
	keys    map[delivery.Subscriber]uint64
	byKey   map[uint64]delivery.Subscriber
	nextKey uint64
}

type phase int

const (
	idle phase = iota
	subscribing
	live
)

// waiter is a subscribe that waits for the owner's snapshot.
type waiter struct {
	sub    delivery.Subscriber
	sender *actor.PID
}

func newProxyProps(uri string, owner *actor.PID, journal *delivery.Journal, limit int) *actor.Props {
	if limit <= 0 {
		limit = 200_000
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &proxy{uri: uri, owner: owner, journal: journal, sb: messages.Scrollback{Limit: limit}, dataPrefix: messages.DataFramePrefix(uri),
			subs: map[delivery.Subscriber]bool{}, keys: map[delivery.Subscriber]uint64{}, byKey: map[uint64]delivery.Subscriber{}}
	})
}

func (p *proxy) Receive(ctx actor.Context) {
	switch m := Decode(ctx.Message()).(type) {
	case *channel.Subscribe:
		p.subscribe(ctx, m)
	case *subscribed:
		if m.Gen == p.gen && p.phase == subscribing {
			p.subscribed(ctx, m)
		}
	case *frame:
		if m.Gen == p.gen && p.phase == live {
			p.frame(m.Frame)
		}
	case *rejected:
		p.rejected(m)
	case *channel.Unsubscribe:
		delete(p.subs, m.Sub)
		for i, w := range p.waiting {
			if w.sub == m.Sub {
				p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
				break
			}
		}
		if k, ok := p.keys[m.Sub]; ok {
			delete(p.keys, m.Sub)
			delete(p.byKey, k)
		}
		if p.phase == live && len(p.subs) == 0 {
			p.release(ctx)
		}
	case *channel.Dispatch:
		k, ok := p.keys[m.Sub]
		if !ok {
			p.nextKey++
			k = p.nextKey
			p.keys[m.Sub], p.byKey[k] = k, m.Sub
		}
		ctx.Send(p.owner, &remoteDispatch{URI: p.uri, Action: m.Raw, Origin: m.Origin, By: m.By, Proxy: ctx.Self(), Key: k,
			Who: carryFor(m.Principal, auth.ActionGrant(m.Action.Type))})
	case *nodeLost:
		p.nodeLost(ctx)
	case *actor.Stopping:
		if p.phase != idle {
			ctx.Send(p.owner, &remoteUnsubscribe{URI: p.uri, Proxy: ctx.Self(), Gen: p.gen})
		}
	}
}

func (p *proxy) subscribe(ctx actor.Context, m *channel.Subscribe) {
	if p.phase == live {
		p.subs[m.Sub] = true
		ctx.Respond(p.snapshot(ctx))
		return
	}
	p.waiting = append(p.waiting, waiter{sub: m.Sub, sender: ctx.Sender()})
	if p.phase == idle {
		p.gen++
		p.phase = subscribing
		ctx.Send(p.owner, &remoteSubscribe{URI: p.uri, Proxy: ctx.Self(), Gen: p.gen})
	}
}

func (p *proxy) snapshot(ctx actor.Context) *channel.SubscribeResult {
	p.fold()
	p.sb.Settle(&p.state)
	return &channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: p.uri, State: p.state.Clone(), FromSeq: p.journal.Current()}, Terminal: ctx.Self()}
}

func (p *proxy) subscribed(ctx actor.Context, m *subscribed) {
	waiting := p.waiting
	p.waiting = nil
	var state messages.TerminalState
	err := m.Err
	if err == nil {
		if uerr := json.Unmarshal(m.State, &state); uerr != nil {
			err = messages.Errorf(messages.CodeInternalError, "Internal error: reading %s's state from its node: %v", p.uri, uerr)
		}
	}
	if err != nil {
		p.phase = idle
		for _, w := range waiting {
			ctx.Send(w.sender, &channel.SubscribeResult{Err: err})
		}
		return
	}
	p.state, p.phase = state, live
	p.sb = messages.Scrollback{Limit: p.sb.Limit}
	for _, w := range waiting {
		p.subs[w.sub] = true
		ctx.Send(w.sender, p.snapshot(ctx))
	}
	if len(p.subs) == 0 {
		p.release(ctx)
	}
}

// release ends the subscription on the owner once nobody here reads the terminal.
func (p *proxy) release(ctx actor.Context) {
	ctx.Send(p.owner, &remoteUnsubscribe{URI: p.uri, Proxy: ctx.Self(), Gen: p.gen})
	p.phase = idle
	p.state, p.unfolded = messages.TerminalState{}, nil
}

// foldAfter is how many escaped bytes of output may wait unfolded: the scrollback's
// own trimming bounds memory beyond it.
const foldAfter = 256 << 10

// frame folds one frame from the owner and hands it to every subscriber here with
// this node's next serverSeq. Output, nearly every frame, is not decoded: its action
// is cut out of the frame as it is, and its escaped data waits in unfolded until
// something needs the state (a snapshot, another action, or enough of it).
func (p *proxy) frame(f []byte) {
	var action json.RawMessage
	var origin *messages.Origin
	if data, raw, ok := p.splitData(f); ok {
		if len(p.unfolded) == 0 {
			p.unfolded = append(p.unfolded, '"')
		}
		p.unfolded = append(p.unfolded, data...)
		if len(p.unfolded) > foldAfter {
			p.fold()
		}
		action = raw
	} else {
		env, a, ok := readFrame(f)
		if !ok {
			return
		}
		p.fold()
		p.sb.Apply(&p.state, a)
		action, origin = env.Action, env.Origin
	}
	out := p.journal.Stamp(&messages.Envelope{Channel: p.uri, Action: action, Origin: origin})
	for s := range p.subs {
		s.Deliver(p.uri, out)
	}
}

// dataTail ends a terminal/data action in a frame and opens its serverSeq.
var dataTail = []byte(`"},"serverSeq":`)

// splitData cuts a terminal/data frame of this channel into its escaped data and its
// action's bytes; false for any other frame.
func (p *proxy) splitData(f []byte) (data, action []byte, ok bool) {
	if !bytes.HasPrefix(f, p.dataPrefix) {
		return nil, nil, false
	}
	end := bytes.LastIndex(f, dataTail)
	if end < len(p.dataPrefix) || !bytes.HasSuffix(f, []byte("}}")) {
		return nil, nil, false
	}
	// The action starts at its opening brace, just before `"type"`.
	start := len(p.dataPrefix) - len(`{"type":"terminal/data","data":"`)
	return f[len(p.dataPrefix):end], f[start : end+2], true
}

// fold decodes the output waiting in unfolded, as one terminal/data, into state.
func (p *proxy) fold() {
	if len(p.unfolded) == 0 {
		return
	}
	var data string
	err := json.Unmarshal(append(p.unfolded, '"'), &data)
	p.unfolded = p.unfolded[:0]
	if err != nil {
		return // the owner's frames are its own encoding; this does not happen
	}
	p.sb.Apply(&p.state, &messages.Action{Type: messages.TerminalData, Data: &data})
}

func (p *proxy) rejected(m *rejected) {
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
func (p *proxy) nodeLost(ctx actor.Context) {
	for _, w := range p.waiting {
		ctx.Send(w.sender, &channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s: its node was lost", p.uri)})
	}
	if p.phase == live {
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
	raw := messages.EnvelopeOfFrame(f)
	if raw == nil {
		return nil, nil, false
	}
	var env messages.Envelope
	if json.Unmarshal(raw, &env) != nil {
		return nil, nil, false
	}
	var a messages.Action
	if json.Unmarshal(env.Action, &a) != nil {
		return nil, nil, false
	}
	return &env, &a, true
}
