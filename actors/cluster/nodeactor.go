package cluster

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/cluster/proxy"
	"github.com/termhost/termhost/actors/cluster/reservations"
	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
)

// peer is another node, as this one knows it.
type peer struct {
	addr, instance, name string
	pid                  *actor.PID
	rows                 []messages.TerminalInfo
	chats                []string
	sessions             []map[string]any
	load                 wire.Load
	// placed counts the terminals this node placed there since its last rows, so a
	// burst of creates spreads instead of all going to the node that looked least
	// loaded at its start.
	placed int
	// heard is when it last said anything (hello, rows, a load report).
	heard time.Time
}

// node is the node actor: membership, the list of every node's rows, placement, the
// proxies of remote terminals (caller side), and the gateway (owner side).
type node struct {
	m       *Member
	journal *delivery.Journal
	root    *actor.PID

	// members are the addresses the provider lists now; peers the nodes that said
	// hello, by address.
	members map[string]bool
	peers   map[string]*peer
	// warned are the members already named in the log as not answering.
	warned map[string]bool

	// Caller side: which peer owns each remote terminal, and the proxies standing in
	// for those somebody here uses.
	owner   map[string]string
	proxies map[string]*actor.PID

	// Owner side: the subscriptions other nodes' proxies hold here (their dispatches
	// go to the member's gateway).
	subs map[string]*remoteSub

	// afterRow are create answers waiting for the row of their terminal to go out.
	afterRow map[string][]func()

	local  []messages.TerminalInfo
	chats  []string        // this node's sessions' chats
	listed map[string]bool // the URIs of local
	// sessions are this node's sessions' summaries; sessionAt their URIs.
	sessions  []map[string]any
	sessionAt map[string]bool
	load      wire.Load
	loadTimer *time.Timer
	// The rows go to the peers at most once per rowsWindow: rowsSent is when they
	// last went, rowsTimer is set while a send waits for the window's end.
	rowsSent  time.Time
	rowsTimer *time.Timer
	// reserved are the reservations of URIs whose home is this node (reserve.go).
	reserved reservations.Book
}

// Messages of the node actor to itself.
type (
	topology struct{ members []*pcluster.Member }
	// loadTick is the load timer of the instance it names firing: one that fired as
	// its instance was replaced is not the new one's.
	loadTick struct{ of *node }
	// startDrain says this node takes no new terminals from now on.
	startDrain struct{}
	// rowsFlush is the rows throttle's timer firing.
	rowsFlush struct{}
	// unanswered is a greeting's deadline.
	unanswered struct{ addr string }
	// gatewaySubscribed is the root's answer to a subscribe the gateway made for a
	// proxy.
	gatewaySubscribed struct {
		key string
		res any
		err error
	}
)

func newNode(m *Member, journal *delivery.Journal, rootPID *actor.PID) *node {
	return &node{m: m, journal: journal, root: rootPID, members: map[string]bool{}, peers: map[string]*peer{}, warned: map[string]bool{},
		owner: map[string]string{}, proxies: map[string]*actor.PID{}, subs: map[string]*remoteSub{}, afterRow: map[string][]func(){}}
}

func (n *node) Receive(ctx actor.Context) {
	switch msg := wire.Decode(ctx.Message()).(type) {
	case *actor.Started:
		n.started(ctx)
	case *actor.Stopping, *actor.Restarting:
		n.m.topology.unfollow(ctx.Self())
		if n.loadTimer != nil {
			n.loadTimer.Stop()
		}
		if n.rowsTimer != nil {
			n.rowsTimer.Stop()
		}
		// The subscriptions other nodes' proxies held here go with this instance: the
		// root lets them go too, or a restart would leave every terminal they were on
		// feeding a subscriber nobody reads. (The proxies on the other nodes are not
		// told of a restart: their streams stop until their clients subscribe again.)
		for key, s := range n.subs {
			delete(n.subs, key)
			s.close()
			ctx.Send(n.root, &channel.Unsubscribe{Channel: s.uri, Sub: s})
		}
	case *topology:
		n.topology(ctx, msg.members)
	case *loadTick:
		if msg.of == n {
			n.tick(ctx)
		}
	case *startDrain:
		n.load.Draining = true
		for _, p := range n.peers {
			ctx.Send(p.pid, &wire.LoadReport{Addr: n.m.addr, Instance: n.m.instance, Load: n.load})
		}
	case *unanswered:
		// A member the provider lists that has not answered is greeted again, for as
		// long as it stays listed: a hello can be lost (a first connection between
		// two nodes that fails), and nothing else would ever introduce the two. The
		// log says so once.
		if n.members[msg.addr] && n.peers[msg.addr] == nil {
			if !n.warned[msg.addr] {
				n.warned[msg.addr] = true
				n.m.opts.Logger.Warn("a member of the cluster did not answer this node's hello; it may not hold the cluster's secret, or it let this node go when this node stalled past the membership provider's wait (then only a restart of this node brings it back)", "addr", msg.addr)
			}
			n.greet(ctx, msg.addr, false)
		}
	case *wire.Hello:
		n.hello(ctx, msg)
	case *wire.Rows:
		if p := n.known(ctx, msg.Addr, msg.Instance); p != nil {
			p.heard = time.Now()
			p.rows, p.chats, p.sessions, p.load, p.placed = msg.Rows, msg.Chats, msg.Sessions, msg.Load, 0
			n.publish(ctx, p)
		}
	case *wire.LoadReport:
		if p := n.known(ctx, msg.Addr, msg.Instance); p != nil {
			p.load, p.heard = msg.Load, time.Now()
		}
	case *root.LocalRows:
		n.local, n.chats = msg.Rows, msg.Chats
		n.localSessions(msg.Sessions)
		n.listed = make(map[string]bool, len(msg.Rows))
		for _, r := range msg.Rows {
			n.listed[r.Resource] = true
		}
		n.load.Terminals = len(msg.Rows)
		n.forgetUnlisted()
		n.sendRows(ctx)
	case *rowsFlush:
		n.rowsTimer = nil
		n.sendRows(ctx)

	// Caller side: what the root routes here for a terminal another node owns.
	case *channel.Subscribe:
		if !n.toProxy(ctx, msg.Channel) {
			ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", msg.Channel)})
		}
	case *channel.Unsubscribe:
		n.toProxy(ctx, msg.Channel)
	case *channel.Dispatch:
		n.toProxy(ctx, msg.Channel)
	case *terminal.Dispose:
		n.dispose(ctx, msg)
	case *terminal.Create:
		n.place(ctx, msg)
	case *placed:
		n.placedAnswer(ctx, msg)
	case *session.Create:
		n.placeSession(ctx, msg)
	case *session.Dispose, *session.CreateChat, *session.DisposeChat, *session.StopBackgroundWork, *session.FetchTurns:
		n.toOwner(ctx, msg)
	case *session.ClientLeft:
		n.tellPresence(ctx, &wire.Presence{ClientID: msg.ClientID, Left: true})
	case *session.ClientBack:
		n.tellPresence(ctx, &wire.Presence{ClientID: msg.ClientID})
	case *wire.Presence:
		n.heardPresence(ctx, msg)
	case *root.Reserve:
		n.reserveFor(ctx, msg)
	case *root.Release:
		n.release(ctx, msg)
	case *wire.Reserve:
		ctx.Respond(&wire.ReserveAnswer{Taken: n.decideReserve(msg)})
	case *wire.ReserveRelease:
		n.released(msg)

	// Owner side: another node's proxy acting here.
	case *wire.Subscribe:
		n.gatewaySubscribe(ctx, msg)
	case *gatewaySubscribed:
		n.gatewaySubscribed(msg)
	case *wire.ShowTurns:
		n.gatewayShowTurns(ctx, msg)
	case *wire.Unsubscribe:
		key := subKey(msg.Proxy, msg.Gen)
		if s := n.subs[key]; s != nil {
			delete(n.subs, key)
			s.close()
			ctx.Send(n.root, &channel.Unsubscribe{Channel: msg.URI, Sub: s})
		}
	case *wire.Dispatch:
		// From a node that sent it here rather than to the gateway.
		n.m.gw.dispatch(msg)
	case *wire.Create:
		n.gatewayCreate(ctx, msg)
	case *wire.Dispose:
		n.gatewayDispose(ctx, msg)
	case *wire.SessionRequest:
		n.gatewaySession(ctx, msg)
	case *wire.Ping:
		ctx.Respond(&wire.Pong{})
	case *actor.Terminated:
		for uri, pid := range n.proxies {
			if pid.Id == msg.Who.Id {
				delete(n.proxies, uri)
			}
		}
	case error:
		n.m.opts.Logger.Warn("a node message could not be read", "err", msg)
	}
}

func (n *node) started(ctx actor.Context) {
	self, system := ctx.Self(), ctx.ActorSystem()
	members := n.m.topology.follow(self, func(m []*pcluster.Member) any { return &topology{members: m} })
	n.load.Average = loadAverage()
	ctx.Send(n.root, &root.ResendRows{})
	n.topology(ctx, members)
	n.loadTimer = time.AfterFunc(n.m.opts.LoadInterval, func() { system.Root.Send(self, &loadTick{of: n}) })
}

// topology follows the provider: a node it no longer lists is lost, and one it newly
// lists is greeted.
func (n *node) topology(ctx actor.Context, members []*pcluster.Member) {
	now := memberAddrs(members, n.m.addr)
	for addr, p := range n.peers {
		if n.members[addr] && !now[addr] {
			n.lost(ctx, p, "the membership provider no longer lists it")
		}
	}
	for addr := range now {
		if !n.members[addr] {
			n.greet(ctx, addr, false)
		}
	}
	n.members = now
}

func (n *node) greet(ctx actor.Context, addr string, reply bool) {
	n.m.opts.Logger.Debug("greeting a node", "addr", addr, "reply", reply)
	ctx.Send(actor.NewPID(addr, NodeName), &wire.Hello{Addr: n.m.addr, Instance: n.m.instance, Name: n.m.opts.Name, Rows: n.local, Chats: n.chats, Sessions: n.sessions, Load: n.load, Reply: reply})
	if !reply {
		self, system := ctx.Self(), ctx.ActorSystem()
		time.AfterFunc(greetDeadline, func() { system.Root.Send(self, &unanswered{addr: addr}) })
	}
}

// greetDeadline is how long a member has to answer a hello before this node says, in
// its log, that it did not: a node whose secret differs is listed by the provider and
// never heard from.
const greetDeadline = 3 * time.Second

// silentPeerLoads is how many of its load reports a peer the provider does not list
// may miss before it is taken for lost.
const silentPeerLoads = 3

func (n *node) tick(ctx actor.Context) {
	n.load.Average = loadAverage()
	for _, p := range n.peers {
		ctx.Send(p.pid, &wire.LoadReport{Addr: n.m.addr, Instance: n.m.instance, Load: n.load})
	}
	// A peer the provider lists is lost when the provider stops listing it. One it
	// does not list (a node known by its hello alone: one outside this node's seeds,
	// or one protoactor-go's member list blocked after a health check timed out) has
	// no such end: it is lost when it has been silent for silentPeerLoads of its load
	// reports, or its terminals would stay on this node's list after it died.
	for addr, p := range n.peers {
		if !n.members[addr] && time.Since(p.heard) > silentPeerLoads*n.m.opts.LoadInterval {
			n.lost(ctx, p, "it has not been heard from, and the membership provider does not list it")
		}
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	n.loadTimer = time.AfterFunc(n.m.opts.LoadInterval, func() { system.Root.Send(self, &loadTick{of: n}) })
}

// hello takes a node in. Its calls reached this one through the cluster's secret, so
// it is one of ours; a new instance at a known address means the old one died.
func (n *node) hello(ctx actor.Context, h *wire.Hello) {
	n.m.opts.Logger.Debug("a hello came", "from", h.Addr, "name", h.Name, "reply", h.Reply)
	delete(n.warned, h.Addr)
	p := n.peers[h.Addr]
	fresh := p == nil || p.instance != h.Instance
	if p != nil && fresh {
		n.lost(ctx, p, "it restarted")
	}
	if fresh {
		p = &peer{addr: h.Addr, instance: h.Instance, pid: actor.NewPID(h.Addr, NodeName)}
		n.peers[h.Addr] = p
		n.m.opts.Logger.Info("a node joined", "node", h.Name, "addr", h.Addr)
	}
	p.name, p.rows, p.chats, p.sessions, p.load, p.placed, p.heard = h.Name, h.Rows, h.Chats, h.Sessions, h.Load, 0, time.Now()
	n.publish(ctx, p)
	switch {
	case !h.Reply:
		// Every greeting is answered, also from a node already known here: this
		// node's answer to its first greeting may have been lost (protoactor's remote
		// delivers at most once, and what is sent while a connection to a restarted
		// node is being made again is dropped). Answering only new nodes left such a
		// node deaf for good: it greeted again and again, this node took each hello
		// as from a node it knew and said nothing, and the node never heard of it.
		n.greet(ctx, h.Addr, true)
	case fresh:
		// The answer to this node's own hello. What this node lists may have changed
		// since that hello went out, while the peer was not yet known here to be told
		// (a restarted node restores its sessions' chats just then): tell it now.
		ctx.Send(p.pid, n.rowsNow())
	}
}

// known is the peer a message comes from, or nil (after asking it to introduce
// itself) when this node does not know that instance.
func (n *node) known(ctx actor.Context, addr, instance string) *peer {
	if p := n.peers[addr]; p != nil && p.instance == instance {
		return p
	}
	n.greet(ctx, addr, false)
	return nil
}

// publish tells the root a peer's rows, and keeps which terminals it owns.
func (n *node) publish(ctx actor.Context, p *peer) {
	owned := map[string]bool{}
	for _, r := range p.rows {
		owned[r.Resource] = true
		n.owner[r.Resource] = p.addr
	}
	for uri, addr := range n.owner {
		if addr == p.addr && !owned[uri] {
			delete(n.owner, uri)
			// Disposed there: its subscribers get nothing more, as on one node.
			if pid := n.proxies[uri]; pid != nil {
				delete(n.proxies, uri)
				ctx.Stop(pid)
			}
		}
	}
	// So with a session or chat no node holds any more.
	for uri, pid := range n.proxies {
		if _, known := n.owner[uri]; !known {
			if holder, _ := n.channelOwner(uri); holder == nil {
				delete(n.proxies, uri)
				ctx.Stop(pid)
			}
		}
	}
	ctx.Send(n.root, &root.RemoteRows{Source: p.addr, Rows: slices.Clone(p.rows), Chats: slices.Clone(p.chats), Sessions: slices.Clone(p.sessions)})
}

// lost takes a node that went off every list here: its terminals exit for their
// subscribers with _meta.reason "node lost", and what it subscribed to here ends.
func (n *node) lost(ctx actor.Context, p *peer, why string) {
	n.m.opts.Logger.Warn("a node was lost; its terminals exit on this node's list", "node", p.name, "addr", p.addr, "why", why)
	for uri, addr := range n.owner {
		if addr != p.addr {
			continue
		}
		delete(n.owner, uri)
		if pid := n.proxies[uri]; pid != nil {
			delete(n.proxies, uri)
			ctx.Send(pid, &proxy.NodeLost{})
		}
	}
	for uri, pid := range n.proxies {
		if holder, kind := n.channelOwner(uri); holder == p {
			delete(n.proxies, uri)
			ctx.Send(pid, &proxy.NodeLost{Session: sessionOf(p, uri, kind)})
		}
	}
	delete(n.peers, p.addr)
	n.reserved.Drop(p.addr)
	ctx.Send(n.root, &root.RemoteRows{Source: p.addr, Lost: true})
	for key, s := range n.subs {
		if s.proxy.Address == p.addr {
			delete(n.subs, key)
			s.close()
			ctx.Send(n.root, &channel.Unsubscribe{Channel: s.uri, Sub: s})
		}
	}
}

// toProxy forwards what the root routed here to the proxy of a remote terminal,
// spawning it on first use; false when no node owns the terminal.
func (n *node) toProxy(ctx actor.Context, uri string) bool {
	pid := n.proxies[uri]
	if pid == nil {
		p, kind := n.peers[n.owner[uri]], proxy.Terminal
		if p == nil {
			p, kind = n.channelOwner(uri)
		}
		if p == nil {
			return false
		}
		pid = ctx.Spawn(proxy.Props(uri, kind, p.pid, actor.NewPID(p.pid.Address, GatewayName), n.journal, n.m.opts.ScrollbackLimit))
		ctx.Watch(pid)
		n.proxies[uri] = pid
	}
	ctx.Forward(pid)
	return true
}

func (n *node) dispose(ctx actor.Context, m *terminal.Dispose) {
	p := n.peers[n.owner[m.URI]]
	if p == nil {
		ctx.Respond(&terminal.DisposeResult{})
		return
	}
	f := ctx.RequestFuture(p.pid, &wire.Dispose{URI: m.URI, Who: wire.Carry(m.By)}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, _ error) {
		if r, ok := wire.Decode(res).(*wire.DisposeResult); ok && r.Err != nil {
			n.m.opts.Logger.Warn("a node refused a dispose", "uri", m.URI, "node", p.name, "err", r.Err.Message)
		}
		ctx.Respond(&terminal.DisposeResult{})
	})
}

// place puts a client's new terminal on the node it names, else on the least loaded
// node: fewest terminals, then the lowest load average.
func (n *node) place(ctx actor.Context, m *terminal.Create) {
	target, err := n.pick(m.Node)
	if err != nil {
		ctx.Respond(&terminal.CreateResult{Err: err})
		return
	}
	if target == nil {
		local := *m
		local.Node = n.m.opts.Name
		n.load.Terminals++ // until the root's rows say so
		ctx.RequestWithCustomSender(n.root, &local, ctx.Sender())
		return
	}
	target.placed++
	n.askAfterRows(ctx, target, &wire.Create{URI: m.URI, Claim: m.Claim, Name: m.Name, Cwd: m.Cwd, Cols: m.Cols, Rows: m.Rows, Spec: wire.Spec(m.Spec), Who: wire.Carry(m.By)})
}

// askAfterRows sends a create (or a session request) to the node p and answers the
// client's request with p's answer, after whatever p sent before it.
func (n *node) askAfterRows(ctx actor.Context, p *peer, req any) {
	f := ctx.RequestFuture(p.pid, req, channel.RequestTimeout)
	// Not ReenterAfter: its continuation is a system message, handled before the user
	// messages already waiting, and the owner's rows that list the new terminal, sent
	// just before its answer on the same stream, are waiting (see gatewayCreate). The
	// client would hear of its terminal before this node knew where it is, and its
	// subscribe would find nothing. A message of its own goes after them.
	self, system, sender, name := ctx.Self(), ctx.ActorSystem(), ctx.Sender(), p.name
	_, isSession := req.(*wire.SessionRequest)
	go func() {
		res, err := f.Result()
		system.Root.Send(self, &placed{sender: sender, node: name, session: isSession, res: res, err: err})
	}()
}

// pick is the peer a new terminal or session goes to: the node named, else the least
// loaded (fewest terminals, then the lowest load average, never a draining one); nil
// for this node.
func (n *node) pick(name string) (*peer, *messages.Error) {
	var target *peer
	switch {
	case name == n.m.opts.Name:
	case name != "":
		for _, p := range n.peers {
			if p.name == name {
				target = p
			}
		}
		if target == nil {
			return nil, messages.Errorf(messages.CodeInvalidParams, "Invalid params: no node %q in this cluster; the nodes are %s", name, strings.Join(n.nodeNames(), ", "))
		}
	default:
		best := n.load
		for _, p := range n.peers {
			l := wire.Load{Terminals: p.load.Terminals + p.placed, Average: p.load.Average}
			if p.load.Draining {
				continue
			}
			if best.Draining || l.Terminals < best.Terminals || l.Terminals == best.Terminals && l.Average < best.Average {
				best, target = l, p
			}
		}
	}
	return target, nil
}

// placed is the owner's answer to a create placed there (or a session request, when
// session is set), for the client that asked.
type placed struct {
	sender  *actor.PID
	node    string
	session bool
	res     any
	err     error
}

func (n *node) placedAnswer(ctx actor.Context, m *placed) {
	var res any = wire.Decode(m.res)
	if m.err != nil {
		res = nil
	}
	switch r := res.(type) {
	case *wire.CreateResult:
		ctx.Send(m.sender, &terminal.CreateResult{Err: r.Err, IsPty: r.IsPty, Detection: r.Detection})
	case *wire.SessionResult:
		ctx.Send(m.sender, &session.Result{Err: r.Err, Chat: r.Chat})
	default:
		err := messages.Errorf(messages.CodeInternalError, "Internal error: node %s did not answer in time", m.node)
		if m.session {
			ctx.Send(m.sender, &session.Result{Err: err})
		} else {
			ctx.Send(m.sender, &terminal.CreateResult{Err: err})
		}
	}
}

func (n *node) nodeNames() []string {
	names := []string{n.m.opts.Name}
	for _, p := range n.peers {
		names = append(names, p.name)
	}
	slices.Sort(names)
	return names
}

// loadAverage is the machine's one-minute load average, 0 where it cannot be read.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

func subKey(pid *actor.PID, gen uint64) string {
	return fmt.Sprintf("%s/%s/%d", pid.GetAddress(), pid.GetId(), gen)
}

// forgetUnlisted drops what the gateway keeps of terminals this node no longer lists.
func (n *node) forgetUnlisted() { n.m.gw.forget(n.listed) }

// rowsWindow throttles this node's rows to its peers, as the root throttles its list
// (a burst of a thousand creates would otherwise send a thousand ever longer lists to
// every node): the first change after a quiet window goes at once, the rest as one
// at the window's end.
const rowsWindow = 10 * time.Millisecond

// sendRows tells every peer this node's rows, unless the window says wait; the
// creates waiting for their row are answered after it went.
// rowsNow is this node's rows message as it lists them now.
func (n *node) rowsNow() *wire.Rows {
	return &wire.Rows{Addr: n.m.addr, Instance: n.m.instance, Rows: n.local, Chats: n.chats, Sessions: n.sessions, Load: n.load}
}

func (n *node) sendRows(ctx actor.Context) {
	if n.rowsTimer != nil {
		return
	}
	if wait := rowsWindow - time.Since(n.rowsSent); wait > 0 {
		self, system := ctx.Self(), ctx.ActorSystem()
		n.rowsTimer = time.AfterFunc(wait, func() { system.Root.Send(self, &rowsFlush{}) })
		return
	}
	n.rowsSent = time.Now()
	now := n.rowsNow()
	for _, p := range n.peers {
		ctx.Send(p.pid, now)
	}
	for uri, answers := range n.afterRow {
		if n.lists(uri) {
			delete(n.afterRow, uri)
			for _, answer := range answers {
				answer()
			}
		}
	}
}
