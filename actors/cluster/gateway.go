package cluster

import (
	"encoding/json"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
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
		s.answer(&subscribed{Gen: s.gen, State: state})
		if r.Terminal != nil && !n.viaRoot[s.uri] {
			n.terminals[s.uri] = r.Terminal
		}
	}
}

// gatewayDispatch acts out a remote client's dispatch here, as the entry node
// admitted it: accepted, its echo reaches every subscriber (the proxies among them);
// refused, the refusal goes back to the one that sent it.
func (n *node) gatewayDispatch(ctx actor.Context, m *remoteDispatch) {
	var a messages.Action
	if err := json.Unmarshal(m.Action, &a); err != nil || a.Type == "" {
		n.m.opts.Logger.Debug("dropping a malformed remote dispatch", "uri", m.URI)
		return
	}
	who := m.Who.principal()
	sub := rejectSub{system: ctx.ActorSystem(), proxy: m.Proxy, key: m.Key}
	if grant := auth.ActionGrant(a.Type); grant != "" && !who.Can(grant) {
		n.journal.Reject(sub, m.URI, m.Action, m.Origin, who.Refusal(grant))
		return
	}
	d := &channel.Dispatch{Channel: m.URI, Action: &a, Raw: m.Action, Origin: m.Origin, By: m.By, Principal: who, Sub: sub}
	// Straight to the terminal once a subscribe named it, as a connection does
	// (channel.SubscribeResult.Terminal), unless a dispatch already went through the
	// root, which it could overtake.
	if pid := n.terminals[m.URI]; pid != nil {
		if _, alive := ctx.ActorSystem().ProcessRegistry.Get(pid); alive {
			ctx.Send(pid, d)
			return
		}
		delete(n.terminals, m.URI)
	}
	n.viaRoot[m.URI] = true
	ctx.Send(n.root, d)
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
