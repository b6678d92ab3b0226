package bench

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/actors/cluster/nodeauth"
)

// nodePinger is a protoactor-go remote of the bench's own, in the bench's process,
// holding the cluster's secret. When the cluster scenario's nodes are processes of
// their own, it times the node-to-node round trip the echo is held to: a ping to a
// node's node actor and its pong, each way over its own gRPC stream between two
// processes, with the same gRPC settings and proof on every call as between nodes
// (nodeauth.GRPCOptions), answered by the same actor that answers one node's ping
// from another (Member.Ping). It is no member of the cluster: nothing is placed on
// it and no node lists it.
type nodePinger struct {
	system *actor.ActorSystem
	remote *remote.Remote
}

// startNodePinger starts the remote on a free loopback port. The nodes answer it
// there: a pong goes back over a connection the node opens to it, as to a node.
func startNodePinger(clusterName string, secret []byte) (*nodePinger, error) {
	serverOpts, dialOpts, err := nodeauth.GRPCOptions(secret, clusterName, nodeauth.TLSFiles{})
	if err != nil {
		return nil, err
	}
	ports, err := freeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", ports[0], remote.WithServerOptions(serverOpts...), remote.WithDialOptions(dialOpts...)))
	if err := startRemote(r); err != nil {
		return nil, err
	}
	return &nodePinger{system: system, remote: r}, nil
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

// ping times one round trip to the node actor of the node at addr (its --node-addr),
// exactly as one node times another (cluster.PingNode).
func (p *nodePinger) ping(addr string, timeout time.Duration) (time.Duration, error) {
	return cluster.PingNode(p.system, addr, timeout)
}

func (p *nodePinger) close() {
	p.remote.Shutdown(false)
	p.system.Shutdown()
}
