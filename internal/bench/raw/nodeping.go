package raw

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/actors/cluster/nodeauth"
)

// NodePinger is a protoactor-go remote of the bench's own, in the bench's process,
// holding the cluster's secret. When the cluster scenario's nodes are processes of
// their own, it times the node-to-node round trip the echo is held to: a ping to a
// node's node actor and its pong, each way over its own gRPC stream between two
// processes, with the same gRPC settings and proof on every call as between nodes
// (nodeauth.GRPCOptions), answered by the same actor that answers one node's ping
// from another (Member.Ping). It is no member of the cluster: nothing is placed on
// it and no node lists it.
type NodePinger struct {
	system *actor.ActorSystem
	remote *remote.Remote
}

// StartNodePinger starts the remote on loopback port port, which the caller picked
// free. The nodes answer it there: a pong goes back over a connection the node opens
// to it, as to a node.
func StartNodePinger(clusterName string, secret []byte, port int) (*NodePinger, error) {
	serverOpts, dialOpts, err := nodeauth.GRPCOptions(secret, clusterName, nodeauth.TLSFiles{})
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", port, remote.WithServerOptions(serverOpts...), remote.WithDialOptions(dialOpts...)))
	if err := startRemote(r); err != nil {
		return nil, err
	}
	return &NodePinger{system: system, remote: r}, nil
}

// startRemote turns remote's panic on a port it cannot listen on (taken since it
// was picked) into an error.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("bench: the ping's remote: %v", p)
		}
	}()
	r.Start()
	return nil
}

// Ping times one round trip to the node actor of the node at addr (its --node-addr),
// exactly as one node times another (cluster.PingNode).
func (p *NodePinger) Ping(addr string, timeout time.Duration) (time.Duration, error) {
	return cluster.PingNode(p.system, addr, timeout)
}

// Close shuts the remote and its actor system down.
func (p *NodePinger) Close() {
	p.remote.Shutdown(false)
	p.system.Shutdown()
}
