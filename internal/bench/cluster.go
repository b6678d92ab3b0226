package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/bench/hoststart"
	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// The cluster scenario (issue 17) starts three cluster nodes of its own on loopback
// with the seeds provider, whatever host the rest of the run drives: what it compares
// is a terminal on another node against one on the client's own node, in the same
// run, through the same nodes. With Config.ClusterExe (`termhost bench --host
// process`) each node is `termhost serve --cluster` in a process of its own, as nodes
// are deployed, and the node-to-node round trip is timed between processes too
// (raw.NodePinger); without it the nodes are servers in this process, sharing its Go
// runtime with one another and with the bench's clients.

// clusterNodeCount is how many nodes the scenario runs.
const clusterNodeCount = 3

// clusterRounds is how many times each throughput side runs, alternating, for a
// median and a spread.
const clusterRounds = 3

// clusterSummary is said before the run, when where the nodes run is not known yet;
// runCluster replaces it with clusterSummaryFor.
func clusterSummary(s Sizes) string {
	return clusterSummaryFor(s, "processes of their own with --host process, else in this process")
}

func clusterSummaryFor(s Sizes, where string) string {
	return fmt.Sprintf("%d nodes (%s; seeds provider, loopback): a %s flood through a terminal on another node against one on the client's own node, %d rounds each, and %d keystrokes each way with as many node-to-node pings, in alternating rounds; then %d terminals opened across the nodes and the time until every node lists them all",
		clusterNodeCount, where, mb(clusterFloodBytes(s)), clusterRounds, s.EchoKeys, s.ClusterTerminals)
}

// clusterFloodBytes is each flood's N: a fifth of the throughput scenario's, as six
// floods run.
func clusterFloodBytes(s Sizes) int64 { return max(s.ThroughputBytes/5, 1_000_000) }

// clusterNodes are the scenario's nodes.
type clusterNodes struct {
	names   []string
	targets []wsclient.Target
	// asProcesses says each node is a process of its own (Config.ClusterExe).
	asProcesses bool
	// servers are the nodes when they are in this process.
	servers []*server.Server
	// addrs are the nodes' --node-addr, where their node actors are.
	addrs []string
	// pinger times round trips to the nodes when they are processes.
	pinger *raw.NodePinger
	// logs keep the end of each node process's stderr, for an error.
	logs []*logTail
	stop []func() error
}

// processes says the nodes are processes of their own.
func (c *clusterNodes) processes() bool { return c.asProcesses }

// where says where the nodes run, for the summary and the notes.
func (c *clusterNodes) where() string {
	if c.processes() {
		return "each `termhost serve --cluster` in a process of its own"
	}
	return "all in this process"
}

// ping times one node-to-node round trip to node to's node actor: from node from's
// member when the nodes are in this process (Member.Ping), from the bench's own
// remote when they are processes (from is then not a party: the bench's process is
// the other end, so the trip is between two processes as it is between two nodes).
func (c *clusterNodes) ping(from, to int, timeout time.Duration) (time.Duration, error) {
	if c.processes() {
		return c.pinger.Ping(c.addrs[to], timeout)
	}
	return c.servers[from].Member().Ping(c.servers[to].Member().Addr(), timeout)
}

// pingWhere says between what the round trip is timed, for the notes.
func (c *clusterNodes) pingWhere(from, to int) string {
	if c.processes() {
		return fmt.Sprintf("from a protoactor remote in the bench's process (the cluster's secret and gRPC settings, no member) to %s's node actor, another process", c.names[to])
	}
	return fmt.Sprintf("from %s's member to %s's node actor, both in this process", c.names[from], c.names[to])
}

func (c *clusterNodes) close() {
	if c.pinger != nil {
		c.pinger.Close()
	}
	for _, stop := range c.stop {
		_ = stop()
	}
}

// freeLoopbackPorts are n different loopback ports nobody listens on now: all n are
// held while they are picked, so the kernel cannot hand out one of them twice (a
// node's port and another's seeds port the same: the node could not start). Another
// process may still take one before the node binds it; the node then fails to start
// with the port named, rather than run unreachable.
func freeLoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startClusterNodes starts the nodes and waits until every one knows every other.
func startClusterNodes(ctx context.Context, e *env) (*clusterNodes, error) {
	c := &clusterNodes{asProcesses: e.cfg.ClusterExe != ""}
	ports, err := freeLoopbackPorts(2 * clusterNodeCount)
	if err != nil {
		return nil, err
	}
	seedPorts, nodePorts := ports[:clusterNodeCount], ports[clusterNodeCount:]
	var seeds []string
	for _, p := range seedPorts {
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	clusterName, secret := "bench-"+e.run, []byte("bench "+e.run)
	for i := range clusterNodeCount {
		name := fmt.Sprintf("n%d", i)
		addr := fmt.Sprintf("127.0.0.1:%d", nodePorts[i])
		start := c.start
		if c.processes() {
			start = c.startProcess
		}
		if err := start(e, clusterName, secret, name, addr, seeds, seedPorts[i]); err != nil {
			c.close()
			return nil, err
		}
		c.addrs = append(c.addrs, addr)
	}
	if c.processes() {
		port, err := freeLoopbackPorts(1)
		if err != nil {
			c.close()
			return nil, err
		}
		p, err := raw.StartNodePinger(clusterName, secret, port[0])
		if err != nil {
			c.close()
			return nil, err
		}
		c.pinger = p
	}
	// Nothing tells a client that a node has joined but a create naming it being
	// taken: each node is asked to open a one-line terminal on every other, retried
	// under the wait's deadline until it can.
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	for from := range clusterNodeCount {
		k, err := wsclient.DialControl(wctx, c.targets[from], fmt.Sprintf("bench-cluster-probe-%d-%s", from, e.run))
		if err != nil {
			c.close()
			return nil, err
		}
		for on := range clusterNodeCount {
			uri := e.uri(fmt.Sprintf("cluster-probe-%d", from), on)
			for {
				err := k.CreateOn(wctx, uri, "echo probe", c.names[on])
				if err == nil {
					break
				}
				if !strings.Contains(err.Error(), "no node") || wctx.Err() != nil {
					k.Close()
					c.close()
					return nil, fmt.Errorf("bench: the cluster did not form: %w%s", err, c.nodeLogs())
				}
				time.Sleep(50 * time.Millisecond)
			}
			_ = k.Dispose(wctx, uri)
		}
		k.Close()
	}
	return c, nil
}

// start starts a node in this process.
func (c *clusterNodes) start(e *env, clusterName string, secret []byte, name, addr string, seeds []string, seedPort int) error {
	dir, err := os.MkdirTemp("", "termhost-bench-cluster-")
	if err != nil {
		return err
	}
	store, err := auth.Open(dir)
	if err != nil {
		return err
	}
	path, _, err := store.EnsureOwner()
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		Root:   root.Options{UsePty: e.pty, DefaultShell: e.shell},
		Auth:   store,
		Logger: slog.New(slog.DiscardHandler),
		Cluster: &cluster.Options{Cluster: clusterName, Name: name, NodeAddr: addr,
			Seeds: seeds, SeedPort: seedPort, Secret: secret},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	c.names = append(c.names, name)
	c.servers = append(c.servers, srv)
	c.targets = append(c.targets, wsclient.Target{URL: "ws://" + ln.Addr().String() + "/", Token: strings.TrimSpace(string(tok))})
	c.stop = append(c.stop, func() error {
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("bench: node %s did not stop within 30 s", name)
		}
		if rmErr := os.RemoveAll(dir); err == nil {
			err = rmErr
		}
		return err
	})
	return nil
}

// clusterSecretEnv is where `termhost serve --cluster` takes the cluster's secret
// from when no --cluster-secret-file is given (README, "Several machines: a
// cluster").
const clusterSecretEnv = "TERMHOST_CLUSTER_SECRET"

// startProcess starts a node as `termhost serve --cluster` in a process of its own,
// with a state folder of its own, the run's pty mode and shell, and the secret in its
// environment, and waits for its `listening on` line.
func (c *clusterNodes) startProcess(e *env, clusterName string, secret []byte, name, addr string, seeds []string, seedPort int) error {
	pty := "never"
	if e.pty {
		pty = "always"
	}
	logs := &logTail{}
	h, err := hoststart.StartProcess(hoststart.ProcessOptions{
		Exe: e.cfg.ClusterExe, Pty: pty, Shell: e.shell, Logs: logs,
		Env: append([]string{clusterSecretEnv + "=" + string(secret)}, e.cfg.ClusterEnv...),
		Args: []string{"--cluster", clusterName, "--node-name", name, "--node-addr", addr,
			"--seeds", strings.Join(seeds, ","), "--seed-port", strconv.Itoa(seedPort)},
	})
	if err != nil {
		return fmt.Errorf("bench: node %s: %w%s", name, err, logs.said())
	}
	c.names = append(c.names, name)
	c.targets = append(c.targets, wsclient.Target{URL: h.URL, Token: h.Token})
	c.stop = append(c.stop, h.Close)
	c.logs = append(c.logs, logs)
	return nil
}

// nodeLogs is the end of what each node process wrote on stderr, as the end of an
// error message; "" for nodes in this process.
func (c *clusterNodes) nodeLogs() string {
	var b strings.Builder
	for i, l := range c.logs {
		if t := l.said(); t != "" {
			fmt.Fprintf(&b, "\nnode %s%s", c.names[i], t)
		}
	}
	return b.String()
}

// logTail keeps the end of what a node process writes on stderr, to say why it
// would not start.
type logTail struct {
	mu sync.Mutex
	b  []byte
}

// logTailMax is how much of a node's stderr is kept.
const logTailMax = 4 << 10

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if over := len(l.b) - logTailMax; over > 0 {
		l.b = l.b[over:]
	}
	return len(p), nil
}

// said is what was kept, as the end of an error message ("" when nothing was).
func (l *logTail) said() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := strings.TrimSpace(string(l.b)); t != "" {
		return "; its stderr ends:\n" + t
	}
	return ""
}

func runCluster(ctx context.Context, e *env, r *report.Result) error {
	n := clusterFloodBytes(e.sizes)
	r.Params["nodes"] = clusterNodeCount
	r.Params["bytes"] = n
	r.Params["keystrokes"] = e.sizes.EchoKeys
	r.Params["terminals"] = e.sizes.ClusterTerminals
	c, err := startClusterNodes(ctx, e)
	if err != nil {
		return err
	}
	defer c.close()
	r.Summary = clusterSummaryFor(e.sizes, c.where())
	r.Params["nodes as processes"] = c.processes()
	// The client is on node 0 for the cross-node runs and on node 1 for the same-node
	// ones; the terminal is on node 1 in both.
	const entry, owner = 0, 1
	var same, cross []float64
	for round := range clusterRounds {
		for _, from := range []int{owner, entry} {
			rate, err := c.flood(ctx, e, from, owner, round, n)
			if err != nil {
				return err
			}
			if from == owner {
				same = append(same, rate)
			} else {
				cross = append(cross, rate)
			}
		}
	}
	f := r.Add(report.Figure{Name: "throughput, terminal on another node (median of rounds)", Value: report.Median(cross), Unit: report.UnitBytesPerSecond}).WithRaw(report.Median(same))
	f.Judge("≥ 0.80 × same node", f.Ratio != nil && *f.Ratio >= 0.8)
	r.Note("throughput rounds, B/s: same node %s; other node %s", rates(same), rates(cross))

	sameTimes, crossTimes, pings, err := c.echo(ctx, e, entry, owner)
	if err != nil {
		return err
	}
	sm, cm, pm := percentile(sameTimes, 0.5), percentile(crossTimes, 0.5), percentile(pings, 0.5)
	ef := r.Add(report.Figure{Name: "keystroke echo, terminal on another node, median", Value: cm.Seconds(), Unit: report.UnitSeconds}).WithRaw(sm.Seconds())
	ef.Judge("≤ same node + one node-to-node round trip", cm <= sm+pm)
	r.Add(report.Figure{Name: "keystroke echo, terminal on another node, p99", Value: percentile(crossTimes, 0.99).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(sameTimes, 0.99).Seconds())
	r.Add(report.Figure{Name: "node-to-node round trip (protoactor remote), median", Value: pm.Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "echo added by the other node ÷ node-to-node round trip", Value: (cm - sm).Seconds() / pm.Seconds(), Unit: report.UnitRatio})
	r.Note("node-to-node round trip timed %s", c.pingWhere(entry, owner))

	if err := c.converge(ctx, e, r); err != nil {
		return err
	}
	if c.processes() {
		r.Note("the %d nodes are processes of their own (%s); they and this process's clients share the machine's %d CPUs", clusterNodeCount, e.cfg.ClusterExe, e.machineCPUs())
	} else {
		r.Note("all %d nodes and the clients share this process's Go runtime and %d CPUs", clusterNodeCount, e.machineCPUs())
	}
	return nil
}

func rates(v []float64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf("%.3g", x)
	}
	return strings.Join(out, ", ")
}

// flood runs one flood on node on, read by a counting subscriber of node from, and
// returns its rate.
func (c *clusterNodes) flood(ctx context.Context, e *env, from, on, round int, n int64) (float64, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	k, err := wsclient.DialControl(wctx, c.targets[from], fmt.Sprintf("bench-cluster-flood-%d-%d-%s", from, round, e.run))
	if err != nil {
		return 0, err
	}
	defer k.Close()
	uri := e.uri(fmt.Sprintf("cluster-flood-%d", from), round)
	if err := k.CreateOn(wctx, uri, floodCommand(n), c.names[on]); err != nil {
		return 0, err
	}
	defer func() { _ = k.Dispose(wctx, uri) }()
	s, err := wsclient.DialStream(wctx, c.targets[from], fmt.Sprintf("bench-cluster-reader-%d-%d-%s", from, round, e.run), uri)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	start := time.Now()
	var end wsclient.End
	done := make(chan struct{})
	go func() { end = s.Drain(wctx, func(int64) {}); close(done) }()
	if err := k.Input(wctx, uri, "\r"); err != nil {
		return 0, err
	}
	<-done
	secs := time.Since(start).Seconds()
	if want := floodOutputBytes(n, e.pty); end.Bytes < want {
		return 0, fmt.Errorf("flood from node %d on node %d: %s", from, on, describeEnd(end))
	}
	return float64(end.Bytes) / secs, nil
}

// echo times keystrokes from a client of node from through cat on node on.
// echoer is a client typing into a cat on a node, one keystroke at a time.
type echoer struct {
	k     *wsclient.Control
	w     *wsclient.Watch
	uri   string
	label string
	typed int
	close func()
}

// echoer opens a cat on node on for a client of node from, and waits for it.
func (c *clusterNodes) echoer(ctx context.Context, e *env, from, on int) (*echoer, error) {
	k, err := wsclient.DialControl(ctx, c.targets[from], fmt.Sprintf("bench-cluster-echo-%d-%s", from, e.run))
	if err != nil {
		return nil, err
	}
	uri := e.uri(fmt.Sprintf("cluster-echo-%d", from), on)
	w := k.Watch(uri)
	if err := k.CreateOn(ctx, uri, e.echoCommand(), c.names[on]); err != nil {
		k.Close()
		return nil, err
	}
	closeIt := func() {
		dctx, cancel := e.waitCtx(context.Background())
		defer cancel()
		_ = k.Dispose(dctx, uri)
		k.Close()
	}
	st, err := k.SubscribeTerminal(ctx, uri)
	if err != nil {
		closeIt()
		return nil, err
	}
	seen := st.Text()
	for !strings.Contains(seen, "ready") {
		env, err := nextEnvelope(ctx, k, w)
		if err != nil {
			closeIt()
			return nil, fmt.Errorf("waiting for cat: %w", err)
		}
		seen += envelopeData(env)
	}
	label := "same node"
	if from != on {
		label = "other node"
	}
	return &echoer{k: k, w: w, uri: uri, label: label, close: closeIt}, nil
}

// keys types n keystrokes and times each one's echo; the first echoWarmup it ever
// types are not timed.
func (x *echoer) keys(ctx context.Context, n int) ([]time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for len(times) < n {
		key := string(keyFor(x.typed))
		echotrace.Begin()
		start := time.Now()
		if err := x.k.Input(ctx, x.uri, key); err != nil {
			return nil, err
		}
		for {
			env, err := nextEnvelope(ctx, x.k, x.w)
			if err != nil {
				return nil, fmt.Errorf("keystroke %d: %w", x.typed, err)
			}
			echotrace.Mark("client recv " + env.Type)
			if strings.Contains(envelopeData(env), key) {
				break
			}
		}
		if x.typed >= echoWarmup {
			echotrace.End(x.label)
			times = append(times, time.Since(start))
		}
		x.typed++
	}
	return times, nil
}

// echoRounds is how many rounds the keystrokes are typed in: each round types a share
// on the same node, then on the other, then times as many pings, so that a machine
// whose load drifts during the run weighs on all three alike.
const echoRounds = 5

// echo times keystrokes to a terminal on owner from a client of owner (same) and of
// entry (cross), and node-to-node pings from entry to owner, in rounds.
func (c *clusterNodes) echo(ctx context.Context, e *env, entry, owner int) (same, cross, pings []time.Duration, err error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	sx, err := c.echoer(wctx, e, owner, owner)
	if err != nil {
		return nil, nil, nil, err
	}
	defer sx.close()
	cx, err := c.echoer(wctx, e, entry, owner)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cx.close()
	per := max(e.sizes.EchoKeys/echoRounds, 1)
	// The first pings open the pinger's connections to the node and back (in
	// process, node 0 has had them since it joined): untimed, as the first
	// keystrokes are.
	for range echoWarmup {
		if _, err := c.ping(entry, owner, e.cfg.WaitTimeout); err != nil {
			return nil, nil, nil, fmt.Errorf("node to node ping: %w", err)
		}
	}
	for range echoRounds {
		s, err := sx.keys(wctx, per)
		if err != nil {
			return nil, nil, nil, err
		}
		x, err := cx.keys(wctx, per)
		if err != nil {
			return nil, nil, nil, err
		}
		same, cross = append(same, s...), append(cross, x...)
		for range per {
			d, err := c.ping(entry, owner, e.cfg.WaitTimeout)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("node to node ping: %w", err)
			}
			pings = append(pings, d)
		}
	}
	if echotrace.On {
		fmt.Fprint(os.Stderr, echotrace.Report())
	}
	return same, cross, pings, nil
}

// converge opens the terminals through every node at once, none naming a node, and
// times how long until every node's root list holds them all.
func (c *clusterNodes) converge(ctx context.Context, e *env, r *report.Result) error {
	total := e.sizes.ClusterTerminals
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	prefix := e.uri("cluster-conv", 0)
	prefix = prefix[:len(prefix)-1]
	ctls := make([]*wsclient.Control, clusterNodeCount)
	watches := make([]*wsclient.Watch, clusterNodeCount)
	for i := range ctls {
		k, err := wsclient.DialControl(wctx, c.targets[i], fmt.Sprintf("bench-cluster-conv-%d-%s", i, e.run))
		if err != nil {
			return err
		}
		defer k.Close()
		ctls[i], watches[i] = k, k.Watch(messages.RootURI)
		if _, err := k.Subscribe(wctx, messages.RootURI); err != nil {
			return err
		}
	}
	start := time.Now()
	converged := make([]time.Duration, clusterNodeCount)
	perNode := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				env, err := nextEnvelope(wctx, ctls[i], w)
				if err != nil {
					return
				}
				a, err := env.Decode()
				if err != nil || a.Terminals == nil {
					continue
				}
				count := 0
				nodes := map[string]int{}
				for _, row := range *a.Terminals {
					if strings.HasPrefix(row.Resource, prefix) {
						count++
						node, _ := row.Meta[root.NodeMeta].(string)
						nodes[node]++
					}
				}
				if count == total {
					converged[i] = time.Since(start)
					mu.Lock()
					perNode = nodes
					mu.Unlock()
					return
				}
			}
		}()
	}
	// Each node's client opens its share, a few at a time.
	var answered time.Duration
	var createErr error
	var cw sync.WaitGroup
	sem := make(chan struct{}, 8*clusterNodeCount)
	for i := range total {
		cw.Add(1)
		sem <- struct{}{}
		go func() {
			defer cw.Done()
			defer func() { <-sem }()
			if err := ctls[i%clusterNodeCount].CreateOn(wctx, e.uri("cluster-conv", i), "echo ready; exec sleep 3600", ""); err != nil {
				mu.Lock()
				createErr = err
				mu.Unlock()
			}
		}()
	}
	cw.Wait()
	answered = time.Since(start)
	wg.Wait()
	defer func() {
		// The terminals go again, each through the node that opened it.
		var dw sync.WaitGroup
		for i := range total {
			dw.Add(1)
			sem <- struct{}{}
			go func() {
				defer dw.Done()
				defer func() { <-sem }()
				dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
				defer cancel()
				_ = ctls[i%clusterNodeCount].Dispose(dctx, e.uri("cluster-conv", i))
			}()
		}
		dw.Wait()
	}()
	if createErr != nil {
		return createErr
	}
	last := slices.Max(converged)
	if slices.Contains(converged, 0) {
		return fmt.Errorf("not every node listed all %d terminals in time", total)
	}
	r.Add(report.Figure{Name: fmt.Sprintf("%d terminals opened across %d nodes, every create answered", total, clusterNodeCount), Value: answered.Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: fmt.Sprintf("until every node lists all %d", total), Value: last.Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "root list convergence after the last create's answer", Value: max(last-answered, 0).Seconds(), Unit: report.UnitSeconds})
	var placed []string
	for _, name := range c.names {
		placed = append(placed, fmt.Sprintf("%s %d", name, perNode[name]))
	}
	r.Note("placement (least loaded; no create named a node): %s; each node listed them all after %s", strings.Join(placed, ", "), durations(converged))
	return nil
}

func durations(d []time.Duration) string {
	out := make([]string, len(d))
	for i, x := range d {
		out[i] = x.Round(time.Millisecond).String()
	}
	return strings.Join(out, ", ")
}
