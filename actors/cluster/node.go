package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/termhost/termhost/actors/cluster/etcdmembers"
	"github.com/termhost/termhost/actors/cluster/nodeauth"
	"github.com/termhost/termhost/actors/cluster/seeds"
	"github.com/termhost/termhost/actors/cluster/users"
	"github.com/termhost/termhost/actors/cluster/wire"

	"github.com/termhost/termhost/actors/delivery"
)

// NodeName is the node actor's name on every node.
const NodeName = "termhost-node"

// Options say which cluster a node joins and how. Exactly one of Etcd and Seeds.
type Options struct {
	// Cluster is the cluster's name; nodes of other clusters are not members.
	Cluster string
	// Name is this node's name as rows and createTerminal's _meta.node say it.
	// Default: NodeAddr.
	Name string
	// NodeAddr is the host:port other nodes reach this one at (protoactor-go's remote
	// listens there). Port 0 is not allowed: the address is how others name it.
	NodeAddr string
	// Etcd are the etcd endpoints (URLs or host:port) membership is kept in.
	Etcd []string
	// Seeds are the seeds provider's HTTP addresses (host:port) of every node,
	// this one's included: each is polled for who runs there.
	Seeds []string
	// SeedPort is where this node answers the seeds provider's polls. Default the
	// NodeAddr port + 1.
	SeedPort int
	// Secret is the cluster's shared secret: a node without it cannot join.
	Secret []byte
	// TLS, when given, makes every call between nodes mutual TLS.
	TLS nodeauth.TLSFiles
	// LoadInterval is how often a node tells the others its load. Default 2 s.
	LoadInterval time.Duration
	// ScrollbackLimit caps what a proxy keeps of a remote terminal, in characters, as
	// the terminals cap theirs. Default 200,000.
	ScrollbackLimit int
	Logger          *slog.Logger
}

// Member is a node's membership of its cluster: protoactor-go's remote and cluster,
// started, and this node's names.
type Member struct {
	opts     Options
	system   *actor.ActorSystem
	cluster  *pcluster.Cluster
	addr     string
	instance string
	// users is this node's copy of the cluster's users, once SpawnUsers has run.
	users *users.Replica
	gw    *gateway
	// topology is the provider's latest member list, as its ClusterTopology events
	// said it.
	topology *topologyView
}

// topologyView keeps the members of the last ClusterTopology protoactor-go published,
// and tells the actors that follow it of every list after that.
// It is read instead of MemberList.Members(), which reads the list without the lock
// its provider's goroutine replaces it under: a data race at every node's start.
// The events come on that goroutine, so the view is behind a mutex of its own.
//
// An actor follows the view rather than subscribing to the event stream itself: a
// subscription made while a list is being published misses it (Publish calls the
// subscribers it had when it began), and a read of the view just then still finds the
// list before. A node that started in that instant heard of no member until the
// membership changed again: it greeted nobody, and its peers' terminals never showed
// on its list. Here the list and the followers change under one lock, so a follower
// is given either the list in its follow call or a message with it after.
type topologyView struct {
	mu        sync.Mutex
	members   []*pcluster.Member
	followers map[string]follower
}

// follower is an actor told of each list, in the message its wrap makes of it.
type follower struct {
	pid  *actor.PID
	wrap func([]*pcluster.Member) any
}

// watch subscribes the view to system's topology events; call it before the member
// starts, so that no event is missed.
func (v *topologyView) watch(system *actor.ActorSystem) *eventstream.Subscription {
	return system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*pcluster.ClusterTopology); ok {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.members = t.Members
			for _, f := range v.followers {
				system.Root.Send(f.pid, f.wrap(t.Members))
			}
		}
	})
}

// Members are the members the provider listed last (this node among them), or none
// before its first list.
func (v *topologyView) Members() []*pcluster.Member {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.members
}

// follow returns the members listed now and has pid sent wrap(members) for every
// list after them, until unfollow. An actor calls it as it starts (again when it
// restarts: it replaces what the actor asked before).
func (v *topologyView) follow(pid *actor.PID, wrap func([]*pcluster.Member) any) []*pcluster.Member {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.followers == nil {
		v.followers = map[string]follower{}
	}
	v.followers[pid.String()] = follower{pid: pid, wrap: wrap}
	return v.members
}

// unfollow stops telling pid of the lists.
func (v *topologyView) unfollow(pid *actor.PID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.followers, pid.String())
}

// Join starts this node's remote and joins the cluster; the node actor is spawned by
// Spawn once the root is there. Call it before spawning anything another node must
// be able to reach, since actors spawned before it are named by no address.
func Join(system *actor.ActorSystem, opts Options) (_ *Member, err error) {
	if opts.Cluster == "" {
		return nil, errors.New("cluster: a cluster name is required")
	}
	host, portText, err := net.SplitHostPort(opts.NodeAddr)
	if err != nil {
		return nil, fmt.Errorf("cluster: --node-addr %q: %w", opts.NodeAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("cluster: --node-addr %q needs a port", opts.NodeAddr)
	}
	if opts.Name == "" {
		opts.Name = opts.NodeAddr
	}
	if opts.LoadInterval <= 0 {
		opts.LoadInterval = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	serverOpts, dialOpts, err := nodeauth.GRPCOptions(opts.Secret, opts.Cluster, opts.TLS)
	if err != nil {
		return nil, err
	}
	var provider pcluster.ClusterProvider
	var seedsListener net.Listener
	switch {
	case len(opts.Etcd) > 0 && len(opts.Seeds) > 0:
		return nil, errors.New("cluster: name one provider: --etcd or --seeds, not both")
	case len(opts.Etcd) > 0:
		p, err := etcdmembers.New(opts.Etcd, etcdmembers.Options{Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		provider = p
	case len(opts.Seeds) > 0:
		if opts.SeedPort == 0 {
			opts.SeedPort = port + 1
		}
		// The port is bound here, before the node joins: a node nobody can poll
		// would be listed by no other node while it listed them all.
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", opts.SeedPort))
		if err != nil {
			return nil, fmt.Errorf("cluster: the seeds port (--seed-port, default the node's port + 1): %w", err)
		}
		seedsListener = ln
		provider = seeds.New(ln, opts.Seeds, seeds.Options{Logger: opts.Logger})
	default:
		return nil, errors.New("cluster: a membership provider is required: --etcd URL,… or --seeds HOST:PORT,…")
	}
	rc := remote.Configure(host, port, remote.WithServerOptions(serverOpts...), remote.WithDialOptions(dialOpts...))
	cfg := pcluster.Configure(opts.Cluster, provider, disthash.New(), rc)
	c := pcluster.New(system, cfg)
	view := &topologyView{}
	sub := view.watch(system)
	if err := startMember(c); err != nil {
		system.EventStream.Unsubscribe(sub)
		if seedsListener != nil {
			_ = seedsListener.Close()
		}
		return nil, err
	}
	return &Member{opts: opts, system: system, cluster: c, addr: system.Address(), instance: system.ID, topology: view}, nil
}

// startMember starts the member, turning protoactor-go's panic on a provider that
// cannot start (etcd not answering, a port taken) into an error.
func startMember(c *pcluster.Cluster) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: joining: %v", r)
		}
	}()
	c.StartMember()
	return nil
}

// Name is this node's name.
func (m *Member) Name() string { return m.opts.Name }

// PID is where this node's node actor is (once spawned): what the root routes
// remote terminals and placements to.
func (m *Member) PID() *actor.PID { return m.system.NewLocalPID(NodeName) }

// Spawn starts the node actor, which speaks for this node to the others and to the
// root at rootPID on this one.
func (m *Member) Spawn(journal *delivery.Journal, rootPID *actor.PID) error {
	m.gw = newGateway(m.system, journal, rootPID)
	if _, ok := m.system.ProcessRegistry.Add(m.gw, GatewayName); !ok {
		return fmt.Errorf("cluster: %s is taken", GatewayName)
	}
	return m.spawnForGood(NodeName, func() actor.Actor { return newNode(m, journal, rootPID) })
}

// spawnForGood starts one of a node's own actors (the node actor, the users actor)
// under name, restarted after every failure. By default protoactor-go stops an
// actor after ten failures in ten seconds; a node without its node actor answers no
// other node again, and one without its users actor takes no user change again,
// while it goes on serving its own clients as if nothing were wrong. A restart
// starts them afresh (they greet every member the provider lists), and the server
// logs each failure. What an instance started (timers, subscriptions) it ends on
// Restarting as on Stopping: the instance after it starts its own.
func (m *Member) spawnForGood(name string, producer actor.Producer) error {
	props := actor.PropsFromProducer(producer, actor.WithGuardian(actor.RestartingSupervisorStrategy()))
	_, err := m.system.Root.SpawnNamed(props, name)
	return err
}

// Drain tells the other nodes that this one takes no new terminals: placement
// passes it by from now on.
func (m *Member) Drain() { m.system.Root.Send(m.PID(), &startDrain{}) }

// Leave takes this node out of the cluster: the provider is told, so the others
// take its terminals off their lists at once rather than on failure detection.
func (m *Member) Leave() {
	_ = m.cluster.Config.ClusterProvider.Shutdown(true)
	// Not graceful: a graceful stop waits up to ten seconds for every stream another
	// node holds open, and the terminals are already gone by now.
	m.cluster.Remote.Shutdown(false)
}

// memberAddrs are the addresses of the members in a topology, this node's left out.
func memberAddrs(members []*pcluster.Member, self string) map[string]bool {
	out := map[string]bool{}
	for _, mb := range members {
		a := net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port)))
		if a != self && !strings.HasPrefix(mb.Host, "nonhost") {
			out[a] = true
		}
	}
	return out
}

// Ping times one round trip from this node to the node actor at addr (host:port)
// and back, through protoactor-go's remote as every node message goes.
func (m *Member) Ping(addr string, timeout time.Duration) (time.Duration, error) {
	return PingNode(m.system, addr, timeout)
}

// PingNode times one round trip from system to the node actor at addr and back:
// the request until its pong is decoded. system needs a remote the node takes calls
// from (the cluster's secret, nodeauth's options); it need not be a member, as the
// bench's own pinger is not.
func PingNode(system *actor.ActorSystem, addr string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	res, err := system.Root.RequestFuture(actor.NewPID(addr, NodeName), &wire.Ping{}, timeout).Result()
	if err != nil {
		return 0, err
	}
	if _, ok := wire.Decode(res).(*wire.Pong); !ok {
		return 0, fmt.Errorf("cluster: %s answered a ping with %T", addr, res)
	}
	return time.Since(start), nil
}

// Addr is this node's address, as the others reach it.
func (m *Member) Addr() string { return m.addr }
