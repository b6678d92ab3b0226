// Package users owns the cluster's users: it keeps each node's copy of the users
// file in step with every other node's, so a user made, changed or revoked on any
// node is known on all of them, and a revocation closes the user's connections
// everywhere (a merged file is a changed users file, which every node's connections
// already follow).
//
// Every node keeps its own users file, and a users actor on each node, named
// ActorName, sends the others its copy: to a node that joins, to every node when the
// copy changes here (a `termhost token` command, an edit, a merge), and in answer to a
// copy that lacked something it has. Each node merges what it receives
// (auth.Store.Merge: tokens and revocations are sets, a user's role a last-writer-wins
// register with a Lamport clock). Now and then each node sends the others a digest
// of its copy; a node whose own differs answers with its copy, so a copy lost on the
// way or a node the membership had not shown yet is caught up.
//
// A node that starts asks every member the provider lists for its copy and merges
// them before it serves anyone (Replica.Sync), so a node that was down while a token
// was revoked does not take that token.
//
// The package knows of the membership only what Node says, and sends only package
// wire's users messages; it imports nothing of package cluster, which spawns the
// actor and provides the Node.
package users

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/auth"
)

// ActorName is the users actor's name on every node.
const ActorName = "termhost-users"

const (
	// usersPoll is how often the users actor looks whether its node's users file
	// changed (one stat).
	usersPoll = 250 * time.Millisecond
	// digestEvery is how many polls pass between digests to the other nodes.
	digestEvery = 8
	// syncTimeout is how long a starting node waits for the others' users: a member
	// the provider still lists may be dead.
	syncTimeout = 3 * time.Second
)

// Node is what the users actor uses of its node's membership of the cluster: the
// actor system it runs in, the address the others reach it at, and the provider's
// view of the other members (by address, this node's left out).
type Node interface {
	// ActorSystem is the node's actor system, whose remote reaches the other nodes.
	ActorSystem() *actor.ActorSystem
	// Addr is this node's address (host:port), as the others reach it.
	Addr() string
	// Peers are the other members' addresses in the provider's latest list.
	Peers() map[string]bool
	// FollowPeers returns Peers and has pid sent wrap(peers) for every list after
	// them, until UnfollowPeers, with no list missed in between: an actor that began
	// to follow while a list was published and heard of none would greet nobody.
	// Each call gets a map of its own. Following again replaces the wrap.
	FollowPeers(pid *actor.PID, wrap func(peers map[string]bool) any) map[string]bool
	// UnfollowPeers stops telling pid of the lists.
	UnfollowPeers(pid *actor.PID)
}

// Replica is this node's copy of the cluster's users, and what keeps it in step with
// the other nodes': the users actor (NewActor) and the sync at start (Sync).
type Replica struct {
	node  Node
	store *auth.Store
	log   *slog.Logger
}

// NewReplica makes store this node's copy of the cluster's users: from now on its
// changes get versions the other copies merge by. log hears what another node sent
// that was not taken; nil discards it.
func NewReplica(node Node, store *auth.Store, log *slog.Logger) (*Replica, error) {
	if err := store.EnableReplication(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Replica{node: node, store: store, log: log}, nil
}

// NewActor makes a users actor, to be spawned under ActorName (the others address it
// by that name alone) and restarted after every failure: a node without it takes no
// user change again. A restarted one greets every member afresh.
func (r *Replica) NewActor() actor.Actor {
	return &usersActor{node: r.node, store: r.store, log: r.log, members: map[string]bool{}, refused: map[string]string{}}
}

// Sync asks every other member the provider lists now for its users and merges them
// into this node's, waiting up to syncTimeout, and returns how many answered of how
// many were asked. A node alone asks nobody.
func (r *Replica) Sync() (answered, asked int) {
	var futures []*actor.Future
	for addr := range r.node.Peers() {
		futures = append(futures, r.node.ActorSystem().Root.RequestFuture(actor.NewPID(addr, ActorName), &wire.UsersPull{}, syncTimeout))
	}
	for _, f := range futures {
		res, err := f.Result()
		doc, ok := wire.Decode(res).(*wire.UsersDoc)
		if err != nil || !ok {
			continue
		}
		if _, _, err := r.store.Merge(doc.Doc); err != nil {
			r.log.Warn("another node's users were not taken", "from", doc.From, "err", err)
			continue
		}
		answered++
	}
	return answered, len(futures)
}

// Messages of the users actor to itself.
type (
	peersListed struct{ peers map[string]bool }
	// usersTick is the poll timer of the instance it names firing: one that fired as
	// its instance was replaced is not the new one's.
	usersTick struct{ of *usersActor }
)

// usersActor is the users actor.
type usersActor struct {
	node  Node
	store *auth.Store
	log   *slog.Logger
	// members are the other nodes' addresses, as the provider lists them.
	members map[string]bool
	// gen is the store's generation last sent to the others.
	gen uint64
	// refused is why each node's last copy was not taken, while it is not.
	refused map[string]string
	ticks   int
	timer   *time.Timer
}

func (u *usersActor) Receive(ctx actor.Context) {
	switch msg := wire.Decode(ctx.Message()).(type) {
	case *actor.Started:
		members := u.node.FollowPeers(ctx.Self(), func(peers map[string]bool) any { return &peersListed{peers: peers} })
		u.gen = u.store.Generation()
		u.topology(ctx, members)
		u.schedule(ctx)
	case *actor.Stopping, *actor.Restarting:
		if u.timer != nil {
			u.timer.Stop()
		}
		u.node.UnfollowPeers(ctx.Self())
	case *peersListed:
		u.topology(ctx, msg.peers)
	case *usersTick:
		if msg.of != u {
			return
		}
		u.sendIfChanged(ctx)
		if u.ticks++; u.ticks%digestEvery == 0 {
			d := &wire.UsersDigest{From: u.node.Addr(), Sum: u.store.Digest()}
			for addr := range u.members {
				ctx.Send(actor.NewPID(addr, ActorName), d)
			}
		}
		u.schedule(ctx)
	case *wire.UsersPull:
		ctx.Respond(u.doc())
	case *wire.UsersDigest:
		if msg.Sum != u.store.Digest() {
			ctx.Send(actor.NewPID(msg.From, ActorName), u.doc())
		}
	case *wire.UsersDoc:
		// What changed here goes out first, so a merge's answer cannot hide it.
		u.sendIfChanged(ctx)
		changed, behind, err := u.store.Merge(msg.Doc)
		if err != nil {
			// Said once per node and reason: the node sends its copy again with every
			// digest that differs.
			if why := err.Error(); u.refused[msg.From] != why {
				u.refused[msg.From] = why
				u.log.Warn("another node's users were not taken", "from", msg.From, "err", err)
			}
			return
		}
		delete(u.refused, msg.From)
		if changed {
			u.log.Info("users changed on another node were taken", "from", msg.From)
		}
		u.gen = u.store.Generation()
		if behind {
			ctx.Send(actor.NewPID(msg.From, ActorName), u.doc())
		}
	case error:
		u.log.Warn("a users message could not be read", "err", msg)
	}
}

func (u *usersActor) doc() *wire.UsersDoc {
	return &wire.UsersDoc{From: u.node.Addr(), Doc: u.store.Export()}
}

func (u *usersActor) schedule(ctx actor.Context) {
	self, system := ctx.Self(), ctx.ActorSystem()
	u.timer = time.AfterFunc(usersPoll, func() { system.Root.Send(self, &usersTick{of: u}) })
}

// topology greets the nodes the provider newly lists with this node's users.
func (u *usersActor) topology(ctx actor.Context, now map[string]bool) {
	var doc *wire.UsersDoc
	for addr := range now {
		if !u.members[addr] {
			if doc == nil {
				doc = u.doc()
			}
			ctx.Send(actor.NewPID(addr, ActorName), doc)
		}
	}
	u.members = now
}

// sendIfChanged sends this node's users to every other node when they changed since
// they last went.
func (u *usersActor) sendIfChanged(ctx actor.Context) {
	gen := u.store.Generation()
	if gen == u.gen {
		return
	}
	u.gen = gen
	doc := u.doc()
	for addr := range u.members {
		ctx.Send(actor.NewPID(addr, ActorName), doc)
	}
}
