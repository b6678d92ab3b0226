// Package seeds is the cluster's membership provider for small setups with nothing
// else to run (`--seeds`): every node answers GET /_health on its seed port with its
// own description, polls every seed's once a second, and the members are the nodes
// that answer. The description is protoactor-go's automanaged provider's, field for
// field, so a node of either kind can poll the other.
//
// It is ours rather than that provider for one reason: the automanaged provider drops
// a node from the member list at the first poll of it that fails (a two-second
// timeout), and protoactor-go blocks for good a member that leaves the list: every
// node refuses its messages from then on, since the block is gossiped. A node that
// stalled for two seconds (a long pause, stolen time on a busy machine) was cut off
// from the cluster for the rest of its life, while it went on serving its own
// clients. Here a seed is let go only after it has missed several polls in a row
// (Roster), which a stall does not make but a dead node does within seconds.
package seeds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// Node is what a seed's /_health answers: the node listening there. Its JSON is
// protoactor-go's automanaged NodeModel.
type Node struct {
	ID             string   `json:"id"`
	Address        string   `json:"address"`
	AutoManagePort int      `json:"auto_manage_port"`
	Port           int      `json:"port"`
	Kinds          []string `json:"kinds"`
	ClusterName    string   `json:"cluster_name"`
}

// Options tune a Provider; the zero value is the default.
type Options struct {
	// Every is the time between two polls of the seeds (default one second).
	Every time.Duration
	// Timeout bounds one poll of one seed (default two seconds).
	Timeout time.Duration
	// Misses is how many polls in a row a seed's node may miss before it leaves the
	// member list (default 3).
	Misses int
	// Logger takes the provider's own lines: a seed that missed a poll (debug), a
	// node let go (warn), a node answering again (info).
	Logger *slog.Logger
}

// Provider is a protoactor-go ClusterProvider over a list of seed addresses.
type Provider struct {
	ln     net.Listener
	seeds  []string
	opts   Options
	client *http.Client

	mu       sync.Mutex
	server   *http.Server
	stop     chan struct{}
	stopped  chan struct{}
	shutdown bool
}

// New is a provider that answers its node's polls on ln (bound already, so a port
// that is taken fails the node's start, not a goroutine after it) and polls seeds
// (host:port each; this node's own may be among them).
func New(ln net.Listener, seeds []string, opts Options) *Provider {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Misses <= 0 {
		opts.Misses = 3
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// No proxy: seeds are the cluster's own nodes, and a proxy named in the
	// environment for the world outside has no business between them.
	transport := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: opts.Timeout}).DialContext, MaxIdleConnsPerHost: 1}
	return &Provider{ln: ln, seeds: seeds, opts: opts, client: &http.Client{Transport: transport, Timeout: opts.Timeout}}
}

// StartMember answers polls for c's node and starts polling the seeds.
func (p *Provider) StartMember(c *pcluster.Cluster) error {
	self, err := describe(c, p.ln)
	if err != nil {
		return err
	}
	body, err := json.Marshal(self)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: p.opts.Timeout}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown {
		return errors.New("seeds: the provider was shut down")
	}
	p.server = server
	go func() { _ = server.Serve(p.ln) }()
	p.startPolling(c, &self)
	return nil
}

// StartClient polls the seeds without answering polls: a client of the cluster is
// no member of it.
func (p *Provider) StartClient(c *pcluster.Cluster) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown {
		return errors.New("seeds: the provider was shut down")
	}
	p.startPolling(c, nil)
	return nil
}

// Shutdown stops answering and polling; the other nodes let this one go when it has
// missed their polls. graceful is not needed: nothing is owed to anyone.
func (p *Provider) Shutdown(bool) error {
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return nil
	}
	p.shutdown = true
	stop, stopped, server := p.stop, p.stopped, p.server
	p.mu.Unlock()
	if server != nil {
		_ = server.Close()
	} else if p.ln != nil {
		_ = p.ln.Close()
	}
	if stop != nil {
		close(stop)
		<-stopped
	}
	return nil
}

// describe is this node as its /_health answers it.
func describe(c *pcluster.Cluster, ln net.Listener) (Node, error) {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return Node{}, fmt.Errorf("seeds: this node's address: %w", err)
	}
	seedPort := 0
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		seedPort = a.Port
	}
	kinds := c.GetClusterKinds()
	if kinds == nil {
		kinds = []string{}
	}
	return Node{ID: c.ActorSystem.ID, Address: host, Port: port, AutoManagePort: seedPort, Kinds: kinds, ClusterName: c.Config.Name}, nil
}

// startPolling starts the poll loop; p.mu is held.
func (p *Provider) startPolling(c *pcluster.Cluster, self *Node) {
	if p.stop != nil {
		return
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	roster := NewRoster(c.Config.Name, self, p.seeds, p.opts.Misses)
	go p.poll(c, roster, p.stop, p.stopped)
}

// poll asks every seed once every p.opts.Every and hands the members to protoactor-go's
// member list, until stop.
func (p *Provider) poll(c *pcluster.Cluster, roster *Roster, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	for {
		answers := p.askAll(ctx)
		if ctx.Err() != nil {
			return
		}
		for i, a := range answers {
			switch change := roster.Observe(p.seeds[i], a.node, a.err); change {
			case Missed:
				p.opts.Logger.Debug("a seed did not answer this node's poll", "seed", p.seeds[i], "error", a.err)
			case Lost:
				p.opts.Logger.Warn("a seed did not answer this node's poll, too many times in a row; its node leaves the cluster", "seed", p.seeds[i], "misses", p.opts.Misses, "error", a.err)
			case Answers:
				p.opts.Logger.Debug("a seed's node answers this node's polls", "seed", p.seeds[i], "id", a.node.ID)
			}
		}
		members := roster.Members()
		topology := make([]*pcluster.Member, 0, len(members))
		for _, n := range members {
			topology = append(topology, &pcluster.Member{Id: n.ID, Host: n.Address, Port: int32(n.Port), Kinds: n.Kinds})
		}
		c.MemberList.UpdateClusterTopology(topology)
		select {
		case <-stop:
			return
		case <-time.After(p.opts.Every):
		}
	}
}

// answer is one seed's answer to one poll.
type answer struct {
	node *Node
	err  error
}

// askAll polls every seed at once and returns their answers in p.seeds' order.
func (p *Provider) askAll(ctx context.Context) []answer {
	out := make([]answer, len(p.seeds))
	var wg sync.WaitGroup
	for i, seed := range p.seeds {
		wg.Go(func() {
			n, err := p.ask(ctx, seed)
			out[i] = answer{n, err}
		})
	}
	wg.Wait()
	return out
}

// ask is one poll of one seed.
func (p *Provider) ask(ctx context.Context, seed string) (*Node, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+seed+"/_health", nil)
	if err != nil {
		return nil, err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("seeds: %s answered %s", seed, res.Status)
	}
	var n Node
	if err := json.NewDecoder(http.MaxBytesReader(nil, res.Body, 64<<10)).Decode(&n); err != nil {
		return nil, fmt.Errorf("seeds: %s's answer: %w", seed, err)
	}
	if n.ID == "" {
		return nil, fmt.Errorf("seeds: %s answered no node id", seed)
	}
	return &n, nil
}
