package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
	"github.com/termhost/termhost/server"
)

// waitTimeout bounds every wait for an event in these tests; on a loaded 2-core CI
// machine a shell can take seconds to start, so it is generous. Nothing is timed.
const waitTimeout = 20 * time.Second

type testHost struct {
	t     *testing.T
	srv   *server.Server
	addr  string
	owner string
	store *auth.Store
	// kept is the host's session store, where retained terminals go.
	kept *persistence.Store
	// dir is the state folder; stop shuts the host down (once).
	dir  string
	stop func()
}

type hostOption func(*server.Config)

func withPty(use bool) hostOption { return func(c *server.Config) { c.Root.UsePty = use } }

// withAllowAnonymous is --allow-anonymous: a host on a non-loopback address takes
// connections without a valid token (they still can drive nothing).
func withAllowAnonymous() hostOption { return func(c *server.Config) { c.AllowAnonymous = true } }

// withAllowOrigins is --allow-origin: extra Origin host patterns browsers may connect from.
func withAllowOrigins(patterns ...string) hostOption {
	return func(c *server.Config) { c.AllowOrigins = append(c.AllowOrigins, patterns...) }
}

// withOutboxBytes bounds each connection's unsent output, so a slow reader is caught
// without megabytes of flood.
func withOutboxBytes(n int) hostOption { return func(c *server.Config) { c.OutboxBytes = n } }

// withRightsRecheck sets how often open connections follow the users file.
func withRightsRecheck(d time.Duration) hostOption {
	return func(c *server.Config) { c.RightsRecheck = d }
}

// withCommandTimeout shortens the two minutes a `!` command may run.
func withCommandTimeout(d time.Duration) hostOption {
	return func(c *server.Config) { c.Root.CommandTimeout = d }
}

// withMaxFrameBytes sets the largest frame a client may send.
func withMaxFrameBytes(n int64) hostOption { return func(c *server.Config) { c.MaxFrameBytes = n } }

// startHost serves a host on a free loopback port for the length of the test.
func startHost(t *testing.T, opts ...hostOption) *testHost {
	t.Helper()
	return startHostOn(t, "127.0.0.1:0", opts...)
}

// startHostOn serves a host on listen (host:port; port 0 picks a free one) for the
// length of the test.
func startHostOn(t *testing.T, listen string, opts ...hostOption) *testHost {
	t.Helper()
	return startHostIn(t, t.TempDir(), listen, opts...)
}

// startHostIn serves a host whose state folder is dir, so a second host on the same
// folder is the first one restarted.
func startHostIn(t *testing.T, dir, listen string, opts ...hostOption) *testHost {
	t.Helper()
	store, err := auth.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, _, err := store.EnsureOwner()
	if err != nil {
		t.Fatal(err)
	}
	owner := readToken(t, path)
	kept, err := persistence.Open(filepath.Join(dir, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		// bash is pinned so prompts and job control are the same on every machine.
		Root:   root.Options{UsePty: false, Home: t.TempDir(), KillGrace: 500 * time.Millisecond, DefaultShell: "/bin/bash", Store: kept},
		Auth:   store,
		Logger: testLogger(t),
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("the host did not shut down within 30 s")
			}
		})
	}
	t.Cleanup(stop)
	return &testHost{t: t, srv: srv, addr: ln.Addr().String(), owner: owner, store: store, kept: kept, dir: dir, stop: stop}
}

func readToken(t *testing.T, path string) string {
	t.Helper()
	b, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// testLogger sends the host's logs into the test's log while the test runs.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() { w.mu.Lock(); w.done = true; w.mu.Unlock() }

func (h *testHost) url(token string) string {
	if token == "" {
		return "ws://" + h.addr + "/"
	}
	return "ws://" + h.addr + "/?tkn=" + token
}

// dial connects as the owner without a handshake.
func (h *testHost) dialRaw(token string) *conn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, h.url(token), nil)
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return &conn{t: h.t, Conn: c}
}

// dial connects as the owner and completes the handshake, subscribed to the root.
func (h *testHost) dial(clientID string) *conn {
	h.t.Helper()
	c := h.dialRaw(h.owner)
	c.clientID = clientID
	if _, err := c.Initialize(c.ctx(), clientID, messages.RootURI); err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return c
}

// conn is a test client that keeps every notification it has seen.
type conn struct {
	*client.Conn
	t        *testing.T
	clientID string
	seen     []*client.Notification
	seq      int64
	// snaps are the snapshots createTerminal subscribed with.
	snaps map[string]*messages.TerminalState
}

func (c *conn) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	c.t.Cleanup(cancel)
	return ctx
}

func (c *conn) request(method string, params any) (json.RawMessage, error) {
	return c.Request(c.ctx(), method, params)
}

func (c *conn) mustRequest(method string, params any) json.RawMessage {
	c.t.Helper()
	r, err := c.request(method, params)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return r
}

// dispatch sends an action and returns its clientSeq.
func (c *conn) dispatch(channel string, action map[string]any) int64 {
	c.t.Helper()
	c.seq++
	if err := c.Dispatch(c.ctx(), channel, c.seq, action); err != nil {
		c.t.Fatalf("dispatch: %v", err)
	}
	return c.seq
}

// waitFor reads notifications until pred holds, failing with what was seen.
func (c *conn) waitFor(what string, pred func(*client.Notification) bool) *client.Notification {
	c.t.Helper()
	for _, n := range c.seen {
		if pred(n) {
			return n
		}
	}
	deadline := time.After(waitTimeout)
	for {
		select {
		case n, ok := <-c.Notifications:
			if !ok {
				c.t.Fatalf("connection closed while waiting for %s: %v", what, c.Err())
			}
			c.seen = append(c.seen, n)
			if pred(n) {
				return n
			}
		case <-deadline:
			c.t.Fatalf("no %s within %v; saw %s", what, waitTimeout, c.describeSeen())
		}
	}
}

func (c *conn) describeSeen() string {
	var b strings.Builder
	for _, n := range c.seen {
		fmt.Fprintf(&b, "\n  %s %s", n.Method, truncate(string(n.Params), 300))
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// waitAction waits for an action of the given type on a channel.
func (c *conn) waitAction(channel, actionType string) *client.Envelope {
	c.t.Helper()
	n := c.waitFor(actionType+" on "+channel, func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == channel && n.Envelope.Type == actionType
	})
	return n.Envelope
}

// output is everything the channel's terminal/data actions carried so far.
func (c *conn) output(channel string) string {
	var b strings.Builder
	if st := c.snaps[channel]; st != nil {
		for _, p := range st.Content {
			b.WriteString(p.Text())
		}
	}
	for _, n := range c.seen {
		if e := n.Envelope; e != nil && e.Channel == channel && e.Type == messages.TerminalData && e.RejectionReason == "" {
			a, _ := e.Decode()
			if a.Data != nil {
				b.WriteString(*a.Data)
			}
		}
	}
	return b.String()
}

// waitOutput waits until the channel's output contains want.
func (c *conn) waitOutput(channel, want string) string {
	c.t.Helper()
	if out := c.output(channel); strings.Contains(out, want) {
		return out
	}
	c.waitFor(fmt.Sprintf("output %q on %s", want, channel), func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == channel && strings.Contains(c.output(channel), want)
	})
	return c.output(channel)
}

// createTerminal creates a terminal and subscribes to it.
func (c *conn) createTerminal(uri string, params map[string]any) *client.RawSnapshot {
	c.t.Helper()
	p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": c.clientID}}
	for k, v := range params {
		p[k] = v
	}
	c.mustRequest("createTerminal", p)
	snap, err := c.Subscribe(c.ctx(), uri)
	if err != nil {
		c.t.Fatalf("subscribe %s: %v", uri, err)
	}
	st, err := snap.TerminalState()
	if err != nil {
		c.t.Fatalf("snapshot of %s: %v", uri, err)
	}
	if c.snaps == nil {
		c.snaps = map[string]*messages.TerminalState{}
	}
	c.snaps[uri] = st
	return snap
}

func (c *conn) input(uri, text string) {
	c.dispatch(uri, map[string]any{"type": "terminal/input", "data": text})
}

// rpcError asserts err is a JSON-RPC error with code.
func rpcError(t *testing.T, err error, code int) *messages.Error {
	t.Helper()
	e, ok := err.(*messages.Error)
	if !ok {
		t.Fatalf("want JSON-RPC error %d, got %v", code, err)
	}
	if e.Code != code {
		t.Fatalf("want error code %d, got %d: %s", code, e.Code, e.Message)
	}
	return e
}

var _ = pty.Available

func mkdir(path string) error { return os.MkdirAll(path, 0o755) }

// terminalMode is one of the two ways a host runs a shell: on pipes (what startHost
// gives unless told otherwise) or under a pseudoterminal (what `serve` does where the
// machine has one).
type terminalMode struct {
	name string
	pty  bool
}

// terminalModes are both modes, for tests that must hold in each.
var terminalModes = []terminalMode{{"pipes", false}, {"pty", true}}

var ptyAvailable = sync.OnceValue(pty.Available)

// forEachMode runs test once in each mode, as a subtest named after it; the pty one
// is skipped, saying so, on a machine with no pseudoterminal.
func forEachMode(t *testing.T, test func(t *testing.T, m terminalMode)) {
	t.Helper()
	for _, m := range terminalModes {
		t.Run(m.name, func(t *testing.T) {
			if m.pty && !ptyAvailable() {
				t.Skip("no pseudoterminal on this machine")
			}
			test(t, m)
		})
	}
}

// host starts a host running its shells in this mode.
func (m terminalMode) host(t *testing.T, opts ...hostOption) *testHost {
	t.Helper()
	return startHost(t, append(opts, withPty(m.pty))...)
}

// uri names a channel after this mode, so the two runs of a test never share one.
func (m terminalMode) uri(name string) string { return "ahp-terminal:/" + name + "-" + m.name }

// nl is how a line a program prints ends in what a client sees: a pseudoterminal's
// line discipline turns "\n" into "\r\n" (termios ONLCR); pipes pass it as it is.
func (m terminalMode) nl() string {
	if m.pty {
		return "\r\n"
	}
	return "\n"
}

// withDefaultShell is the shell the host's terminals and commands run.
func withDefaultShell(path string) hostOption {
	return func(c *server.Config) { c.Root.DefaultShell = path }
}
