package users

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/auth"
)

// A token made for a member on one node signs in on the other with the member's
// grants and no more, and a revocation on the other node reaches the first: what
// `termhost token add` and `token revoke` on any node promise of every node.
func TestAGrantMadeOnOneNodeIsTakenOnAnother(t *testing.T) {
	a, b := newTestNode(t, "a:1", "b:1"), newTestNode(t, "b:1", "a:1")
	open := link(t, a, b)
	a.spawn(t)
	b.spawn(t)
	open()

	ann, err := a.store.AddToken("ann", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "ann's token, made on a, to sign in on b", func(s *auth.Store) bool {
		_, ok := s.Authenticate(ann)
		return ok
	})
	if p, _ := b.store.Authenticate(ann); p.User != "ann" || !p.Can(auth.GrantTerminalInput) || p.Can(auth.GrantConfigChange) {
		t.Fatalf("ann on b = %+v, want a member's grants", p)
	}

	if n, err := b.store.Revoke("ann"); n != 1 || err != nil {
		t.Fatalf("revoking ann on b: %d tokens, %v", n, err)
	}
	a.waitFor(t, "ann's token, revoked on b, to be refused on a", func(s *auth.Store) bool {
		_, ok := s.Authenticate(ann)
		return !ok
	})
}

// A node that starts takes the users of every member listed before it serves anyone,
// with no users actor of its own running yet; a node alone asks nobody.
func TestSyncTakesTheOthersUsersBeforeServing(t *testing.T) {
	a, b := newTestNode(t, "a:1", "b:1"), newTestNode(t, "b:1", "a:1")
	open := link(t, a, b)
	a.spawn(t)
	open()
	ann, err := a.store.AddToken("ann", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if answered, asked := b.replica.Sync(); answered != 1 || asked != 1 {
		t.Fatalf("b's sync: %d of %d answered, want 1 of 1", answered, asked)
	}
	if p, ok := b.store.Authenticate(ann); !ok || p.User != "ann" {
		t.Fatalf("after its sync b signs ann in as %+v, %v", p, ok)
	}

	alone := newTestNode(t, "c:1")
	if answered, asked := alone.replica.Sync(); answered != 0 || asked != 0 {
		t.Fatalf("a node alone: %d of %d answered, want 0 of 0", answered, asked)
	}
}

// testNode is a node in the test's process: an actor system named by its address,
// a users file of its own, and a membership that lists peers and never changes. It
// is the Node of its own replica.
type testNode struct {
	addr    string
	peers   []string
	system  *actor.ActorSystem
	store   *auth.Store
	replica *Replica
}

func newTestNode(t *testing.T, addr string, peers ...string) *testNode {
	t.Helper()
	system := actor.NewActorSystem()
	// What protoactor's remote does as it starts: the system's actors are named by
	// the address the other nodes reach it at.
	system.ProcessRegistry.Address = addr
	t.Cleanup(system.Shutdown)
	store, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{addr: addr, peers: peers, system: system, store: store}
	if n.replica, err = NewReplica(n, store, nil); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *testNode) ActorSystem() *actor.ActorSystem { return n.system }
func (n *testNode) Addr() string                    { return n.addr }
func (n *testNode) Peers() map[string]bool {
	out := map[string]bool{}
	for _, p := range n.peers {
		out[p] = true
	}
	return out
}

// FollowPeers sends nothing later: the membership here never changes.
func (n *testNode) FollowPeers(*actor.PID, func(map[string]bool) any) map[string]bool {
	return n.Peers()
}
func (n *testNode) UnfollowPeers(*actor.PID) {}

// spawn starts the node's users actor, and stops it when the test ends.
func (n *testNode) spawn(t *testing.T) {
	t.Helper()
	pid, err := n.system.Root.SpawnNamed(actor.PropsFromProducer(n.replica.NewActor), ActorName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.system.Root.StopFuture(pid).Wait() })
}

// waitFor polls the node's users until done says they are as wanted, for up to ten
// seconds. It polls because a merge tells nobody: the users actor takes another
// node's copy in its own time, and a connection notices only by reading the store.
func (n *testNode) waitFor(t *testing.T, what string, done func(*auth.Store) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for !done(n.store) {
		select {
		case <-poll.C:
		case <-deadline:
			users, _ := n.store.List()
			t.Fatalf("waited 10 s for %s; %s has users %+v", what, n.addr, users)
		}
	}
}

// link joins the nodes' actor systems as protoactor's remote joins those of nodes
// apart, without gRPC: each system resolves the others' addresses to a crossing,
// which hands the message over as the bytes a remote would send. What arrives is the
// protobuf BytesValue a real remote delivers, which the actor reads through
// wire.Decode.
//
// Nothing crosses until open is called, once the test has spawned its actors: the
// actors greet each other as they start, and protoactor-go registers a named actor
// before its mailbox has its handlers, so a greeting that arrives in between races
// with the spawn (the race detector says so, in protoactor-go's code).
func link(t *testing.T, nodes ...*testNode) (open func()) {
	ready := make(chan struct{})
	for _, from := range nodes {
		for _, to := range nodes {
			if from == to {
				continue
			}
			c := crossing{t: t, to: to.system, ready: ready}
			from.system.ProcessRegistry.RegisterAddressResolver(func(pid *actor.PID) (actor.Process, bool) {
				return c, pid.Address == to.addr
			})
		}
	}
	return sync.OnceFunc(func() { close(ready) })
}

// crossing is another node's actor system seen from this one.
type crossing struct {
	t     *testing.T
	to    *actor.ActorSystem
	ready <-chan struct{}
}

// SendUserMessage delivers msg as a remote would: serialized, to a PID and a sender
// of the receiving side's own. The PIDs are fresh, as a remote's are: protoactor
// caches a PID's process in it, and one shared by both systems would resolve the
// sender's own address to this crossing again.
func (c crossing) SendUserMessage(pid *actor.PID, msg any) {
	<-c.ready
	var sender *actor.PID
	if env, ok := msg.(*actor.MessageEnvelope); ok {
		msg = env.Message
		if env.Sender != nil {
			sender = actor.NewPID(env.Sender.Address, env.Sender.Id)
		}
	}
	onWire, err := serialize(msg)
	if err != nil {
		c.t.Errorf("a message to %s did not cross: %v", pid, err)
		return
	}
	to := actor.NewPID(pid.Address, pid.Id)
	if sender != nil {
		c.to.Root.Send(to, &actor.MessageEnvelope{Message: onWire, Sender: sender})
	} else {
		c.to.Root.Send(to, onWire)
	}
}

func (crossing) SendSystemMessage(*actor.PID, any) {}
func (crossing) Stop(*actor.PID)                   {}

// serialize is msg as the receiving node's remote hands it over: what its Serialize
// made, marshalled and read back as a BytesValue.
func serialize(msg any) (*wrapperspb.BytesValue, error) {
	s, ok := msg.(remote.RootSerializable)
	if !ok {
		return nil, fmt.Errorf("%T is not a node message", msg)
	}
	root, err := s.Serialize()
	if err != nil {
		return nil, err
	}
	pm, ok := root.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("%T serialized to %T, not protobuf", msg, root)
	}
	b, err := proto.Marshal(pm)
	if err != nil {
		return nil, err
	}
	out := &wrapperspb.BytesValue{}
	return out, proto.Unmarshal(b, out)
}
