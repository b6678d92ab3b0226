package cluster

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/auth"
)

// The cluster's users. Every node keeps its own users file, and a users actor on each
// node, named UsersName, sends the others its copy: to a node that joins, to every
// node when the copy changes here (a `termhost token` command, an edit, a merge), and
// in answer to a copy that lacked something it has. Each node merges what it
// receives (auth.Store.Merge: tokens and revocations are sets, a user's role a
// last-writer-wins register with a Lamport clock), so a user made, changed or revoked
// on any node is known on all of them, and a revocation closes the user's
// connections everywhere: a merged file is a changed users file, which every node's
// connections already follow. Now and then each node sends the others a digest of
// its copy; a node whose own differs answers with its copy, so a copy lost on the way
// or a node the membership had not shown yet is caught up.
//
// A node that starts asks every member the provider lists for its copy and merges
// them before it serves anyone (Member.SyncUsers), so a node that was down while a
// token was revoked does not take that token.

// UsersName is the users actor's name on every node.
const UsersName = "termhost-users"

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

// Messages of the users actor to itself.
type (
	usersTopology struct{ members []*pcluster.Member }
	usersTick     struct{ of *users } // as loadTick
)

// users is the users actor.
type users struct {
	m     *Member
	store *auth.Store
	// members are the other nodes' addresses, as the provider lists them.
	members map[string]bool
	// gen is the store's generation last sent to the others.
	gen uint64
	// refused is why each node's last copy was not taken, while it is not.
	refused map[string]string
	ticks   int
	timer   *time.Timer
}

// SpawnUsers makes store this node's copy of the cluster's users and starts the
// users actor. Call it after Join, before SyncUsers.
func (m *Member) SpawnUsers(store *auth.Store) error {
	if err := store.EnableReplication(); err != nil {
		return err
	}
	err := m.spawnForGood(UsersName, func() actor.Actor {
		return &users{m: m, store: store, members: map[string]bool{}, refused: map[string]string{}}
	})
	if err == nil {
		m.users = store
	}
	return err
}

// SyncUsers asks every other member the provider lists now for its users and merges
// them into this node's, waiting up to syncTimeout, and returns how many answered of
// how many were asked. A node alone asks nobody.
func (m *Member) SyncUsers() (answered, asked int) {
	if m.users == nil {
		return 0, 0
	}
	var futures []*actor.Future
	for addr := range memberAddrs(m.topology.Members(), m.addr) {
		futures = append(futures, m.system.Root.RequestFuture(actor.NewPID(addr, UsersName), &wire.UsersPull{}, syncTimeout))
	}
	for _, f := range futures {
		res, err := f.Result()
		doc, ok := wire.Decode(res).(*wire.UsersDoc)
		if err != nil || !ok {
			continue
		}
		if _, _, err := m.users.Merge(doc.Doc); err != nil {
			m.opts.Logger.Warn("another node's users were not taken", "from", doc.From, "err", err)
			continue
		}
		answered++
	}
	return answered, len(futures)
}

func (u *users) Receive(ctx actor.Context) {
	switch msg := wire.Decode(ctx.Message()).(type) {
	case *actor.Started:
		members := u.m.topology.follow(ctx.Self(), func(m []*pcluster.Member) any { return &usersTopology{members: m} })
		u.gen = u.store.Generation()
		u.topology(ctx, members)
		u.schedule(ctx)
	case *actor.Stopping, *actor.Restarting:
		if u.timer != nil {
			u.timer.Stop()
		}
		u.m.topology.unfollow(ctx.Self())
	case *usersTopology:
		u.topology(ctx, msg.members)
	case *usersTick:
		if msg.of != u {
			return
		}
		u.sendIfChanged(ctx)
		if u.ticks++; u.ticks%digestEvery == 0 {
			d := &wire.UsersDigest{From: u.m.addr, Sum: u.store.Digest()}
			for addr := range u.members {
				ctx.Send(actor.NewPID(addr, UsersName), d)
			}
		}
		u.schedule(ctx)
	case *wire.UsersPull:
		ctx.Respond(u.doc())
	case *wire.UsersDigest:
		if msg.Sum != u.store.Digest() {
			ctx.Send(actor.NewPID(msg.From, UsersName), u.doc())
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
				u.m.opts.Logger.Warn("another node's users were not taken", "from", msg.From, "err", err)
			}
			return
		}
		delete(u.refused, msg.From)
		if changed {
			u.m.opts.Logger.Info("users changed on another node were taken", "from", msg.From)
		}
		u.gen = u.store.Generation()
		if behind {
			ctx.Send(actor.NewPID(msg.From, UsersName), u.doc())
		}
	case error:
		u.m.opts.Logger.Warn("a users message could not be read", "err", msg)
	}
}

func (u *users) doc() *wire.UsersDoc { return &wire.UsersDoc{From: u.m.addr, Doc: u.store.Export()} }

func (u *users) schedule(ctx actor.Context) {
	self, system := ctx.Self(), ctx.ActorSystem()
	u.timer = time.AfterFunc(usersPoll, func() { system.Root.Send(self, &usersTick{of: u}) })
}

// topology greets the nodes the provider newly lists with this node's users.
func (u *users) topology(ctx actor.Context, members []*pcluster.Member) {
	now := memberAddrs(members, u.m.addr)
	var doc *wire.UsersDoc
	for addr := range now {
		if !u.members[addr] {
			if doc == nil {
				doc = u.doc()
			}
			ctx.Send(actor.NewPID(addr, UsersName), doc)
		}
	}
	u.members = now
}

// sendIfChanged sends this node's users to every other node when they changed since
// they last went.
func (u *users) sendIfChanged(ctx actor.Context) {
	gen := u.store.Generation()
	if gen == u.gen {
		return
	}
	u.gen = gen
	doc := u.doc()
	for addr := range u.members {
		ctx.Send(actor.NewPID(addr, UsersName), doc)
	}
}
