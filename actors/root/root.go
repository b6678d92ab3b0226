package root

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
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
	"github.com/termhost/termhost/messages/toolterm"
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

// rootWindow throttles root/terminalsChanged. It carries the whole list (PROTOCOL.md
// 5.3), so a burst of changes - a thousand terminals opened at once - would send a
// thousand ever longer lists to every root subscriber, quadratic in the burst. The
// first change after a quiet window goes at once; the changes after it within the
// window go as one list at its end. A snapshot is taken from the entries as they are
// at that moment, whether or not their list has gone out yet.
const rootWindow = 10 * time.Millisecond

// A list of many terminals widens the window, so the lists a root subscriber is
// sent stay within rootListRate bytes a second up to rootWindowMax: at every change
// on a host of a thousand shells, 10 ms apart, a browser would be handed a quarter
// of a megabyte a hundred times a second.
const (
	rootListRate  = 4 << 20 // bytes a second
	rootWindowMax = 250 * time.Millisecond
)

// listWindow is the window after a list of size bytes went out.
func listWindow(size int) time.Duration {
	w := time.Duration(size) * time.Second / rootListRate
	return min(max(w, rootWindow), rootWindowMax)
}

// rootFlush is the throttle's timer firing.
type rootFlush struct{}

type terminalEntry struct {
	pid  *actor.PID
	info messages.TerminalInfo
	// encoded is info as it goes into the list (rootlist.go).
	encoded json.RawMessage
	listed  bool
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

// terminalSupervisor keeps a Terminal whose Receive panicked: its state is what the
// clients see, so the message that failed is dropped and the actor resumes.
func terminalSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(reason interface{}) actor.Directive {
		return actor.ResumeDirective
	})
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

// forwardToChat forwards the message being handled to the session holding chat, and
// reports whether there is one; what goes nowhere is logged at debug level.
func (h *rootActor) forwardToChat(ctx actor.Context, chat string) bool {
	pid := h.chats[chat]
	if pid == nil {
		h.opts.Logger.Debug("no chat for a session message; dropped", "chat", chat, "message", fmt.Sprintf("%T", ctx.Message()))
		return false
	}
	ctx.Forward(pid)
	return true
}

// forwardToTerminal forwards the message being handled to the terminal of uri, and
// reports whether there is one.
func (h *rootActor) forwardToTerminal(ctx actor.Context, uri string) bool {
	e := h.entries[uri]
	if e == nil {
		return false
	}
	ctx.Forward(e.pid)
	return true
}

func (h *rootActor) createChat(ctx actor.Context, m *session.CreateChat) {
	pid := h.sessions[m.Session]
	if pid == nil {
		if h.toCluster(ctx, m.Session) {
			return
		}
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionNotFound, "No session %s on this host", m.Session)})
		return
	}
	if m.Chat != "" && (h.chats[m.Chat] != nil || h.entries[m.Chat] != nil || h.sessions[m.Chat] != nil) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeAlreadyExists, "Channel already exists: %s", m.Chat)})
		return
	}
	ctx.Forward(pid)
}

// chatsOf takes a session's word for which chats it holds now.
func (h *rootActor) chatsOf(ctx actor.Context, m *session.ChatsOf) {
	for uri, pid := range h.chats {
		if pid.Id == h.sessions[m.Session].GetId() {
			delete(h.chats, uri)
		}
	}
	if pid := h.sessions[m.Session]; pid != nil {
		for _, c := range m.Chats {
			h.chats[c] = pid
		}
	}
	h.sessionsMoved(ctx)
}

func (h *rootActor) disposeSession(ctx actor.Context, m *session.Dispose) {
	pid := h.sessions[m.URI]
	if pid == nil {
		if h.toCluster(ctx, m.URI) {
			return
		}
		ctx.Respond(&session.Result{})
		return
	}
	delete(h.sessions, m.URI)
	delete(h.summaries, m.URI)
	h.released(ctx, m.URI)
	defer h.sessionsMoved(ctx)
	for uri, p := range h.chats {
		if p.Id == pid.Id {
			delete(h.chats, uri)
		}
	}
	ctx.Forward(pid)
	h.tellCatalog("root/sessionRemoved", map[string]any{"channel": messages.RootURI, "session": m.URI})
}

// disposeTerminal takes the terminal off the registry and the list before the
// answer goes, then lets it end its process.
func (h *rootActor) disposeTerminal(ctx actor.Context, m *terminal.Dispose) {
	if e := h.entries[m.URI]; e != nil {
		h.unregister(ctx, m.URI, e)
		ctx.Send(e.pid, m)
	} else if h.toCluster(ctx, m.URI) {
		return
	}
	ctx.Respond(&terminal.DisposeResult{})
}

// startFailed answers the create of a terminal whose process could not be started,
// and stops it. It goes off the registry first: the client that hears of the
// failure may ask for the channel at once.
func (h *rootActor) startFailed(ctx actor.Context, m *terminal.StartFailed) {
	if e := h.entries[m.URI]; e != nil && e.pid.Id == m.Terminal.Id {
		h.unregister(ctx, m.URI, e)
	}
	ctx.Send(m.Waiter, &terminal.CreateResult{Err: m.Err})
	ctx.Stop(m.Terminal)
}

func (h *rootActor) row(ctx actor.Context, m *terminal.Row) {
	e := h.entries[m.Info.Resource]
	if e == nil || e.pid.Id != m.PID.Id {
		return
	}
	info := h.withNode(m.Info)
	e.info, e.encoded, e.listed = info, encodeRow(info), true
	h.publishTerminals(ctx)
}

// terminated takes a terminal that stopped off the registry and the list.
func (h *rootActor) terminated(ctx actor.Context, m *actor.Terminated) {
	if uri, ok := h.byActor[m.Who.Id]; ok {
		if e := h.entries[uri]; e != nil && e.pid.Id == m.Who.Id {
			h.unregister(ctx, uri, e)
		}
	}
}

func (h *rootActor) unregister(ctx actor.Context, uri string, e *terminalEntry) {
	delete(h.entries, uri)
	delete(h.byActor, e.pid.Id)
	h.released(ctx, uri)
	h.removeOrder(uri)
	if e.listed {
		h.publishTerminals(ctx)
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

func (h *rootActor) removeOrder(uri string) {
	for i, u := range h.order {
		if u == uri {
			h.order = append(h.order[:i], h.order[i+1:]...)
			return
		}
	}
}

func (h *rootActor) create(ctx actor.Context, m *terminal.Create) {
	// A spare shell offered to a terminal that is not made here is ended.
	spawned := false
	if m.Spare != nil {
		defer func() {
			if !spawned {
				go m.Spare.Release()
			}
		}()
	}
	if m.URI == messages.RootURI {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: %s is the root channel", m.URI)})
		return
	}
	_, taken := h.entries[m.URI]
	_, remote := h.remoteURIs[m.URI]
	if taken || remote {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeAlreadyExists, "Terminal already exists: %s", m.URI)})
		return
	}
	if h.sessions[m.URI] != nil || h.chats[m.URI] != nil {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInvalidParams, "%s is a session or chat here, not a terminal", m.URI)})
		return
	}
	// A terminal a tool result names cannot be opened as a shell of a client's own.
	if _, _, named := toolterm.Parse(m.URI); named && m.Watcher == nil {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "%s names a command's terminal; it cannot be created", m.URI)})
		return
	}
	if h.placeInCluster(ctx, m) || h.refuseWhileDraining(ctx, m) {
		return
	}
	if m.Watcher == nil && m.Spare == nil && h.reserveFirst(ctx, m.URI, func() { h.create(ctx, m) }, func() {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeAlreadyExists, "Terminal already exists: %s", m.URI)})
	}) {
		return
	}
	props := terminal.NewProps(h.opts.terminalConfig(h.journal), m, h.defaultShell())
	// The name carries a number of its own: a terminal disposed under the same URI
	// may still be winding down, or gone with its Terminated not yet here, and a
	// reused actor id would make that Terminated, or a connection's cached actor,
	// stand for the new terminal.
	h.spawned++
	pid, err := ctx.SpawnNamed(props, fmt.Sprintf("terminal-%s-%d", sanitizeName(m.URI), h.spawned))
	if err != nil {
		pid = ctx.Spawn(props)
	}
	ctx.Watch(pid)
	h.entries[m.URI] = &terminalEntry{pid: pid}
	h.byActor[pid.Id] = m.URI
	h.order = append(h.order, m.URI)
	spawned = true
	ctx.Forward(pid)
}

// defaultShell is the root config's defaultShell where this machine can run it.
func (h *rootActor) defaultShell() string {
	if s, _ := h.root.Config.Values[ConfigDefaultShell].(string); s != "" && isExecutable(s) {
		return s
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
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

func (h *rootActor) publishTerminals(ctx actor.Context) {
	if h.clustered() {
		// The other nodes hear of this node's rows as they change (clusterList).
		h.root.Terminals = h.listTerminals(ctx)
	} else {
		h.listStale = true
	}
	h.checkDrained(ctx)
	if h.rootTimer != nil {
		return // the list goes, as it is then, when the window ends
	}
	if wait := max(h.rootSpacing, rootWindow) - time.Since(h.rootSent); wait > 0 {
		self, system := ctx.Self(), ctx.ActorSystem()
		h.rootTimer = time.AfterFunc(wait, func() { system.Root.Send(self, &rootFlush{}) })
		return
	}
	h.sendTerminals()
}

// listTerminals makes the root list from the listed entries, in order, and (in a
// cluster) the other nodes' rows after them. The list is new: a snapshot that holds
// an older one keeps it as it was.
func (h *rootActor) listTerminals(ctx actor.Context) *[]messages.TerminalInfo {
	list := make([]messages.TerminalInfo, 0, len(h.order))
	var encoded []json.RawMessage
	if h.clustered() {
		encoded = make([]json.RawMessage, 0, len(h.order))
	}
	for _, uri := range h.order {
		if e := h.entries[uri]; e != nil && e.listed {
			list = append(list, e.info)
			if encoded != nil {
				encoded = append(encoded, e.encoded)
			}
		}
	}
	list = h.clusterList(ctx, list, encoded)
	return &list
}

// freshenList brings root.Terminals up to the entries where a change left it stale
// (only ever on one node, where the list needs no context to make).
func (h *rootActor) freshenList() {
	if h.listStale {
		h.root.Terminals = h.listTerminals(nil)
		h.listStale = false
	}
}

// sendTerminals broadcasts the root list as this actor's root state holds it now.
func (h *rootActor) sendTerminals() {
	if h.rootTimer != nil {
		h.rootTimer.Stop()
		h.rootTimer = nil
	}
	h.rootSent = time.Now()
	h.freshenList()
	if h.root.Terminals == nil {
		a := &messages.Action{Type: messages.RootTerminalsChanged}
		h.deliver(h.journal.StampReplacing(&messages.Envelope{Channel: messages.RootURI, Action: messages.EncodeAction(a)}))
		return
	}
	// The list as publishTerminals last made it: the listed entries, in order.
	infos := *h.root.Terminals
	rows := make([]json.RawMessage, len(infos))
	for i, info := range infos {
		if e := h.entries[info.Resource]; e != nil && e.listed {
			rows[i] = e.encoded
		} else {
			rows[i] = h.remoteURIs[info.Resource]
		}
	}
	// Each list replaces the one before it, in the replay ring too.
	frame := h.journal.StampReplacing(&messages.Envelope{Channel: messages.RootURI, Action: terminalsChangedJSON(infos, rows)})
	h.rootSpacing = listWindow(len(frame))
	h.deliver(frame)
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

// sessionOf is the session actor that answers for a session, chat or command terminal
// URI, or nil.
// isSessionURI says uri names a session itself (ahp-session:/<id>), not a chat or
// anything else under one.
func isSessionURI(uri string) bool {
	id, ok := strings.CutPrefix(uri, "ahp-session:/")
	return ok && id != "" && !strings.Contains(id, "/")
}

func (h *rootActor) sessionOf(uri string) *actor.PID {
	if pid := h.sessions[uri]; pid != nil {
		return pid
	}
	if pid := h.chats[uri]; pid != nil {
		return pid
	}
	if chat, _, ok := toolterm.Parse(uri); ok {
		return h.chats[chat]
	}
	return nil
}

func (h *rootActor) createSession(ctx actor.Context, m *session.Create) {
	if h.sessions[m.URI] != nil || h.remoteSession(m.URI) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "Session already exists: %s", m.URI)})
		return
	}
	if _, remote := h.remoteURIs[m.URI]; h.entries[m.URI] != nil || h.chats[m.URI] != nil || remote || h.remoteChat(m.URI) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeInvalidParams, "%s is already a channel here", m.URI)})
		return
	}
	if h.placeSessionInCluster(ctx, m) {
		return
	}
	agent := m.Agent
	if agent == session.HostProvider && !slices.Contains(h.opts.agents(), agent) {
		agent = "" // the provider of a session without an agent
	}
	if agent != "" && !slices.Contains(h.opts.agents(), agent) {
		ctx.Respond(&session.Result{Err: messages.Errorf(session.CodeProviderNotFound, "No agent %q on this host; the agents are listed on root state (agents)", m.Agent)})
		return
	}
	if h.reserveFirst(ctx, m.URI, func() { h.createSession(ctx, m) }, func() {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "Session already exists: %s", m.URI)})
	}) {
		return
	}
	rec := persistence.SessionRecord{URI: m.URI, WorkingDirectories: m.WorkingDirectories, Created: time.Now(), Agent: agent, Creator: m.By}
	pid := ctx.Spawn(session.NewProps(h.opts.sessionConfig(h.journal), rec, false))
	h.sessions[m.URI] = pid
	h.chats[m.URI+"/chat"] = pid
	ctx.Respond(&session.Result{Chat: m.URI + "/chat"})
	// Every root subscriber that may read sessions hears of it (root/sessionAdded),
	// with the summary listSessions would give: a client keeps its session list from
	// listSessions and these, and never asks again while it is connected.
	ctx.ReenterAfter(ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second), func(res any, err error) {
		if summary, ok := res.(map[string]any); ok && err == nil && h.sessions[m.URI] == pid {
			summary = h.withNodeSummary(summary)
			h.tellCatalog("root/sessionAdded", map[string]any{"channel": messages.RootURI, "summary": summary})
			if h.clustered() {
				h.summaries[m.URI] = summary
				h.sessionsMoved(ctx)
			}
		}
	})
}

// tellCatalog sends a notification of the session catalog to the root's subscribers
// that may read sessions (each connection knows whether its person may).
func (h *rootActor) tellCatalog(method string, params map[string]any) {
	frame, err := messages.NotificationFrame(method, params)
	if err != nil {
		h.opts.Logger.Warn("a session catalog notification could not be encoded", "method", method, "err", err)
		return
	}
	for s := range h.subs {
		if c, ok := s.(delivery.CatalogSubscriber); ok {
			c.DeliverCatalog(frame)
		}
	}
}

// restoreSessions brings back the sessions the store kept: a session whose turns are
// all commands has no transcript anywhere else (seed: "Who opens one").
func (h *rootActor) restoreSessions(ctx actor.Context) {
	records, problems := h.opts.Store.Sessions()
	for _, err := range problems {
		h.opts.Logger.Warn("a kept session could not be read", "err", err)
	}
	for _, rec := range records {
		pid := ctx.Spawn(session.NewProps(h.opts.sessionConfig(h.journal), rec, true))
		h.sessions[rec.URI] = pid
		for _, c := range rec.Chats {
			h.chats[c] = pid
		}
		if h.clustered() {
			// The other nodes list it once its summary is known.
			uri := rec.URI
			ctx.ReenterAfter(ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second), func(res any, err error) {
				if summary, ok := res.(map[string]any); ok && err == nil && h.sessions[uri] == pid {
					h.summaries[uri] = h.withNodeSummary(summary)
					h.sessionsMoved(ctx)
				}
			})
		}
	}
	if h.clustered() {
		h.publishTerminals(ctx) // the other nodes hear of the chats kept here
	}
}

func (h *rootActor) listSessions(ctx actor.Context) {
	futures := make([]*actor.Future, 0, len(h.sessions))
	for _, pid := range h.sessions {
		futures = append(futures, ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second))
	}
	sender := ctx.Sender()
	system := ctx.ActorSystem()
	// Another node's sessions are listed as it last told this one, each naming its
	// node, after this node's own.
	remote, node := h.remoteSummaries(), h.withNodeSummary
	go func() {
		items := []map[string]any{}
		for _, f := range futures {
			if res, err := f.Result(); err == nil {
				if m, ok := res.(map[string]any); ok {
					items = append(items, node(m))
				}
			}
		}
		system.Root.Send(sender, append(items, remote...))
	}()
}

// disposing reports whether a terminal the root let go of is still ending.
func (h *rootActor) disposing(ctx actor.Context) bool {
	for _, c := range ctx.Children() {
		if !h.isSession(c) {
			return true
		}
	}
	return false
}

func (h *rootActor) isSession(pid *actor.PID) bool {
	for _, p := range h.sessions {
		if p.Id == pid.Id {
			return true
		}
	}
	return false
}

// sessionsClosed says every session has ended its commands for a shutdown.
type sessionsClosed struct{}
