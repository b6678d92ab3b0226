package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// An actor that begins to follow the view while a list is being published is told of
// that list. A node that subscribed to the event stream itself just then heard of no
// member until the membership changed again: it greeted nobody, and the other nodes'
// terminals never showed on its list. The publish is held in a subscriber before the
// view's (protoactor-go's own subscribe before it), so the test is not a matter of
// luck.
func TestFollowingTheViewMissesNoList(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	publishing, release := make(chan struct{}), make(chan struct{})
	var held sync.Once
	system.EventStream.Subscribe(func(evt any) {
		if _, ok := evt.(*pcluster.ClusterTopology); ok {
			held.Do(func() {
				close(publishing)
				<-release
			})
		}
	})
	view := &topologyView{}
	defer system.EventStream.Unsubscribe(view.watch(system))

	rec := recorder{got: make(chan any, 4)}
	inbox, _ := system.ProcessRegistry.Add(rec, "follower")
	go system.EventStream.Publish(&pcluster.ClusterTopology{Members: membersUpTo(3)})
	<-publishing
	if now := view.follow(inbox, func(m []*pcluster.Member) any { return m }); len(now) != 0 {
		t.Fatalf("the view listed %d members before its first list", len(now))
	}
	close(release)
	select {
	case m := <-rec.got:
		if got := len(m.([]*pcluster.Member)); got != 3 {
			t.Fatalf("the follower was told of %d members, want 3", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower was never told of the list published as it began to follow")
	}
	if now := view.follow(inbox, func(m []*pcluster.Member) any { return m }); len(now) != 3 {
		t.Fatalf("following again gave %d members, want 3", len(now))
	}

	view.unfollow(inbox)
	system.EventStream.Publish(&pcluster.ClusterTopology{Members: membersUpTo(4)})
	select {
	case m := <-rec.got:
		t.Fatalf("an actor that stopped following was told of a list of %d", len(m.([]*pcluster.Member)))
	default:
	}
}

func membersUpTo(n int) []*pcluster.Member {
	out := make([]*pcluster.Member, n)
	for i := range out {
		out[i] = &pcluster.Member{Host: "127.0.0.1", Port: int32(20000 + i)}
	}
	return out
}

// The node's own actors are restarted after every failure, also past the ten in ten
// seconds after which protoactor-go stops an actor by default: a node without its
// node actor would answer no other node again.
func TestANodesActorsOutliveTheirFailures(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	m := &Member{system: system}
	if err := m.spawnForGood("fails-often", func() actor.Actor { return failsOnStrings{} }); err != nil {
		t.Fatal(err)
	}
	pid := system.NewLocalPID("fails-often")
	for i := range 25 {
		system.Root.Send(pid, "fail")
		res, err := system.Root.RequestFuture(pid, i, 10*time.Second).Result()
		if err != nil || res != i {
			t.Fatalf("after %d failures the actor answered %v, %v", i+1, res, err)
		}
	}
}

// failsOnStrings panics on a string and answers an int with itself.
type failsOnStrings struct{}

func (failsOnStrings) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case string:
		panic(m)
	case int:
		ctx.Respond(m)
	}
}
