// Package etcdmembers is the cluster's membership provider over etcd (`--etcd`):
// every node keeps a key of its own under a lease that it renews, and watches the
// others' keys; the members are the nodes whose keys are there.
//
// It is ours rather than protoactor-go's etcd provider for one reason: that provider
// drops a member the moment its key vanishes (its lease is a fixed 3 s), and
// protoactor-go blocks for good a member that leaves the list: every node refuses
// its messages from then on, since the block is gossiped, even once the node has
// put its key back. A node that stalled for three seconds (a long pause, stolen time
// on a busy machine) was cut off from the cluster for the rest of its life while it
// went on serving its own clients. Here a vanished key's node stays a member for a
// grace (Account) in which a node that runs again puts its key back, and a node that
// shuts down marks its key as leaving first, so that it goes at once.
package etcdmembers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Options tune a Provider; the zero value is the default.
type Options struct {
	// Prefix is where the clusters' keys live (default "/termhost/members"); a
	// cluster's are under Prefix/NAME/.
	Prefix string
	// TTL is the lease of a node's key (default 3 s; whole seconds): how long a
	// node that stopped renewing it stays in etcd.
	TTL time.Duration
	// Grace is how long a node whose key vanished stays a member (default 4 s):
	// a dead node leaves its peers' lists within TTL + Grace.
	Grace time.Duration
	// Logger takes the provider's own lines.
	Logger *slog.Logger
}

// Provider is a protoactor-go ClusterProvider over etcd.
type Provider struct {
	client *clientv3.Client
	opts   Options

	mu       sync.Mutex
	self     *Node
	key      string
	lease    clientv3.LeaseID
	cancel   context.CancelFunc
	loops    sync.WaitGroup
	shutdown bool
}

// New is a provider over the etcd at endpoints. It does not reach etcd yet.
func New(endpoints []string, opts Options) (*Provider, error) {
	if opts.Prefix == "" {
		opts.Prefix = "/termhost/members"
	}
	if opts.TTL < time.Second {
		opts.TTL = 3 * time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 4 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// The client's own log (zap, JSON on stderr) is not termhost's: what matters of
	// it comes back as errors, which the provider logs in termhost's.
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return &Provider{client: client, opts: opts}, nil
}

// StartMember puts this node's key (failing when etcd does not take it) and starts
// renewing it and watching the others'.
func (p *Provider) StartMember(c *pcluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return fmt.Errorf("etcd: this node's address: %w", err)
	}
	self := &Node{ID: c.ActorSystem.ID, Host: host, Port: port, Kinds: c.GetClusterKinds()}
	ctx, err := p.begin(self, p.clusterPrefix(c)+self.ID)
	if err != nil {
		return err
	}
	lease, err := p.register(ctx)
	if err != nil {
		p.stop()
		return fmt.Errorf("etcd (%s): putting this node's key: %w", strings.Join(p.client.Endpoints(), ","), err)
	}
	p.loops.Add(2)
	go p.keepAlive(ctx, lease)
	go p.watch(ctx, c)
	return nil
}

// StartClient watches the members without being one.
func (p *Provider) StartClient(c *pcluster.Cluster) error {
	ctx, err := p.begin(nil, "")
	if err != nil {
		return err
	}
	p.loops.Add(1)
	go p.watch(ctx, c)
	return nil
}

// begin records who this node is and makes the context its loops run under.
func (p *Provider) begin(self *Node, key string) (context.Context, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown || p.cancel != nil {
		return nil, errors.New("etcd: the provider was started already, or shut down")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.self, p.key, p.cancel = self, key, cancel
	return ctx, nil
}

// stop ends the loops and waits for them.
func (p *Provider) stop() {
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.loops.Wait()
}

// Shutdown marks this node's key as leaving, so that the others let it go at once,
// and removes it.
func (p *Provider) Shutdown(bool) error {
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return nil
	}
	p.shutdown = true
	self, key, lease := p.self, p.key, p.lease
	p.mu.Unlock()
	p.stop()
	defer p.client.Close()
	if self == nil || key == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	leaving := *self
	leaving.Leaving = true
	body, err := json.Marshal(leaving)
	if err != nil {
		return err
	}
	if _, err := p.client.Put(ctx, key, string(body), clientv3.WithLease(lease)); err != nil {
		return fmt.Errorf("etcd: marking this node as leaving: %w", err)
	}
	if _, err := p.client.Revoke(ctx, lease); err != nil {
		return fmt.Errorf("etcd: removing this node's key: %w", err)
	}
	return nil
}

// clusterPrefix is where c's members keep their keys.
func (p *Provider) clusterPrefix(c *pcluster.Cluster) string {
	return strings.TrimSuffix(p.opts.Prefix, "/") + "/" + c.Config.Name + "/"
}

// register puts this node's key under a new lease.
func (p *Provider) register(ctx context.Context) (clientv3.LeaseID, error) {
	p.mu.Lock()
	self, key := *p.self, p.key
	p.mu.Unlock()
	body, err := json.Marshal(self)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grant, err := p.client.Grant(ctx, int64(p.opts.TTL/time.Second))
	if err != nil {
		return 0, err
	}
	if _, err := p.client.Put(ctx, key, string(body), clientv3.WithLease(grant.ID)); err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.lease = grant.ID
	p.mu.Unlock()
	return grant.ID, nil
}

// retry is how long a loop waits before it tries etcd again.
const retry = 500 * time.Millisecond

// keepAlive renews the lease for as long as ctx lasts. When the lease is gone (it
// expired while this node or etcd stalled), the key is put back under a new one:
// the others kept this node a member for their grace meanwhile.
func (p *Provider) keepAlive(ctx context.Context, lease clientv3.LeaseID) {
	defer p.loops.Done()
	for ctx.Err() == nil {
		if ch, err := p.client.KeepAlive(ctx, lease); err == nil {
			for range ch {
			}
		}
		for ctx.Err() == nil {
			p.opts.Logger.Warn("this node's key in etcd lapsed; putting it back", "key", p.key)
			l, err := p.register(ctx)
			if err == nil {
				lease = l
				break
			}
			p.opts.Logger.Debug("putting this node's key back in etcd failed", "error", err)
			sleep(ctx, retry)
		}
	}
}

// watch keeps c's member list: a read of every key, then every change after it,
// read afresh whenever the watch fails.
func (p *Provider) watch(ctx context.Context, c *pcluster.Cluster) {
	defer p.loops.Done()
	prefix := p.clusterPrefix(c)
	account := NewAccount(p.opts.Grace)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for ctx.Err() == nil {
		rev, err := p.readAll(ctx, prefix, account)
		if err != nil {
			p.opts.Logger.Debug("reading the members from etcd failed", "error", err)
			sleep(ctx, retry)
			continue
		}
		p.publish(c, account, time.Now())
		changes := p.client.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	follow:
		for {
			if next := account.Next(); !next.IsZero() {
				timer.Reset(time.Until(next))
			}
			select {
			case <-ctx.Done():
				return
			case res, ok := <-changes:
				if !ok || res.Err() != nil {
					p.opts.Logger.Debug("watching the members in etcd stopped; reading them again", "error", res.Err())
					break follow
				}
				now := time.Now()
				for _, ev := range res.Events {
					id := strings.TrimPrefix(string(ev.Kv.Key), prefix)
					switch ev.Type {
					case clientv3.EventTypePut:
						var n Node
						if err := json.Unmarshal(ev.Kv.Value, &n); err != nil || n.ID != id {
							p.opts.Logger.Warn("a member's key in etcd does not read", "key", string(ev.Kv.Key))
							continue
						}
						account.Put(n)
					case clientv3.EventTypeDelete:
						if n, ok := account.Present(id); ok {
							p.opts.Logger.Debug("a member's key vanished from etcd; it stays a member for the grace", "addr", n.addr(), "grace", p.opts.Grace)
						}
						account.Delete(id, now)
					}
				}
				p.publish(c, account, now)
			case <-timer.C:
				p.publish(c, account, time.Now())
			}
		}
	}
}

// readAll reads every member's key into account and returns the revision read.
func (p *Provider) readAll(ctx context.Context, prefix string, account *Account) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := p.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	var nodes []Node
	for _, kv := range res.Kvs {
		var n Node
		if err := json.Unmarshal(kv.Value, &n); err != nil || n.ID != strings.TrimPrefix(string(kv.Key), prefix) {
			p.opts.Logger.Warn("a member's key in etcd does not read", "key", string(kv.Key))
			continue
		}
		nodes = append(nodes, n)
	}
	account.Reset(nodes, time.Now())
	return res.Header.Revision, nil
}

// publish hands the members (this node always among them) to protoactor-go.
func (p *Provider) publish(c *pcluster.Cluster, account *Account, now time.Time) {
	gone := account.Expire(now)
	for _, n := range gone {
		p.opts.Logger.Warn("a member's key stayed out of etcd past the grace; its node leaves the cluster", "addr", n.addr())
	}
	p.mu.Lock()
	self := p.self
	p.mu.Unlock()
	var members []*pcluster.Member
	if self != nil {
		members = append(members, self.member())
	}
	for _, n := range account.Members() {
		if self == nil || n.ID != self.ID {
			members = append(members, n.member())
		}
	}
	c.MemberList.UpdateClusterTopology(members)
}

func (n Node) member() *pcluster.Member {
	return &pcluster.Member{Id: n.ID, Host: n.Host, Port: int32(n.Port), Kinds: n.Kinds}
}

func (n Node) addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
