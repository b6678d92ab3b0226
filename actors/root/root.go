package root

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/session/shellpool"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
)

// Options are the root's, and through it every terminal's and session's, limits and
// choices. The zero value of each field means the default its comment names.
type Options struct {
	// UsePty runs shells under a pseudoterminal; false means pipes.
	UsePty bool
	// ScrollbackLimit caps a terminal's kept content, in characters. Default 200,000.
	ScrollbackLimit int
	// ListTimeout lists a pseudoterminal whose shell printed nothing. Default 10 s.
	ListTimeout time.Duration
	// DrainGrace bounds the wait for output after the process exited, for a background
	// job that holds the pty or pipe open. Default 2 s.
	DrainGrace time.Duration
	// KillGrace is the time between SIGHUP and SIGKILL when a terminal is disposed.
	// Default 2 s.
	KillGrace time.Duration
	// DefaultShell is the system shell: $SHELL, else /bin/sh, when empty.
	DefaultShell string
	// ZshFolderAsFound takes <tmp>/<user>-termhost-zsh for zsh's startup files even
	// when it is a symlink or another user's (--zsh-folder as-found).
	ZshFolderAsFound bool
	// Home is the folder a client's terminal opens in when it names none. Default
	// the host's home folder.
	Home   string
	Logger *slog.Logger
	// Store keeps sessions, their local turns and retained terminals; nil keeps
	// nothing.
	Store *persistence.Store
	// CommandTimeout ends a `!` command still running after it. Default 2 minutes.
	CommandTimeout time.Duration
	// PresenceGrace is how long a client whose connections all went stays among a
	// session's active clients, for it to come back with reconnect. Default 30 s.
	PresenceGrace time.Duration
	// ToolService makes the props of each session's agent shell service, spawned
	// by the session when first asked for (session.ToolServiceQuery). Nil: none.
	ToolService func(session.ToolServiceSpec) *actor.Props
	// Agents are the names of the agents this host runs, listed on root state
	// (`agents`) for a client to pick one by in createSession (`provider`). Agent
	// makes the runner of a session made with one (session.Config.Agent); without
	// it no agent is listed.
	Agents []string
	Agent  func(agentmsg.Spec) *actor.Props
	// OnConfig, when set, is told root config's values after every change, from the
	// root's mailbox: it must not block, and the map is its own.
	OnConfig func(values map[string]any)
	// Node and Cluster, set on a cluster node only: this node's name, which its rows
	// carry in _meta.node, and its node actor (actors/cluster), which is told this
	// node's rows and answers for the terminals other nodes own.
	Node    string
	Cluster *actor.PID

	// sessions is the one session scanner the root's terminals share (set by
	// WithDefaults, which the root's props call).
	sessions *pty.SessionScanner
	// scripts remembers the integration scripts installed, for all the root's
	// terminals (set by WithDefaults, as sessions is).
	scripts *integration.Installed
	// spares bounds the spare shells of all the root's sessions together (set by
	// WithDefaults, as sessions is).
	spares *shellpool.Budget
}

// WithDefaults is o with each zero value replaced by its default, for what must agree
// with the root before it starts (the folder a handshake names as defaultDirectory).
func (o Options) WithDefaults() Options {
	t := o.terminalConfig(nil).WithDefaults()
	o.ScrollbackLimit, o.ListTimeout, o.DrainGrace, o.KillGrace = t.ScrollbackLimit, t.ListTimeout, t.DrainGrace, t.KillGrace
	o.Home, o.Logger, o.sessions, o.scripts = t.Home, t.Logger, t.Sessions, t.Scripts
	if o.spares == nil {
		// Two a core: one session's two spares, and on a loaded machine no more
		// started ahead than it has cores to start them on.
		o.spares = shellpool.NewBudget(2 * runtime.NumCPU())
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 2 * time.Minute
	}
	return o
}

// terminalConfig is what the root's terminals are made with.
func (o Options) terminalConfig(journal *delivery.Journal) terminal.Config {
	return terminal.Config{Journal: journal, UsePty: o.UsePty, ScrollbackLimit: o.ScrollbackLimit, ListTimeout: o.ListTimeout,
		DrainGrace: o.DrainGrace, KillGrace: o.KillGrace, DefaultShell: o.DefaultShell, ZshFolderAsFound: o.ZshFolderAsFound,
		Home: o.Home, Logger: o.Logger, Sessions: o.sessions, Scripts: o.scripts}
}

// sessionConfig is what the root's sessions are made with.
func (o Options) sessionConfig(journal *delivery.Journal) session.Config {
	return session.Config{Journal: journal, Store: o.Store, DefaultShell: o.DefaultShell, CommandTimeout: o.CommandTimeout,
		PresenceGrace: o.PresenceGrace, Logger: o.Logger, ToolService: o.ToolService, Agents: o.agents(), Agent: o.Agent,
		SpareBudget: o.spares,
		Prestart: func(m *terminal.Create) (*terminal.Spare, error) {
			return terminal.Prestart(o.terminalConfig(journal), m)
		}}
}

// agents are the names of the agents sessions may be made with: none without a
// runner to run them.
func (o Options) agents() []string {
	if o.Agent == nil {
		return nil
	}
	return o.Agents
}

// agentInfo is one entry of root state's `agents` (state.schema.json AgentInfo).
type agentInfo struct {
	Provider    string `json:"provider"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	Models      []any  `json:"models"`
}

// agentList is root state's `agents`: one AgentInfo per agent this host runs, in the
// order they were named. Their command lines are not listed: root state is read by
// everybody, signed in or not.
func (o Options) agentList() []json.RawMessage {
	list := []json.RawMessage{}
	for _, name := range o.agents() {
		raw, _ := json.Marshal(agentInfo{Provider: name, DisplayName: name, Models: []any{},
			Description: "An ACP agent this host runs; every command it runs is a terminal of this host."})
		list = append(list, raw)
	}
	return list
}

// Root config keys.
const (
	ConfigDefaultShell             = "defaultShell"
	ConfigEnableCustomTerminalTool = "enableCustomTerminalTool"
)

// rootConfigSchema describes the two keys the host reads (seed: "Configuration keys").
func rootConfigSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			ConfigDefaultShell: map[string]any{
				"type": "string", "title": "Default shell",
				"description": "The absolute path of the shell a client's terminal opens",
			},
			ConfigEnableCustomTerminalTool: map[string]any{
				"type": "boolean", "title": "Offer the agent terminal tools", "default": false,
			},
		},
	}
}

// rootActor is the root actor: the root list, root config and the registry of
// channels.
type rootActor struct {
	opts     Options
	journal  *delivery.Journal
	behavior actor.Behavior

	root    messages.RootState
	order   []string // terminal URIs in the order they were created
	entries map[string]*terminalEntry
	// byActor names each entry's URI by its actor's id, so an ended actor is found
	// without a look at every entry.
	byActor map[string]string
	subs    map[delivery.Subscriber]bool

	// shutdownWaiters are answered once the shutdown is done.
	shutdownWaiters []*actor.PID

	// sessions maps a session URI to its actor; chats maps each chat URI to the actor
	// of the session holding it.
	sessions map[string]*actor.PID
	chats    map[string]*actor.PID

	// The root list's broadcasts are throttled (see rootWindow): rootSent is when the
	// last went out, and rootTimer, while set, will send the list as it is then.
	rootSent time.Time
	// rootSpacing is the window after the last list (listWindow of its size).
	rootSpacing time.Duration
	rootTimer   *time.Timer
	// listStale says root.Terminals lags the entries: on one node the list is made
	// when it is sent or a snapshot is taken, not at every change (a burst of changes
	// inside one window would otherwise build a list of every terminal for each).
	listStale bool

	// spawned counts the terminals made, for their actors' names.
	spawned int

	// remote are the rows other cluster nodes list, by node; remoteURIs the
	// terminals among them, each row encoded (see cluster.go).
	remote     map[string][]messages.TerminalInfo
	remoteURIs map[string]json.RawMessage // each encoded (rootlist.go)
	sentLocal  []json.RawMessage
	// remoteChats are the chats other nodes hold, by node; sentChats this node's, as
	// last told to the node actor.
	remoteChats map[string][]string
	sentChats   []string
	// localRows are this node's rows as last told to the node actor.
	localRows []messages.TerminalInfo
	// summaries are this node's sessions' summaries as listed (with _meta.node), kept
	// from the session's first answer and every SummaryChanged since, for the other
	// nodes; sessionsChanged says they have not been told yet.
	summaries       map[string]map[string]any
	sessionsChanged bool
	// remoteSessions are the sessions other nodes hold, by node; remoteSessionAt the
	// node (its address) of each.
	remoteSessions  map[string][]map[string]any
	remoteSessionAt map[string]string
	// holders stand in, for the claims of this node's terminals, for sessions other
	// nodes hold (cluster.go, holderOf).
	holders map[string]*actor.PID
	// reserving are the URIs of creates waiting for their reservation, reservations
	// those this node holds, and reservedNow the one whose create runs again now
	// (cluster.go, reserveFirst).
	reserving    map[string]bool
	reservations map[string]bool
	reservedNow  string
	// placing counts the creates of each URI handed to the node actor to be placed
	// and not yet answered; afterCreate are the subscribes that came while their
	// channel's create was under way (reserving or placing).
	placing     map[string]int
	afterCreate map[string][]heldSubscribe

	// draining refuses new terminals; drainWaiters hear when the shells are done
	// (see drain.go).
	draining     bool
	drainWaiters []*actor.PID
}

// NewProps makes the props of the root actor.
func NewProps(opts Options, journal *delivery.Journal) *actor.Props {
	opts = opts.WithDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		h := &rootActor{opts: opts, journal: journal, entries: map[string]*terminalEntry{}, byActor: map[string]string{}, subs: map[delivery.Subscriber]bool{},
			sessions: map[string]*actor.PID{}, chats: map[string]*actor.PID{},
			remote: map[string][]messages.TerminalInfo{}, remoteURIs: map[string]json.RawMessage{}, remoteChats: map[string][]string{},
			summaries: map[string]map[string]any{}, remoteSessions: map[string][]map[string]any{}, remoteSessionAt: map[string]string{}, holders: map[string]*actor.PID{},
			reserving: map[string]bool{}, reservations: map[string]bool{}, placing: map[string]int{}, afterCreate: map[string][]heldSubscribe{}}
		h.behavior.Become(h.serving)
		h.root = messages.RootState{
			Agents:    opts.agentList(),
			Terminals: &[]messages.TerminalInfo{},
			Config: &messages.RootConfig{
				Schema: rootConfigSchema(),
				Values: map[string]any{ConfigDefaultShell: "", ConfigEnableCustomTerminalTool: false},
			},
		}
		return h
	}, actor.WithSupervisor(terminalSupervisor()), actor.WithDispatcher(channel.Pooled))
}

// The root's phases are behaviours: serving, its working life; closing, once a
// shutdown is asked for, while the sessions end their commands and write what they
// keep; and ending, while the terminals are disposed, until the last is gone and the
// shutdown is answered. Nothing new starts once it is closing.
func (h *rootActor) Receive(ctx actor.Context) { h.behavior.Receive(ctx) }

// serving: the root's working life.
func (h *rootActor) serving(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *terminal.Create:
		h.create(ctx, m)
	case *session.Create:
		h.createSession(ctx, m)
	case *channel.Shutdown:
		h.shutdown(ctx)
	default:
		h.registry(ctx)
	}
}

// closing: a shutdown was asked for; the sessions are ending their commands.
func (h *rootActor) closing(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *terminal.Create:
		if m.Spare != nil {
			go m.Spare.Release()
		}
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInternalError, "This host is closing, so nothing new starts on it")})
	case *session.Create:
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeInternalError, "%s", session.ClosingHost)})
	case *channel.Shutdown:
		h.shutdownWaiters = append(h.shutdownWaiters, ctx.Sender())
	case *sessionsClosed:
		h.behavior.Become(h.ending)
		for uri, e := range h.entries {
			ctx.Send(e.pid, &terminal.Dispose{URI: uri})
		}
		h.maybeShutdownDone(ctx)
	default:
		h.registry(ctx)
	}
}

// ending: the sessions are done and the terminals are being disposed; the shutdown
// is answered once every terminal is gone.
func (h *rootActor) ending(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *channel.Shutdown:
		h.shutdownWaiters = append(h.shutdownWaiters, ctx.Sender())
		h.maybeShutdownDone(ctx)
	case *actor.Terminated:
		h.terminated(ctx, m)
		h.maybeShutdownDone(ctx)
	default:
		h.closing(ctx)
	}
}

// registry handles what every phase handles alike: the root channel, and the
// routing of everything else to the terminal or session that answers it.
func (h *rootActor) registry(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.restoreSessions(ctx)
	case *actor.Stopping:
		if h.rootTimer != nil {
			h.rootTimer.Stop()
		}
	case *rootFlush:
		if h.rootTimer != nil {
			h.sendTerminals()
		}
	case *channel.Subscribe:
		h.subscribe(ctx, m)
	case *channel.Unsubscribe:
		h.unsubscribe(ctx, m)
	case *channel.Dispatch:
		h.dispatch(ctx, m)
	case *session.ClientLeft, *session.ClientBack:
		// Presence is each session's: every session hears of a client's coming and going,
		// on every node of a cluster (a client of this node may be active in a session
		// of another).
		for _, pid := range h.sessions {
			ctx.Send(pid, m)
		}
		if h.clustered() {
			ctx.Send(h.opts.Cluster, m)
		}
	case *RemotePresence:
		for _, pid := range h.sessions {
			ctx.Send(pid, m.Msg)
		}
	case *session.CreateChat:
		h.createChat(ctx, m)
	case *session.ChatsOf:
		h.chatsOf(ctx, m)
	case *session.DisposeChat:
		if pid := h.chats[m.Chat]; pid != nil {
			delete(h.chats, m.Chat)
			ctx.Forward(pid)
			h.sessionsMoved(ctx)
			return
		}
		if h.toCluster(ctx, m.Chat) {
			return
		}
		ctx.Respond(&session.Result{})
	case *session.SetBackgroundWork:
		h.forwardToChat(ctx, m.Chat)
	case *session.RemoveBackgroundWork:
		h.forwardToChat(ctx, m.Chat)
	case *session.Wake:
		h.forwardToChat(ctx, m.Chat)
	case *session.StopBackgroundWork:
		if h.chats[m.Chat] == nil && h.toCluster(ctx, m.Chat) {
			return
		}
		if !h.forwardToChat(ctx, m.Chat) {
			ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		}
	case *session.ShowTurns:
		if !h.forwardToChat(ctx, m.Chat) {
			ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		}
	case *session.FetchTurns:
		if h.chats[m.Chat] == nil && h.toCluster(ctx, m.Chat) {
			return
		}
		if !h.forwardToChat(ctx, m.Chat) {
			ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		}
	case *session.ToolServiceQuery:
		if pid := h.sessions[m.Session]; pid != nil {
			ctx.Forward(pid)
			return
		}
		ctx.Respond(&session.ToolServiceResult{Err: messages.Errorf(messages.CodeSessionNotFound, "No session %s on this host", m.Session)})
	case *session.List:
		h.listSessions(ctx)
	case *session.SummaryChanged:
		if h.sessions[m.Session] != nil {
			h.tellCatalog("root/sessionSummaryChanged", map[string]any{"channel": messages.RootURI, "session": m.Session, "changes": m.Changes})
			if old := h.summaries[m.Session]; old != nil {
				summary := maps.Clone(old)
				maps.Copy(summary, m.Changes)
				h.summaries[m.Session] = summary
				h.sessionsMoved(ctx)
			}
		}
	case *session.Dispose:
		h.disposeSession(ctx, m)
	case *terminal.Write:
		h.forwardToTerminal(ctx, m.URI)
	case *terminal.Kill:
		h.forwardToTerminal(ctx, m.URI)
	case *terminal.SnapshotQuery:
		if !h.forwardToTerminal(ctx, m.URI) {
			ctx.Respond(nil)
		}
	case *terminal.ScreenQuery:
		if !h.forwardToTerminal(ctx, m.URI) {
			ctx.Respond(&terminal.ScreenInfo{WhenAltBuffer: terminal.Settled})
		}
	case *terminal.Dispose:
		h.disposeTerminal(ctx, m)
	case *terminal.StartFailed:
		h.startFailed(ctx, m)
	case *terminal.Row:
		h.row(ctx, m)
	case *terminal.HolderQuery:
		// A terminal's claim actor watches the session its claim names.
		ctx.Respond(&terminal.Holder{Session: m.Session, PID: h.holderOf(ctx, m.Session)})
	case *ListTerminals:
		ctx.Respond(append([]string(nil), h.order...))
	case *RemoteRows:
		h.remoteRows(ctx, m)
	case *ResendRows:
		h.sentLocal, h.sentChats = nil, nil
		h.publishTerminals(ctx)
	case *Drain:
		h.drain(ctx)
	case *actor.Terminated:
		h.terminated(ctx, m)
	}
}

func (h *rootActor) subscribe(ctx actor.Context, m *channel.Subscribe) {
	if m.Channel == messages.RootURI {
		h.subs[m.Sub] = true
		h.freshenList()
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: messages.RootURI, State: h.root, FromSeq: h.journal.Current()}})
		return
	}
	if e := h.entries[m.Channel]; e != nil {
		ctx.Forward(e.pid)
		return
	}
	if pid := h.sessionOf(m.Channel); pid != nil {
		ctx.Forward(pid)
		return
	}
	if h.waitCreate(ctx, m) {
		return
	}
	if h.toCluster(ctx, m.Channel) {
		return
	}
	if isSessionURI(m.Channel) {
		// The protocol's code for a session URI that does not exist (errors.ts
		// SessionNotFound), as every other request naming a missing session answers.
		ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeSessionNotFound, "No session %s on this host", m.Channel)})
		return
	}
	ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", m.Channel)})
}

func (h *rootActor) unsubscribe(ctx actor.Context, m *channel.Unsubscribe) {
	if m.Channel == messages.RootURI {
		delete(h.subs, m.Sub)
	} else if e := h.entries[m.Channel]; e != nil {
		ctx.Forward(e.pid)
	} else if pid := h.sessionOf(m.Channel); pid != nil {
		ctx.Forward(pid)
	} else {
		h.toCluster(ctx, m.Channel)
	}
}

// shutdown asks the sessions to end their commands before the terminals go: a
// command's turn still waiting ends unrun and what ended is written. They are asked
// off the mailbox, because they ask this actor for their terminals' snapshots
// meanwhile.
func (h *rootActor) shutdown(ctx actor.Context) {
	h.behavior.Become(h.closing)
	h.shutdownWaiters = append(h.shutdownWaiters, ctx.Sender())
	futures := make([]*actor.Future, 0, len(h.sessions))
	for _, pid := range h.sessions {
		futures = append(futures, ctx.RequestFuture(pid, &channel.Shutdown{}, 10*time.Second))
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	go func() {
		for _, f := range futures {
			_, _ = f.Result()
		}
		system.Root.Send(self, &sessionsClosed{})
	}()
}

// maybeShutdownDone answers the shutdown once every terminal is gone, those the
// root already let go of included (ending phase only).
func (h *rootActor) maybeShutdownDone(ctx actor.Context) {
	if len(h.entries) > 0 || h.disposing(ctx) {
		return
	}
	for _, w := range h.shutdownWaiters {
		ctx.Send(w, &channel.ShutdownDone{})
	}
	h.shutdownWaiters = nil
}

func (h *rootActor) dispatch(ctx actor.Context, m *channel.Dispatch) {
	if m.Channel != messages.RootURI {
		if e := h.entries[m.Channel]; e != nil {
			if !strings.HasPrefix(m.Action.Type, "terminal/") && (strings.HasPrefix(m.Action.Type, "chat/") || strings.HasPrefix(m.Action.Type, "session/")) {
				h.reject(m, fmt.Sprintf("%s is not a session here", m.Channel))
				return
			}
			ctx.Forward(e.pid)
			return
		}
		if pid := h.sessionOf(m.Channel); pid != nil {
			ctx.Forward(pid)
			return
		}
		h.toCluster(ctx, m.Channel)
		// A dispatch to a channel that does not exist is ignored (PROTOCOL.md 4).
		return
	}
	if m.Action.Type != messages.RootConfigChanged {
		h.reject(m, "only root/configChanged may be dispatched on the root channel")
		return
	}
	// Root config is served to every client, signed in or not: only the keys its
	// schema names are taken, so nobody can store what they like there for others.
	for k := range m.Action.Config {
		if k != ConfigDefaultShell && k != ConfigEnableCustomTerminalTool {
			h.reject(m, fmt.Sprintf("%q is not a root config key here; the keys are %s and %s", k, ConfigDefaultShell, ConfigEnableCustomTerminalTool))
			return
		}
	}
	if v, ok := m.Action.Config[ConfigDefaultShell]; ok {
		s, isString := v.(string)
		if !isString || (s != "" && !isAbs(s)) {
			h.reject(m, "defaultShell must be an absolute path")
			return
		}
	}
	if v, ok := m.Action.Config[ConfigEnableCustomTerminalTool]; ok {
		if _, isBool := v.(bool); !isBool {
			h.reject(m, "enableCustomTerminalTool must be a boolean")
			return
		}
	}
	messages.ReduceRoot(&h.root, m.Action)
	origin := m.Origin
	h.broadcast(&messages.Envelope{Channel: messages.RootURI, Action: m.Raw, Origin: &origin})
	if h.opts.OnConfig != nil {
		h.opts.OnConfig(maps.Clone(h.root.Config.Values))
	}
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

func (h *rootActor) reject(m *channel.Dispatch, reason string) {
	h.journal.Reject(m.Sub, m.Channel, m.Raw, m.Origin, reason)
}

func (h *rootActor) broadcast(env *messages.Envelope) {
	h.deliver(h.journal.Stamp(env))
}

// deliver sends a root frame to every root subscriber.
func (h *rootActor) deliver(frame []byte) {
	for s := range h.subs {
		s.Deliver(messages.RootURI, frame)
	}
}

// sanitizeName makes an actor name from a URI (actor names are for logs only).
func sanitizeName(uri string) string {
	b := []byte(uri)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}
