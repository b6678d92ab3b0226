package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/cluster/nodeauth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// The cluster's tests run real `termhost serve` processes as nodes on loopback, with
// a real etcd or the seeds provider, and drive them with real WebSocket clients.

// clusterNode is one `termhost serve --cluster` process.
type clusterNode struct {
	t                    *testing.T
	name, nodeAddr, ws   string
	state, stderr, token string
	cluster              string
	args                 []string
	cmd                  *exec.Cmd
	done                 chan error
}

// freePort is a loopback port for a node, a node's seeds endpoint or etcd, whose
// number must be named before the process that binds it starts (it is how the
// others reach it). A port the kernel picked for a listener on port 0 and let go is
// not safe: until the process binds it, the kernel may hand it to anybody else's
// listener on port 0 or outgoing connection, and a test running beside this one may
// pick it too; then a node talks to somebody else's process. So the port is taken
// below the kernel's ephemeral range, which the kernel never hands out unasked, and
// held for the test's life by a lock file every test binary of this repository
// respects (a flock: the kernel lets it go with the process, however it ends).
func freePort(t *testing.T) int {
	t.Helper()
	low, high := portPool()
	dir := filepath.Join(os.TempDir(), "termhost-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	start := low + mrand.IntN(high-low)
	for i := range high - low {
		port := low + (start-low+i)%(high-low)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close()
			continue
		}
		// Nobody of ours holds it; is anybody else listening there?
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			f.Close()
			continue
		}
		ln.Close()
		t.Cleanup(func() { f.Close() })
		return port
	}
	t.Fatalf("no free port in %d-%d", low, high)
	return 0
}

// portPool is where freePort takes ports from: the 10,000 ports below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range; 32768-60999 by default).
func portPool() (low, high int) {
	high = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 11024 {
				high = v
			}
		}
	}
	return high - 10000, high
}

// newClusterNode names a node; start runs it.
func newClusterNode(t *testing.T, bin, name string, extra ...string) *clusterNode {
	n := &clusterNode{t: t, name: name, nodeAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), state: t.TempDir(), cluster: clusterName(t)}
	n.stderr = filepath.Join(t.TempDir(), "stderr")
	n.args = append([]string{bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", n.state, "--pty", "always",
		"--log-level", "debug", "--cluster", n.cluster, "--node-name", name, "--node-addr", n.nodeAddr}, extra...)
	return n
}

// clusterName is a test's own cluster: its nodes share no name, and no secret (see
// start), with the nodes of a test running beside it, in this test binary or another.
func clusterName(t *testing.T) string {
	return fmt.Sprintf("t17-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid())
}

func (n *clusterNode) logs() string { b, _ := os.ReadFile(n.stderr); return string(b) }

// start runs the node with secret, made the test's own by its cluster's name, and
// waits for its contract line.
func (n *clusterNode) start(secret string) {
	t := n.t
	t.Helper()
	f, err := os.OpenFile(n.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(n.args[0], n.args[1:]...)
	if n.cluster != "" {
		secret += " " + n.cluster
	}
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TERMHOST_CLUSTER_SECRET="+secret)
	cmd.Stderr = f
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.cmd, n.done = cmd, make(chan error, 1)
	go func() { n.done <- cmd.Wait() }()
	t.Cleanup(n.stop)
	t.Cleanup(func() {
		if t.Failed() {
			n.dumpStacks()
			t.Logf("node %s's log:\n%s", n.name, n.logs())
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		const prefix = "termhost listening on ws://"
		if !strings.HasPrefix(line, prefix) {
			t.Fatalf("node %s: stdout %q; stderr:\n%s", n.name, line, n.logs())
		}
		n.ws = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, prefix)), "/")
	case <-time.After(waitTimeout):
		t.Fatalf("node %s: no listening line; stderr:\n%s", n.name, n.logs())
	}
	users := n.state
	if i := slices.Index(n.args, "--users-dir"); i >= 0 {
		users = n.args[i+1]
	}
	tok, err := os.ReadFile(filepath.Join(users, "owner.token"))
	if err != nil {
		t.Fatal(err)
	}
	n.token = strings.TrimSpace(string(tok))
}

// stop ends the node with SIGTERM (once), killing it if it does not go.
func (n *clusterNode) stop() {
	if n.cmd == nil {
		return
	}
	cmd := n.cmd
	n.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(waitTimeout):
		_ = cmd.Process.Kill()
		<-n.done
		n.t.Errorf("node %s did not stop on SIGTERM; stderr:\n%s", n.name, n.logs())
	}
}

// dumpStacks ends a node still running with SIGQUIT, which has Go's runtime write
// every goroutine's stack to its log, and keeps of those only the goroutines in this
// project's code or protoactor-go's remote: when a test failed, what the node was
// stuck in.
func (n *clusterNode) dumpStacks() {
	if n.cmd == nil {
		return
	}
	before := len(n.logs())
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
	all := n.logs()
	if before > len(all) {
		return
	}
	var kept []string
	for _, g := range strings.Split(all[before:], "\n\n") {
		if strings.Contains(g, "termhost/termhost/") || strings.Contains(g, "protoactor-go/remote") {
			kept = append(kept, g)
		}
	}
	n.t.Logf("node %s's goroutines in termhost or protoactor-go's remote when the test failed (%d):\n%s", n.name, len(kept), strings.Join(kept, "\n\n"))
	// The log is read again after this; it need not hold the dump twice.
	_ = os.Truncate(n.stderr, int64(before))
}

// kill ends the node with SIGKILL: no goodbye to anyone.
func (n *clusterNode) kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
	n.cmd = nil
}

// dial connects a client to the node, initialized with the root subscribed.
func (n *clusterNode) dial(ctx context.Context, clientID string) *client.Conn {
	n.t.Helper()
	c, err := client.Dial(ctx, "ws://"+n.ws+"/?tkn="+n.token, nil)
	if err != nil {
		n.t.Fatalf("dialing node %s: %v", n.name, err)
	}
	n.t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, clientID, messages.RootURI); err != nil {
		n.t.Fatalf("initialize on node %s: %v", n.name, err)
	}
	return c
}

// rowsOf is a root list as uri → the node its row names.
func rowsOf(list []messages.TerminalInfo) map[string]string {
	out := map[string]string{}
	for _, r := range list {
		node, _ := r.Meta["node"].(string)
		out[r.Resource] = node
	}
	return out
}

// waitList reads c's notifications until a root list satisfies ok, and returns it;
// everything else it reads is dropped, so c is a connection that only watches the root.
func waitList(t *testing.T, ctx context.Context, c *client.Conn, what string, ok func([]messages.TerminalInfo) bool) []messages.TerminalInfo {
	t.Helper()
	var last []messages.TerminalInfo
	for {
		select {
		case n, open := <-c.Notifications:
			if !open {
				t.Fatalf("%s: the connection ended: %v", what, c.Err())
			}
			if n.Envelope == nil || n.Envelope.Type != messages.RootTerminalsChanged {
				continue
			}
			a, err := n.Envelope.Decode()
			if err != nil || a.Terminals == nil {
				t.Fatalf("%s: a list that does not decode: %s", what, n.Envelope.Action)
			}
			last = *a.Terminals
			if ok(last) {
				return last
			}
		case <-ctx.Done():
			t.Fatalf("%s: never seen; the last list: %v", what, rowsOf(last))
		}
	}
}

// hasRows says a list is exactly want (uri → node).
func hasRows(want map[string]string) func([]messages.TerminalInfo) bool {
	return func(list []messages.TerminalInfo) bool {
		got := rowsOf(list)
		if len(got) != len(want) {
			return false
		}
		for uri, node := range want {
			if got[uri] != node {
				return false
			}
		}
		return true
	}
}

// rootRows is the root list of a fresh snapshot from c.
func rootRows(t *testing.T, ctx context.Context, c *client.Conn) map[string]string {
	t.Helper()
	snap, err := c.Subscribe(ctx, messages.RootURI)
	if err != nil {
		t.Fatal(err)
	}
	st, err := snap.RootState()
	if err != nil || st.Terminals == nil {
		t.Fatalf("root snapshot: %v %s", err, snap.State)
	}
	return rowsOf(*st.Terminals)
}

func createOn(t *testing.T, ctx context.Context, c *client.Conn, clientID, uri, node string) {
	t.Helper()
	params := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}}
	if node != "" {
		params["_meta"] = map[string]any{"node": node}
	}
	if _, err := c.Request(ctx, "createTerminal", params); err != nil {
		t.Fatalf("createTerminal %s on %q: %v", uri, node, err)
	}
}

// stream collects one client's envelopes on one terminal.
type stream struct {
	t    *testing.T
	c    *client.Conn
	uri  string
	envs []*client.Envelope
	data strings.Builder
}

// next reads the next envelope on the stream's terminal.
func (s *stream) next(ctx context.Context) *client.Envelope {
	s.t.Helper()
	for {
		select {
		case n, open := <-s.c.Notifications:
			if !open {
				s.t.Fatalf("the connection ended: %v", s.c.Err())
			}
			if n.Envelope == nil || n.Envelope.Channel != s.uri {
				continue
			}
			s.envs = append(s.envs, n.Envelope)
			if n.Envelope.Type == messages.TerminalData && n.Envelope.RejectionReason == "" {
				a, _ := n.Envelope.Decode()
				s.data.WriteString(*a.Data)
			}
			return n.Envelope
		case <-ctx.Done():
			s.t.Fatalf("%s: nothing more came; output so far %q", s.uri, s.data.String())
		}
	}
}

// until reads until an envelope satisfies ok, and returns it.
func (s *stream) until(ctx context.Context, what string, ok func(*client.Envelope) bool) *client.Envelope {
	s.t.Helper()
	for {
		if e := s.next(ctx); ok(e) {
			return e
		}
	}
}

func (s *stream) untilOutput(ctx context.Context, text string) {
	s.t.Helper()
	s.until(ctx, "output "+text, func(*client.Envelope) bool { return strings.Contains(s.data.String(), text) })
}

// untilPrompt reads until the output so far ends with a shell's prompt.
func (s *stream) untilPrompt(ctx context.Context) {
	s.t.Helper()
	prompted := func() bool {
		out := strings.TrimRight(s.data.String(), " ")
		return strings.HasSuffix(out, "$") || strings.HasSuffix(out, "#")
	}
	if !prompted() {
		s.until(ctx, "a prompt", func(*client.Envelope) bool { return prompted() })
	}
}

func isType(typ string) func(*client.Envelope) bool {
	return func(e *client.Envelope) bool { return e.Type == typ && e.RejectionReason == "" }
}

// shape is what a stream showed, with output chunks joined: the actions in order,
// each run of terminal/data as one entry.
func (s *stream) shape() []string {
	var out []string
	var run strings.Builder
	flush := func() {
		if run.Len() > 0 {
			out = append(out, "data:"+run.String())
			run.Reset()
		}
	}
	for _, e := range s.envs {
		if e.RejectionReason != "" {
			continue // a refusal goes to its sender alone
		}
		if e.Type == messages.TerminalData {
			a, _ := e.Decode()
			run.WriteString(*a.Data)
			continue
		}
		flush()
		out = append(out, e.Type+":"+string(e.Action))
	}
	flush()
	return out
}

// subscribeStream subscribes c to uri and returns the snapshot's state and the stream.
func subscribeStream(t *testing.T, ctx context.Context, c *client.Conn, uri string) (*messages.TerminalState, *stream, uint64) {
	t.Helper()
	snap, err := c.Subscribe(ctx, uri)
	if err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	st, err := snap.TerminalState()
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{t: t, c: c, uri: uri}
	s.data.WriteString(st.Text()) // what was printed before: the prompt, say
	return st, s, snap.FromSeq
}

// startEtcd runs Debian's etcd on loopback ports with a data folder of the test's.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (Debian: apt-get install etcd-server); the etcd provider's cluster test needs it")
	}
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	logPath := filepath.Join(t.TempDir(), "etcd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--name", "t17", "--data-dir", t.TempDir(), "--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "t17="+peer)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	// etcd says it is ready on /health; there is no event to wait for but that, so it
	// is polled under the test's deadline.
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := http.Get(client + "/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `"true"`) {
				return client
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("etcd ended:\n%s", b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("etcd never became healthy:\n%s", b)
		}
	}
}

func TestClusterWithEtcd(t *testing.T) {
	t.Parallel()
	endpoint := startEtcd(t)
	runCluster(t, func(int) []string { return []string{"--etcd", endpoint} })
}

func TestClusterWithSeeds(t *testing.T) {
	t.Parallel()
	runCluster(t, seedsFlags(t, 5))
}

// startThreeNodes starts nodes a, b and c of one cluster, with provider's flags for
// slots 0 to 2.
func startThreeNodes(t *testing.T, bin string, provider func(slot int) []string, secret string) (a, b, c *clusterNode) {
	t.Helper()
	nodes := make([]*clusterNode, 3)
	for i, name := range []string{"a", "b", "c"} {
		nodes[i] = newClusterNode(t, bin, name, provider(i)...)
	}
	for _, n := range nodes {
		n.start(secret)
	}
	return nodes[0], nodes[1], nodes[2]
}

// rootsThatListEveryNode dials the root of each of a, b and c, opens a terminal on
// each (ahp-terminal:/on-a, /on-b, /on-c) and waits until every root lists all three,
// each row naming its node: from then on the nodes know one another.
func rootsThatListEveryNode(t *testing.T, ctx context.Context, a, b, c *clusterNode) (rootA, rootB, rootC *client.Conn) {
	t.Helper()
	rootA, rootB, rootC = a.dial(ctx, "root-a"), b.dial(ctx, "root-b"), c.dial(ctx, "root-c")
	createOn(t, ctx, rootA, "root-a", "ahp-terminal:/on-a", "a")
	createOn(t, ctx, rootB, "root-b", "ahp-terminal:/on-b", "b")
	createOn(t, ctx, rootC, "root-c", "ahp-terminal:/on-c", "c")
	for i, r := range []*client.Conn{rootA, rootB, rootC} {
		waitList(t, ctx, r, "every node's terminal on node "+[]string{"a", "b", "c"}[i]+"'s list", hasRows(terminalOfEachNode()))
	}
	return rootA, rootB, rootC
}

// createAndSubscribe sends method (a create of params' channel) and a subscribe to
// that channel right behind it, without waiting for the create's answer, as a client
// may, and fails the test unless both succeed and the subscribe's snapshot is the
// channel's.
func createAndSubscribe(t *testing.T, ctx context.Context, c *client.Conn, method string, params map[string]any) {
	t.Helper()
	uri, _ := params["channel"].(string)
	res, errs := c.Pipelined(ctx, client.Call{Method: method, Params: params}, client.Call{Method: "subscribe", Params: map[string]any{"channel": uri}})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("%s %s and subscribe, pipelined: %v, %v", method, uri, errs[0], errs[1])
	}
	var sub struct{ Snapshot *client.RawSnapshot }
	if err := json.Unmarshal(res[1], &sub); err != nil || sub.Snapshot == nil || sub.Snapshot.Resource != uri {
		t.Fatalf("the pipelined subscribe to %s answered %s", uri, res[1])
	}
}

// seedsCluster starts three nodes with the seeds provider, each also given extra
// flags, and returns once every node lists every node's terminal, with a context
// that bounds the test.
func seedsCluster(t *testing.T, extra ...string) (ctx context.Context, a, b, c *clusterNode) {
	t.Helper()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	seeds := seedsFlags(t, 3)
	a, b, c = startThreeNodes(t, bin, func(slot int) []string { return append(seeds(slot), extra...) }, "the cluster's secret")
	rootsThatListEveryNode(t, ctx, a, b, c)
	return ctx, a, b, c
}

// etcdCluster starts an etcd and three nodes that keep their membership in it, and
// returns once every node lists every node's terminal, with a context that bounds
// the test.
func etcdCluster(t *testing.T, extra ...string) (ctx context.Context, a, b, c *clusterNode) {
	t.Helper()
	endpoint := startEtcd(t)
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	a, b, c = startThreeNodes(t, bin, func(int) []string { return append([]string{"--etcd", endpoint}, extra...) }, "the cluster's secret")
	rootsThatListEveryNode(t, ctx, a, b, c)
	return ctx, a, b, c
}

// terminalOfEachNode is the rows rootsThatListEveryNode opens: URI to node.
func terminalOfEachNode() map[string]string {
	return map[string]string{"ahp-terminal:/on-a": "a", "ahp-terminal:/on-b": "b", "ahp-terminal:/on-c": "c"}
}

// runCluster is the cluster's scenario, with provider giving each node's provider
// flags (slot 0-2: the first three nodes, 3: the one that joins late, 4: the one with
// the wrong secret).
func runCluster(t *testing.T, provider func(slot int) []string) {
	bin := buildBinary(t)
	const secret = "the cluster's secret"
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()

	a, b, c := startThreeNodes(t, bin, provider, secret)

	// Each node opens a terminal of its own; a client of any node sees all three,
	// each row naming its node.
	rootA, rootB, rootC := rootsThatListEveryNode(t, ctx, a, b, c)
	three := terminalOfEachNode()
	// `termhost ls` against one node shows every node's terminals and where each runs.
	ls := runBin(t, bin, "", "ls", "--url", "ws://"+a.ws+"/", "--token", a.token)
	if ls.code != 0 || !strings.Contains(ls.stdout, "NODE") {
		t.Fatalf("ls on node a: exit %d, no NODE column:\n%s%s", ls.code, ls.stdout, ls.stderr)
	}
	for uri, node := range three {
		if !slices.ContainsFunc(strings.Split(ls.stdout, "\n"), func(line string) bool {
			f := strings.Fields(line)
			return slices.Contains(f, uri) && f[len(f)-1] == node
		}) {
			t.Fatalf("ls on node a: no row of %s ending in its node %s:\n%s", uri, node, ls.stdout)
		}
	}
	// `termhost run --node` from node a runs a command on node b and shows its output.
	if r := runBin(t, bin, "", "run", "--url", "ws://"+a.ws+"/", "--token", a.token, "--node", "b", "--", "echo", "ran-on-b"); r.code != 0 || !strings.Contains(r.stdout, "ran-on-b") {
		t.Fatalf("run --node b from node a: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBin(t, bin, "", "new", "--url", "ws://"+a.ws+"/", "--token", a.token, "--node", "nowhere"); r.code == 0 || !strings.Contains(r.stderr, `no node "nowhere"`) {
		t.Fatalf("new --node nowhere: exit %d, want a refusal naming the node:\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A client of node a opens a terminal on node b and drives it from there, while a
	// client of node b watches it directly.
	const x = "ahp-terminal:/x"
	ta := a.dial(ctx, "ta")
	createOn(t, ctx, ta, "ta", x, "b")
	withX := map[string]string{x: "b"}
	for k, v := range three {
		withX[k] = v
	}
	waitList(t, ctx, rootA, "the new terminal on node a's list", hasRows(withX))
	waitList(t, ctx, rootC, "the new terminal on node c's list", hasRows(withX))

	tb := b.dial(ctx, "tb")
	stA, sA, fromA := subscribeStream(t, ctx, ta, x)
	_, sB, _ := subscribeStream(t, ctx, tb, x)
	if stA.Lifecycle == nil || stA.Lifecycle.Status != messages.StatusRunning || stA.Claim.ClientID != "ta" {
		t.Fatalf("remote snapshot: %+v", stA)
	}
	_ = stA
	sA.untilPrompt(ctx) // typing before the prompt could be lost
	sB.untilPrompt(ctx)
	// From here on both see the same actions. Before, each saw the prompt either in
	// its snapshot or as output after it, depending on when it subscribed.
	sA.envs, sB.envs = nil, nil

	_ = ta.Dispatch(ctx, x, 1, map[string]any{"type": "terminal/input", "data": "echo x-$((6*7))\r"})
	sA.untilOutput(ctx, "x-42")
	sB.untilOutput(ctx, "x-42")
	// A second subscriber on node a is answered from what node a's proxy folded.
	ta2 := a.dial(ctx, "ta2")
	if st, _, _ := subscribeStream(t, ctx, ta2, x); !strings.Contains(st.Text(), "x-42") || st.Claim.ClientID != "ta" {
		t.Fatalf("a second snapshot on node a: %+v", st)
	}
	_ = ta.Dispatch(ctx, x, 2, map[string]any{"type": "terminal/resized", "cols": 100, "rows": 30})
	sA.until(ctx, "resized", isType(messages.TerminalResized))
	sB.until(ctx, "resized", isType(messages.TerminalResized))
	_ = ta.Dispatch(ctx, x, 3, map[string]any{"type": "terminal/titleChanged", "title": "renamed"})
	sA.until(ctx, "renamed", isType(messages.TerminalTitleChanged))
	sB.until(ctx, "renamed", isType(messages.TerminalTitleChanged))
	waitList(t, ctx, rootC, "the rename on node c's list", func(list []messages.TerminalInfo) bool {
		return slices.ContainsFunc(list, func(r messages.TerminalInfo) bool { return r.Resource == x && r.Title == "renamed" })
	})
	// ta holds the claim and hands it to tb; a second claim from ta is refused, to ta alone.
	_ = ta.Dispatch(ctx, x, 4, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "tb"}})
	sA.until(ctx, "claimed", isType(messages.TerminalClaimed))
	sB.until(ctx, "claimed", isType(messages.TerminalClaimed))
	_ = ta.Dispatch(ctx, x, 5, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "ta"}})
	refused := sA.until(ctx, "the refused claim", func(e *client.Envelope) bool { return e.RejectionReason != "" })
	if refused.Origin == nil || refused.Origin.ClientID != "ta" || refused.Origin.ClientSeq != 5 {
		t.Fatalf("the refusal's origin: %+v", refused.Origin)
	}
	waitList(t, ctx, rootA, "the claim on node a's list", func(list []messages.TerminalInfo) bool {
		return slices.ContainsFunc(list, func(r messages.TerminalInfo) bool { return r.Resource == x && r.Claim.ClientID == "tb" })
	})
	_ = ta.Dispatch(ctx, x, 6, map[string]any{"type": "terminal/cleared"})
	sA.until(ctx, "cleared", isType(messages.TerminalCleared))
	sB.until(ctx, "cleared", isType(messages.TerminalCleared))

	// The remote client saw exactly what the local one did, in the same order, with
	// serverSeqs of its own node rising from its snapshot's.
	if got, want := sA.shape(), sB.shape(); !slices.Equal(got, want) {
		t.Fatalf("node a's client saw\n%q\nnode b's client saw\n%q", got, want)
	}
	last := fromA
	for _, e := range sA.envs {
		if e.ServerSeq <= last {
			t.Fatalf("serverSeq %d after %d on node a", e.ServerSeq, last)
		}
		last = e.ServerSeq
	}
	// A late subscriber elsewhere gets the state as it is now from a snapshot: what was
	// printed before the clear is gone (the shell may have printed since: a prompt
	// redrawn after the resize can come after the clear).
	tc := c.dial(ctx, "tc")
	stC, _, _ := subscribeStream(t, ctx, tc, x)
	if stC.Title != "renamed" || stC.Cols == nil || *stC.Cols != 100 || stC.Claim.ClientID != "tb" || strings.Contains(stC.Text(), "x-42") {
		t.Fatalf("a late snapshot on node c: %+v", stC)
	}
	ta3 := a.dial(ctx, "ta3")
	stA3, _, _ := subscribeStream(t, ctx, ta3, x)
	if stA3.Title != "renamed" || stA3.Claim.ClientID != "tb" || strings.Contains(stA3.Text(), "x-42") {
		t.Fatalf("a third snapshot on node a: %+v", stA3)
	}

	// Disposed from node a, it goes off every list.
	if _, err := ta.Request(ctx, "disposeTerminal", map[string]any{"channel": x}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*client.Conn{rootA, rootB, rootC} {
		waitList(t, ctx, r, "the disposed terminal off the list", hasRows(three))
	}

	// A client that sends its subscribe right behind its create, without waiting for
	// the create's answer, gets the snapshot of the terminal made on another node.
	const piped = "ahp-terminal:/piped"
	tp := a.dial(ctx, "tp")
	createAndSubscribe(t, ctx, tp, "createTerminal", map[string]any{"channel": piped, "claim": map[string]any{"kind": "client", "clientId": "tp"}, "_meta": map[string]any{"node": "c"}})
	if _, err := tp.Request(ctx, "disposeTerminal", map[string]any{"channel": piped}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*client.Conn{rootA, rootB, rootC} {
		waitList(t, ctx, r, "the pipelined terminal off the list", hasRows(three))
	}

	// A node that joins late sees the list.
	d := newClusterNode(t, bin, "d", provider(3)...)
	d.start(secret)
	rootD := d.dial(ctx, "root-d")
	if rows := rootRows(t, ctx, rootD); !hasRows(three)(listOf(rows)) {
		waitList(t, ctx, rootD, "the list on the node that joined late", hasRows(three))
	}

	// A node with the wrong secret is listed by the provider and refused by every node.
	e := newClusterNode(t, bin, "e", provider(4)...)
	e.start("not the cluster's secret")
	rootE := e.dial(ctx, "root-e")
	createOn(t, ctx, rootE, "root-e", "ahp-terminal:/on-e", "e")
	waitLog(t, ctx, a, "did not answer this node's hello", e.nodeAddr)
	waitLog(t, ctx, e, "did not answer this node's hello", a.nodeAddr)
	if rows := rootRows(t, ctx, a.dial(ctx, "check-a")); rows["ahp-terminal:/on-e"] != "" {
		t.Fatalf("node a lists the refused node's terminal: %v", rows)
	}
	if rows := rootRows(t, ctx, rootE); len(rows) != 1 {
		t.Fatalf("the refused node lists others' terminals: %v", rows)
	}
	if _, err := rootE.Request(ctx, "createTerminal", map[string]any{"channel": "ahp-terminal:/e-on-a", "claim": map[string]any{"kind": "client", "clientId": "x"}, "_meta": map[string]any{"node": "a"}}); err == nil {
		t.Fatal("the refused node placed a terminal on node a")
	}
	e.stop()

	// A `!` command runs in a session of node c: its terminal, kept once the turn
	// ended, is reachable from node a by its URI.
	sess := c.dial(ctx, "sess-c")
	kept := runBang(t, ctx, sess, "ahp-session:/on-c", "c", "!echo kept-$((3*3))")
	watchKept := a.dial(ctx, "watch-kept")
	if st, _, _ := subscribeStream(t, ctx, watchKept, kept); !strings.Contains(st.Text(), "kept-9") {
		t.Fatalf("node c's command terminal from node a: %+v", st)
	}

	// SIGKILL node c: its terminal exits, with no code and "node lost", for a
	// subscriber on node a, and goes off the lists; nothing else changes.
	watchC := a.dial(ctx, "watch-c")
	_, sC, _ := subscribeStream(t, ctx, watchC, "ahp-terminal:/on-c")
	_, sOnB, _ := subscribeStream(t, ctx, ta, "ahp-terminal:/on-b")
	c.kill()
	exited := sC.until(ctx, "node lost", isType(messages.TerminalExited))
	var ex struct {
		ExitCode *int           `json:"exitCode"`
		Meta     map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(exited.Action, &ex); err != nil || ex.ExitCode != nil || ex.Meta["reason"] != "node lost" {
		t.Fatalf("terminal/exited for a lost node: %s", exited.Action)
	}
	two := map[string]string{"ahp-terminal:/on-a": "a", "ahp-terminal:/on-b": "b"}
	waitList(t, ctx, rootA, "node c's terminal off node a's list", hasRows(two))
	waitList(t, ctx, rootB, "node c's terminal off node b's list", hasRows(two))
	waitList(t, ctx, rootD, "node c's terminal off node d's list", hasRows(two))
	_ = ta.Dispatch(ctx, "ahp-terminal:/on-b", 7, map[string]any{"type": "terminal/input", "data": "echo still-$((1+1))\r"})
	sOnB.untilOutput(ctx, "still-2")

	// Restarted with its state folder, node c is back in the cluster.
	c.start(secret)
	rootC = c.dial(ctx, "root-c2")
	if rows := rootRows(t, ctx, rootC); !hasRows(two)(listOf(rows)) {
		waitList(t, ctx, rootC, "the list on the restarted node", hasRows(two))
	}
	// Its kept command terminal is back: node a reaches it again, exited, with what
	// the command printed. Until node c has told node a of its chats the URI names
	// nothing, so the subscribe is retried under the deadline.
	for {
		snap, err := watchKept.Subscribe(ctx, kept)
		if err == nil {
			st, _ := snap.TerminalState()
			if !strings.Contains(st.Text(), "kept-9") || st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusExited {
				t.Fatalf("the kept terminal after node c's restart: %+v", st)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the kept terminal never came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	createOn(t, ctx, rootA, "root-a", "ahp-terminal:/on-c2", "c")
	two["ahp-terminal:/on-c2"] = "c"
	waitList(t, ctx, rootB, "the restarted node's terminal on node b's list", hasRows(two))
}

// listOf turns uri → node rows back into a list, for hasRows.
func listOf(rows map[string]string) []messages.TerminalInfo {
	var out []messages.TerminalInfo
	for uri, node := range rows {
		out = append(out, messages.TerminalInfo{Resource: uri, Meta: map[string]any{"node": node}})
	}
	return out
}

// waitLog waits for a line of n's log holding every one of parts. A node's log is
// the only place a refused join shows, so it is polled under the deadline.
func waitLog(t *testing.T, ctx context.Context, n *clusterNode, parts ...string) {
	t.Helper()
	waitLogSince(t, ctx, n, 0, parts...)
}

// waitLogSince is waitLog for a line written after the first from bytes of n's log.
func waitLogSince(t *testing.T, ctx context.Context, n *clusterNode, from int, parts ...string) {
	t.Helper()
	for {
		for _, line := range strings.Split(n.logs()[from:], "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s never logged %q; its log:\n%s", n.name, parts, n.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestServeDrain: with --drain, SIGTERM refuses new terminals and the host stops once
// its shell has ended, not before.
func TestServeDrain(t *testing.T) {
	bin := buildBinary(t)
	n := &clusterNode{t: t, name: "drain", state: t.TempDir(), stderr: filepath.Join(t.TempDir(), "stderr")}
	n.args = []string{bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", n.state, "--pty", "always", "--drain", "--drain-deadline", "1m"}
	n.start("")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c := n.dial(ctx, "drainer")
	const uri = "ahp-terminal:/stays"
	createOn(t, ctx, c, "drainer", uri, "")
	_, s, _ := subscribeStream(t, ctx, c, uri)
	s.untilPrompt(ctx)
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitLog(t, ctx, n, "draining")
	if _, err := c.Request(ctx, "createTerminal", map[string]any{"channel": "ahp-terminal:/new", "claim": map[string]any{"kind": "client", "clientId": "drainer"}}); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Fatalf("a create while draining: %v", err)
	}
	_ = c.Dispatch(ctx, uri, 1, map[string]any{"type": "terminal/input", "data": "echo alive-$((2+3))\r"})
	s.untilOutput(ctx, "alive-5")
	select {
	case err := <-n.done:
		t.Fatalf("the host stopped with its shell running: %v", err)
	default:
	}
	_ = c.Dispatch(ctx, uri, 2, map[string]any{"type": "terminal/input", "data": "exit\r"})
	select {
	case err := <-n.done:
		n.cmd = nil
		if err != nil {
			t.Fatalf("exit after the drain: %v; stderr:\n%s", err, n.logs())
		}
	case <-ctx.Done():
		t.Fatalf("the host did not stop once its shell ended; stderr:\n%s", n.logs())
	}
	if !strings.Contains(n.logs(), "drained") {
		t.Fatalf("no drained line:\n%s", n.logs())
	}
}

// runBang opens a session on node (a cluster places it itself without _meta.node), runs text (a `!` command) as a turn, waits for
// the turn to end and returns the URI of the terminal the command ran in.
func runBang(t *testing.T, ctx context.Context, c *client.Conn, sessionURI, node, text string) string {
	t.Helper()
	raw, err := c.Request(ctx, "createSession", map[string]any{"channel": sessionURI, "workingDirectories": []string{}, "_meta": map[string]any{"node": node}})
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Chat string }
	if err := json.Unmarshal(raw, &r); err != nil || r.Chat == "" {
		t.Fatalf("createSession: %s", raw)
	}
	if _, err := c.Subscribe(ctx, r.Chat); err != nil {
		t.Fatal(err)
	}
	_ = c.Dispatch(ctx, r.Chat, 1, map[string]any{"type": "chat/turnStarted", "turnId": "t1", "startedAt": time.Now().UTC().Format(time.RFC3339),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	uri := ""
	for {
		select {
		case n := <-c.Notifications:
			if n.Envelope == nil || n.Envelope.Channel != r.Chat {
				continue
			}
			switch n.Envelope.Type {
			case "chat/toolCallComplete":
				var a struct {
					Result struct{ Content []struct{ Resource string } }
				}
				_ = json.Unmarshal(n.Envelope.Action, &a)
				if len(a.Result.Content) > 0 {
					uri = a.Result.Content[0].Resource
				}
			case "chat/turnComplete":
				if uri == "" {
					t.Fatal("the command's turn ended without its terminal")
				}
				return uri
			}
		case <-ctx.Done():
			t.Fatal("the command's turn never ended")
		}
	}
}

// TestClusterMutualTLS: nodes given certificates speak mutual TLS to one another; a
// node with the secret but no certificate is never heard from.
func TestClusterMutualTLS(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	files := writeClusterCerts(t, t.TempDir())
	ports := []int{freePort(t), freePort(t), freePort(t)}
	seeds := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1], ports[2])
	// a and b also share one users folder: one set of users and grants for both.
	users := t.TempDir()
	withTLS := []string{"--cluster-cert", files.Cert, "--cluster-key", files.Key, "--cluster-ca", files.CA, "--users-dir", users}
	a := newClusterNode(t, bin, "a", append([]string{"--seeds", seeds, "--seed-port", strconv.Itoa(ports[0])}, withTLS...)...)
	b := newClusterNode(t, bin, "b", append([]string{"--seeds", seeds, "--seed-port", strconv.Itoa(ports[1])}, withTLS...)...)
	plain := newClusterNode(t, bin, "plain", "--seeds", seeds, "--seed-port", strconv.Itoa(ports[2]))
	const secret = "the cluster's secret"
	a.start(secret)
	b.start(secret)
	plain.start(secret)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	rootA, rootB := a.dial(ctx, "root-a"), b.dial(ctx, "root-b")
	createOn(t, ctx, rootB, "root-b", "ahp-terminal:/tls-b", "b")
	waitList(t, ctx, rootA, "node b's terminal on node a's list, over TLS", hasRows(map[string]string{"ahp-terminal:/tls-b": "b"}))
	// A token added once signs in on both nodes, as the same person with the same role.
	out, err := exec.Command(bin, "token", "add", "--state-dir", users, "--user", "ann", "--role", "member").Output()
	if err != nil {
		t.Fatal(err)
	}
	ann := strings.TrimSpace(string(out))
	for _, n := range []*clusterNode{a, b} {
		c, err := client.Dial(ctx, "ws://"+n.ws+"/?tkn="+ann, nil)
		if err != nil {
			t.Fatalf("ann's token on node %s: %v", n.name, err)
		}
		if _, err := c.Initialize(ctx, "ann-"+n.name); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	waitLog(t, ctx, plain, "did not answer this node's hello", a.nodeAddr)
	if rows := rootRows(t, ctx, plain.dial(ctx, "root-plain")); len(rows) != 0 {
		t.Fatalf("the node without a certificate lists %v", rows)
	}
}

// writeClusterCerts writes a CA and one node certificate (for 127.0.0.1) it signed.
func writeClusterCerts(t *testing.T, dir string) nodeauth.TLSFiles {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "termhost test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	files := nodeauth.TLSFiles{Cert: filepath.Join(dir, "node.pem"), Key: filepath.Join(dir, "node.key"), CA: filepath.Join(dir, "ca.pem")}
	for path, block := range map[string]*pem.Block{files.Cert: {Type: "CERTIFICATE", Bytes: der}, files.Key: {Type: "EC PRIVATE KEY", Bytes: keyDER}, files.CA: {Type: "CERTIFICATE", Bytes: caDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
