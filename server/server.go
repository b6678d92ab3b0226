// Package server is termhost's transport: the HTTP listener, /healthz, sign-in on the
// WebSocket upgrade, and for each WebSocket a reader that hands frames to its
// Connection actor and one writer goroutine that drains its Outbox. It owns the
// actor system and shuts it down in order: sockets first, then every terminal.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/coder/websocket"
	"golang.org/x/sync/semaphore"

	"github.com/termhost/termhost/actors/agents"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/actors/shells"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/server/ahp"
	"github.com/termhost/termhost/server/mcphost"
)

// Config is what a Server is made with. Zero values mean the defaults named.
type Config struct {
	// Root is what the root actor, and through it every terminal and session, is made with.
	Root root.Options
	// Auth signs connections in; required.
	Auth *auth.Store
	// AllowAnonymous lets a host on a non-loopback address take connections that
	// carry no valid token (they still can drive nothing).
	AllowAnonymous bool
	// AllowOrigins are extra Origin host patterns a browser may connect from; the
	// host's own origin is always allowed.
	AllowOrigins []string
	// MaxFrameBytes is the largest frame a client may send: a big paste into a
	// terminal fits. Default 4 MiB.
	MaxFrameBytes int64
	// OutboxBytes bounds what may wait unsent for one connection; past it the
	// connection is closed at once. Default 16 MiB.
	OutboxBytes int
	// BehindBytes is how much may wait unsent for one channel before the connection
	// counts as behind; one that stays behind for BehindGrace is closed and can
	// reconnect for a snapshot. Default: the terminals' scrollback cap (200,000).
	BehindBytes int
	// BehindGrace is how long a connection may stay behind. Default 5 s.
	BehindGrace time.Duration
	// RightsRecheck is how often the users file is looked at for changes that open
	// connections must follow (a revoked token, a narrower role). Default 1 s.
	RightsRecheck time.Duration
	// WriteTimeout bounds one socket write. Default 30 s.
	WriteTimeout time.Duration
	// MaxInFlightBytes bounds the bytes of frames one connection has read and not yet
	// had handled, so a flood of large frames cannot pile up either. Default 8 MiB.
	MaxInFlightBytes int64
	// MaxInFlight bounds the frames one connection has read and not yet had handled,
	// so a flooding client is slowed by TCP rather than growing a mailbox. Default 64.
	MaxInFlight int
	// MaxAnonymous bounds the WebSockets open at once without a valid token, so that
	// one local process cannot hold every descriptor of the host. Signed-in
	// connections are not counted and never refused by it. Default 64.
	MaxAnonymous int
	// ReplayEntries and ReplayBytes bound the ring reconnect replays from: the last
	// 8,192 envelopes or 16 MiB of them by default, whichever is less.
	ReplayEntries int
	ReplayBytes   int
	// Shells is what the agent shell tools run with (windows, limits, the monitors'
	// delivery rules); zero values take their defaults.
	Shells shells.Options
	// Tools is the tool families /mcp offers (default both).
	Tools mcphost.Families
	// Agents are the ACP agents sessions may be made with, by name: the argv
	// (program and arguments) each runs (`serve --agent NAME='command args'`, and
	// agents.json in the state folder). Root state lists them; createSession names
	// one as its provider. None: sessions have no agent.
	Agents map[string][]string
	// AgentRestartLimit and AgentRestartWindow bound an agent's restarts after
	// crashes (agents.Options; defaults 3 in a minute).
	AgentRestartLimit  int
	AgentRestartWindow time.Duration
	Version            string
	Logger             *slog.Logger
	// Cluster, when set, makes this host a node of a cluster (actors/cluster): its
	// root lists every node's terminals and reaches the others'. Nil: a host alone.
	Cluster *cluster.Options
}

// Server serves AHP over WebSocket.
type Server struct {
	cfg     Config
	log     *slog.Logger
	system  *actor.ActorSystem
	root    *actor.PID
	journal *delivery.Journal
	// clients remembers every clientId's person and protocol version, so a client
	// can resume on a new connection with reconnect as its first request.
	clients *ahp.Clients
	// mcp serves the agent shell tools at /mcp.
	mcp *mcphost.Endpoint
	// agentTools says what a session's agent is offered of /mcp.
	agentTools *agentTools

	mu sync.Mutex // guards conns, anonymous and closing
	// conns are the open WebSockets and their connection actors (nil until spawned).
	conns map[*websocket.Conn]*actor.PID
	// anonymous counts the open WebSockets (and upgrades under way) without a valid token.
	anonymous int
	closing   bool
	// loopbackOnly is set by Serve from the listener's address.
	loopbackOnly bool
	// member is this host's membership of its cluster, nil for a host alone.
	member *cluster.Member
}

// New starts the actor system and the root actor.
func New(cfg Config) (*Server, error) {
	if cfg.Auth == nil {
		return nil, errors.New("server: an auth store is required")
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = 4 << 20
	}
	if cfg.OutboxBytes <= 0 {
		cfg.OutboxBytes = 16 << 20
	}
	if cfg.BehindBytes <= 0 {
		cfg.BehindBytes = cfg.Root.ScrollbackLimit
		if cfg.BehindBytes <= 0 {
			cfg.BehindBytes = terminal.DefaultScrollbackLimit
		}
	}
	if cfg.BehindGrace <= 0 {
		cfg.BehindGrace = 5 * time.Second
	}
	if cfg.RightsRecheck <= 0 {
		cfg.RightsRecheck = time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = 8 << 20
	}
	if cfg.MaxInFlightBytes < cfg.MaxFrameBytes {
		cfg.MaxInFlightBytes = cfg.MaxFrameBytes
	}
	if cfg.MaxAnonymous <= 0 {
		cfg.MaxAnonymous = 64
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Root.Logger = cfg.Logger
	tools := &agentTools{}
	tools.watchConfig(&cfg.Root)
	if len(cfg.Agents) > 0 && cfg.Root.Agent == nil {
		cfg.Root.Agents = slices.Sorted(maps.Keys(cfg.Agents))
		cfg.Root.Agent = agents.NewProps(agents.Options{Agents: cfg.Agents, MCP: tools.offer, RestartLimit: cfg.AgentRestartLimit,
			RestartWindow: cfg.AgentRestartWindow, Logger: cfg.Logger})
	}
	if cfg.Root.ToolService == nil {
		tools := cfg.Shells
		tools.Store, tools.Logger = cfg.Root.Store, cfg.Logger
		if tools.DefaultShell == "" {
			tools.DefaultShell = cfg.Root.DefaultShell
		}
		cfg.Root.ToolService = shells.NewProps(tools)
	}
	// The host's defaults are filled in here, once, so that what connections are told
	// (the home folder as defaultDirectory) is what the host uses.
	cfg.Root = cfg.Root.WithDefaults()
	// protoactor's own logs are about its internals: warnings and up only.
	quiet := slog.New(newOnceAWhile(levelFloor{cfg.Logger.Handler(), slog.LevelWarn}, repeatWindow)).With("lib", "protoactor")
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	// An actor that panics is restarted, or stopped after ten failures in ten seconds,
	// by its supervisor; protoactor-go says so at Info, under the floor above. An
	// operator must hear of it: an actor stopped that way goes silent, and a cluster
	// node whose node actor did would hear no other node with nothing in its log.
	system.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			cfg.Logger.Error("an actor failed", "actor", e.Child.GetId(), "reason", fmt.Sprint(e.Reason), "then", e.Directive.String())
		}
	})
	if cfg.ReplayEntries <= 0 {
		cfg.ReplayEntries = 8192
	}
	if cfg.ReplayBytes <= 0 {
		cfg.ReplayBytes = 16 << 20
	}
	journal := delivery.NewJournal(cfg.ReplayEntries, cfg.ReplayBytes)
	// A cluster node joins before anything is spawned: an actor spawned before its
	// remote starts is named by no address another node can reach.
	var member *cluster.Member
	if cfg.Cluster != nil {
		opts := *cfg.Cluster
		opts.Logger, opts.ScrollbackLimit = cfg.Logger, cfg.Root.ScrollbackLimit
		var err error
		if member, err = cluster.Join(system, opts); err != nil {
			system.Shutdown()
			return nil, err
		}
		cfg.Root.Node, cfg.Root.Cluster = member.Name(), member.PID()
	}
	rootPID, err := system.Root.SpawnNamed(root.NewProps(cfg.Root, journal), "root")
	if err != nil {
		return nil, fmt.Errorf("server: starting the root actor: %w", err)
	}
	if member != nil {
		if err := member.Spawn(journal, rootPID); err != nil {
			return nil, fmt.Errorf("server: starting the cluster node actor: %w", err)
		}
		if cfg.Auth != nil {
			if err := member.SpawnUsers(cfg.Auth); err != nil {
				return nil, fmt.Errorf("server: starting the cluster's users actor: %w", err)
			}
			// Before anyone is served: a token revoked while this node was down must
			// not sign in here.
			answered, asked := member.SyncUsers()
			cfg.Logger.Info("users taken from the cluster's other nodes", "answered", answered, "asked", asked)
		}
	}
	endpoint := mcphost.New(mcphost.Config{System: system, Root: rootPID, Auth: cfg.Auth, Tools: cfg.Tools,
		DefaultDirectory: cfg.Root.Home, Version: cfg.Version, Logger: cfg.Logger})
	tools.endpoint.Store(endpoint)
	return &Server{cfg: cfg, log: cfg.Logger, system: system, root: rootPID, journal: journal, clients: ahp.NewClients(0, 0), mcp: endpoint,
		agentTools: tools, conns: map[*websocket.Conn]*actor.PID{}, member: member}, nil
}

// agentTools decides what a session's agent is offered of /mcp: with root config's
// enableCustomTerminalTool on, this host's /mcp for that session (the host tool
// family) with a token for that session alone (mcphost.Endpoint.SessionToken);
// otherwise nothing. It is asked when a session's runner starts the agent, from the
// runner, so it only reads: the root tells it of config changes (root.Options.OnConfig)
// and Serve of the address.
type agentTools struct {
	enabled  atomic.Bool
	addr     atomic.Pointer[string] // host:port a local agent dials; set by Serve
	endpoint atomic.Pointer[mcphost.Endpoint]
}

// watchConfig has the root tell t of every root config change, beside whoever it
// told already.
func (t *agentTools) watchConfig(o *root.Options) {
	before := o.OnConfig
	o.OnConfig = func(values map[string]any) {
		on, _ := values[root.ConfigEnableCustomTerminalTool].(bool)
		t.enabled.Store(on)
		if before != nil {
			before(values)
		}
	}
}

// offer is agents.Options.MCP.
func (t *agentTools) offer(session string) (string, map[string]string, bool) {
	addr, endpoint := t.addr.Load(), t.endpoint.Load()
	if !t.enabled.Load() || addr == nil || endpoint == nil {
		return "", nil, false
	}
	u := "http://" + *addr + "/mcp?" + url.Values{"session": {session}, "tools": {string(mcphost.Host)}}.Encode()
	return u, map[string]string{"Authorization": "Bearer " + endpoint.SessionToken(session)}, true
}

// localAddr is the address a process on this machine dials to reach a listener: a
// listener on every interface is named by the loopback of its family.
func localAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	host := "127.0.0.1"
	if tcp.IP.To4() == nil {
		host = "::1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// levelFloor drops records below a level.
type levelFloor struct {
	slog.Handler
	floor slog.Level
}

func (l levelFloor) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.floor && l.Handler.Enabled(ctx, lv)
}

// WithAttrs and WithGroup keep the floor on derived handlers.
func (l levelFloor) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelFloor{l.Handler.WithAttrs(attrs), l.floor}
}

func (l levelFloor) WithGroup(name string) slog.Handler {
	return levelFloor{l.Handler.WithGroup(name), l.floor}
}

// Handler serves /healthz, the browser page (a plain GET of / and of its files under
// /assets/) and, on any other path or with Upgrade: websocket on any path, the
// WebSocket.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	page, err := embeddedPage()
	if err != nil {
		// Only a broken build gets here, and its tests say so; the WebSocket still works.
		s.log.Error("the browser page is not served", "err", err)
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if s.loopbackOnly && !s.loopbackHostName(r.Host) {
			http.Error(w, "termhost: this host serves loopback names only (localhost, 127.0.0.1, [::1]); start it with --allow-origin HOST to be reached as "+r.Host, http.StatusForbidden)
			return
		}
		s.mcp.ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if f, ok := page.pageFor(r); ok {
			s.servePage(w, r, f)
			return
		}
		s.serveWebSocket(w, r)
	})
	return mux
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.loopbackOnly = isLoopback(ln.Addr())
	addr := localAddr(ln.Addr())
	s.agentTools.addr.Store(&addr)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go s.watchRights(watchCtx)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// http.Server.Shutdown neither closes nor waits for hijacked connections such as
	// WebSockets, so they are closed first, by us.
	err := s.Shutdown(shutdownCtx)
	_ = srv.Shutdown(shutdownCtx)
	return err
}

// watchRights tells every open connection when the users file has changed, so a
// revoked token or a narrowed role takes effect on what a connection already
// receives, not only on what it asks next.
func (s *Server) watchRights(ctx context.Context) {
	t := time.NewTicker(s.cfg.RightsRecheck)
	defer t.Stop()
	last := s.cfg.Auth.Generation()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gen := s.cfg.Auth.Generation()
		if gen == last {
			continue
		}
		last = gen
		s.mu.Lock()
		pids := make([]*actor.PID, 0, len(s.conns))
		for _, pid := range s.conns {
			if pid != nil {
				pids = append(pids, pid)
			}
		}
		s.mu.Unlock()
		for _, pid := range pids {
			s.system.Root.Send(pid, &ahp.Recheck{})
		}
	}
}

func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// AgentMCP is what a session's agent is offered of /mcp now, as its runner is told
// when it starts the agent: the URL and the headers, or false for none.
func (s *Server) AgentMCP(session string) (url string, headers map[string]string, ok bool) {
	return s.agentTools.offer(session)
}

// System is the actor system, for tests and the bench.
func (s *Server) System() *actor.ActorSystem { return s.system }

// Member is this host's membership of its cluster, nil for a host alone: for the
// bench, which times round trips between nodes.
func (s *Server) Member() *cluster.Member { return s.member }

// RootPID is the root actor, for tests and the bench.
func (s *Server) RootPID() *actor.PID { return s.root }

// Drain refuses every new terminal from now on (a cluster node tells the others to
// place nothing here) and waits until no shell of this host runs, or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	if s.member != nil {
		s.member.Drain()
	}
	timeout := time.Hour
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if _, err := s.system.Root.RequestFuture(s.root, &root.Drain{}, timeout).Result(); err != nil {
		return fmt.Errorf("server: draining: the shells did not all end in time")
	}
	return nil
}

// Shutdown closes every connection with StatusGoingAway, ends every terminal's
// process group, and stops the actor system.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.member != nil {
		// The other nodes place nothing here from now on. Until their provider
		// lets this node go (seconds: three missed polls with seeds), they would
		// otherwise place a new terminal on the node with the fewest: this one,
		// its terminals ending.
		s.member.Drain()
	}
	s.mu.Lock()
	s.closing = true
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Close(websocket.StatusGoingAway, string(delivery.ReasonShutdown))
		}()
	}
	wg.Wait()
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	_, err := s.system.Root.RequestFuture(s.root, &channel.Shutdown{}, timeout).Result()
	if s.member != nil {
		s.member.Leave()
	}
	s.system.Shutdown()
	if err != nil {
		return fmt.Errorf("server: ending terminals: %w", err)
	}
	return nil
}

// signInToken is the token a request signs in with: ?tkn=, else a Bearer header, else
// a termhost.bearer.TOKEN subprotocol (the browser page's; see bearerSubprotocol),
// which is then returned as bearer.
func signInToken(r *http.Request) (token, bearer string) {
	token = r.URL.Query().Get("tkn")
	if h := r.Header.Get("Authorization"); token == "" && strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
	}
	if token != "" {
		return token, ""
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); strings.HasPrefix(p, bearerSubprotocol) {
				return strings.TrimPrefix(p, bearerSubprotocol), p
			}
		}
	}
	return "", ""
}

// loopbackHostName reports whether a request to a loopback host names it as such.
// A browser sends the name it resolved in Host: a page on evil.example whose name was
// rebound to 127.0.0.1 would otherwise pass every Origin check, its own Origin
// matching its own Host, and read this host without a token. Such a host answers only
// to loopback names, and to the hosts --allow-origin names.
func (s *Server) loopbackHostName(hostport string) bool {
	name := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, pattern := range s.cfg.AllowOrigins {
		pattern = strings.ToLower(pattern)
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
		if ok, _ := path.Match(pattern, strings.ToLower(hostport)); ok {
			return true
		}
	}
	return false
}

func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	if s.loopbackOnly && !s.loopbackHostName(r.Host) {
		s.log.Warn("refused a request naming another host", "host", r.Host, "remote", r.RemoteAddr)
		http.Error(w, "termhost: this host serves loopback names only (localhost, 127.0.0.1, [::1]); start it with --allow-origin HOST to be reached as "+r.Host, http.StatusForbidden)
		return
	}
	token, bearer := signInToken(r)
	p, ok := s.cfg.Auth.Authenticate(token) // nobody for "" or a wrong token
	if !ok && bearer != "" {
		// Only the page signs in this way, and it must learn that its token is wrong
		// rather than be let in as nobody.
		http.Error(w, "termhost: this token is not valid here; sign in again", http.StatusUnauthorized)
		return
	}
	if !ok && !s.loopbackOnly && !s.cfg.AllowAnonymous {
		http.Error(w, "termhost: sign in with ?tkn=TOKEN or Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	closing, crowded := s.closing, !ok && s.anonymous >= s.cfg.MaxAnonymous
	if !closing && !crowded && !ok {
		s.anonymous++
	}
	s.mu.Unlock()
	if closing {
		http.Error(w, "termhost: the host is shutting down", http.StatusServiceUnavailable)
		return
	}
	if crowded {
		s.log.Warn("refused a connection without a token: too many are open", "remote", r.RemoteAddr, "limit", s.cfg.MaxAnonymous)
		http.Error(w, "termhost: too many connections without a token are open; sign in with ?tkn=TOKEN or Authorization: Bearer TOKEN", http.StatusServiceUnavailable)
		return
	}
	if !ok {
		defer func() {
			s.mu.Lock()
			s.anonymous--
			s.mu.Unlock()
		}()
	}
	// Accept echoes the first of these that the client offered, and none if it
	// offered none of them.
	subprotocols := []string{pageSubprotocol}
	if bearer != "" {
		subprotocols = append(subprotocols, bearer)
	}
	cw := &corkingWriter{ResponseWriter: w, writeTimeout: s.cfg.WriteTimeout}
	conn, err := websocket.Accept(cw, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowOrigins, Subprotocols: subprotocols})
	if err != nil {
		s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	// However the connection ends (a close frame, a peer that vanished, a read error,
	// shutdown), its socket is released here: the library leaves a connection whose
	// read failed open, holding its descriptor in CLOSE-WAIT for good.
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(s.cfg.MaxFrameBytes)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = conn.Close(websocket.StatusGoingAway, string(delivery.ReasonShutdown))
		return
	}
	s.conns[conn] = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	// A signed-in connection's rights follow the users file while it is open: a
	// revoked token or a changed role counts from the next request or dispatch.
	var refresh func() auth.Principal
	if ok {
		follow := s.cfg.Auth.Follow(token)
		refresh = func() auth.Principal {
			now, _ := follow()
			return now
		}
	}
	s.runConnection(r.Context(), conn, cw.conn, p, refresh)
}

// runConnection reads frames until the socket ends, with one writer goroutine.
func (s *Server) runConnection(reqCtx context.Context, conn *websocket.Conn, cork *corkConn, p auth.Principal, refresh func() auth.Principal) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(reqCtx))
	defer cancel()
	log := s.log.With("user", p.User)
	closeOnce := sync.Once{}
	closeWith := func(code websocket.StatusCode, reason delivery.CloseReason) {
		closeOnce.Do(func() {
			log.Info("closing connection", "reason", string(reason))
			go func() { _ = conn.Close(code, string(reason)) }()
		})
	}
	limits := delivery.OutboxLimits{Bytes: s.cfg.OutboxBytes, ChannelBytes: s.cfg.BehindBytes, Grace: s.cfg.BehindGrace}
	outbox := delivery.NewOutbox(limits, func(reason delivery.CloseReason) {
		closeWith(websocket.StatusPolicyViolation, reason)
	})
	if cork != nil {
		outbox.SetDirect(&directWriter{s: s, ctx: ctx, conn: conn, cork: cork})
	}
	inFlight := make(chan struct{}, s.cfg.MaxInFlight)
	inFlightBytes := semaphore.NewWeighted(s.cfg.MaxInFlightBytes)
	props := ahp.NewProps(ahp.Config{
		Clients:   s.clients,
		Root:      s.root,
		Journal:   s.journal,
		Outbox:    outbox,
		Principal: p,
		Refresh:   refresh,
		Info:      ahp.ServerInfo{Name: "termhost", Version: s.cfg.Version},
		Home:      s.cfg.Root.Home,
		Logger:    log,
		Close:     outbox.Finish,
		Done: func(n int) {
			<-inFlight
			inFlightBytes.Release(int64(n))
		},
	})
	pid := s.system.Root.Spawn(props)
	defer s.system.Root.Send(pid, &ahp.Disconnected{})
	s.mu.Lock()
	if _, open := s.conns[conn]; open {
		s.conns[conn] = pid
	}
	s.mu.Unlock()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(ctx, conn, cork, outbox, closeWith)
	}()
	defer func() { cancel(); <-writerDone }()

	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st == -1 && !errors.Is(err, context.Canceled) {
				log.Debug("connection read ended", "err", err)
			}
			return
		}
		if typ != websocket.MessageText {
			closeWith(websocket.StatusUnsupportedData, "termhost: send one JSON-RPC message per text frame")
			continue
		}
		if err := inFlightBytes.Acquire(ctx, int64(len(data))); err != nil {
			return
		}
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			return
		}
		s.system.Root.Send(pid, &ahp.Frame{Data: data})
	}
}

func (s *Server) writeLoop(ctx context.Context, conn *websocket.Conn, cork *corkConn, outbox *delivery.Outbox, closeWith func(websocket.StatusCode, delivery.CloseReason)) {
	for {
		frames, err := outbox.Next(ctx)
		echotrace.Mark("outbox writer")
		if err != nil {
			var fin *delivery.Finished
			if errors.As(err, &fin) {
				closeWith(websocket.StatusPolicyViolation, fin.Reason)
			}
			return
		}
		if err := s.writeBatch(ctx, conn, cork, frames); err != nil {
			outbox.Close()
			return
		}
		outbox.Wrote()
	}
}

// directWriter lets a connection's producers write a small batch themselves while
// its writer is idle (delivery.Direct), with the writer's own writeBatch.
type directWriter struct {
	s    *Server
	ctx  context.Context
	conn *websocket.Conn
	cork *corkConn
}

func (d *directWriter) Room(n int) bool { return d.cork.room(n) }

func (d *directWriter) Write(frames [][]byte) error {
	return d.s.writeBatch(d.ctx, d.conn, d.cork, frames)
}

// writeBatch writes a batch of frames, each a message. Corked, the batch is one
// socket write (see corkConn), so one write deadline covers it.
func (s *Server) writeBatch(ctx context.Context, conn *websocket.Conn, cork *corkConn, frames [][]byte) error {
	// A frame larger than the library's buffer is corked too: the library buffers
	// its header, fills the buffer from the payload and flushes it, then writes the
	// rest, which is two writes; corked, the first part is held and goes out with
	// the rest in one writev (a flood's every chunk, to every subscriber).
	if cork != nil && (len(frames) > 1 || len(frames[0]) > corkAlone) {
		cork.cork()
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	for _, f := range frames {
		if err := conn.Write(wctx, websocket.MessageText, f); err != nil {
			if cork != nil {
				_ = cork.uncork() // a close frame written meanwhile still goes
			}
			return err
		}
	}
	if cork != nil {
		return cork.uncork()
	}
	return nil
}
