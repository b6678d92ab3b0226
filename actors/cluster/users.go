package cluster

import (
	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/termhost/termhost/actors/cluster/users"
	"github.com/termhost/termhost/auth"
)

// SpawnUsers makes store this node's copy of the cluster's users and starts the
// users actor (package users). Call it after Join, before SyncUsers.
func (m *Member) SpawnUsers(store *auth.Store) error {
	replica, err := users.NewReplica(usersNode{m}, store, m.opts.Logger)
	if err != nil {
		return err
	}
	if err := m.spawnForGood(users.ActorName, replica.NewActor); err != nil {
		return err
	}
	m.users = replica
	return nil
}

// SyncUsers asks every other member the provider lists now for its users and merges
// them into this node's (users.Replica.Sync), and returns how many answered of how
// many were asked. Before SpawnUsers it asks nobody.
func (m *Member) SyncUsers() (answered, asked int) {
	if m.users == nil {
		return 0, 0
	}
	return m.users.Sync()
}

// usersNode is what the users actor sees of its member: the member list as
// addresses, from the same topologyView the node actor follows.
type usersNode struct{ m *Member }

func (n usersNode) ActorSystem() *actor.ActorSystem { return n.m.system }
func (n usersNode) Addr() string                    { return n.m.addr }
func (n usersNode) Peers() map[string]bool {
	return memberAddrs(n.m.topology.Members(), n.m.addr)
}

func (n usersNode) FollowPeers(pid *actor.PID, wrap func(map[string]bool) any) map[string]bool {
	members := n.m.topology.follow(pid, func(members []*pcluster.Member) any { return wrap(memberAddrs(members, n.m.addr)) })
	return memberAddrs(members, n.m.addr)
}

func (n usersNode) UnfollowPeers(pid *actor.PID) { n.m.topology.unfollow(pid) }
