package actors

import (
	"encoding/json"
	"log/slog"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/termhost/termhost/messages"
)

// Options are the host's limits and choices. The zero value of each field means the
// default its comment names.
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
	// Home is the folder a client's terminal opens in when it names none. Default
	// the host's home folder.
	Home   string
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.ScrollbackLimit <= 0 {
		o.ScrollbackLimit = 200_000
	}
	if o.ListTimeout <= 0 {
		o.ListTimeout = 10 * time.Second
	}
	if o.DrainGrace <= 0 {
		o.DrainGrace = 2 * time.Second
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
		if o.Home == "" {
			o.Home = "/"
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
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

// host is the root actor: the root list, root config and the registry of channels.
type host struct {
	opts    Options
	journal *Journal

	root    messages.RootState
	order   []string // terminal URIs in the order they were created
	entries map[string]*terminalEntry
	subs    map[Subscriber]bool

	shutdownWaiters []*actor.PID
	shuttingDown    bool
}

type terminalEntry struct {
	pid    *actor.PID
	info   messages.TerminalInfo
	listed bool
}

// NewHostProps makes the props of the host actor.
func NewHostProps(opts Options, journal *Journal) *actor.Props {
	opts = opts.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		h := &host{opts: opts, journal: journal, entries: map[string]*terminalEntry{}, subs: map[Subscriber]bool{}}
		h.root = messages.RootState{
			Agents:    []json.RawMessage{},
			Terminals: &[]messages.TerminalInfo{},
			Config: &messages.RootConfig{
				Schema: rootConfigSchema(),
				Values: map[string]any{ConfigDefaultShell: "", ConfigEnableCustomTerminalTool: false},
			},
		}
		return h
	}, actor.WithSupervisor(terminalSupervisor()))
}

// terminalSupervisor keeps a Terminal whose Receive panicked: its state is what the
// clients see, so the message that failed is dropped and the actor resumes.
func terminalSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(reason interface{}) actor.Directive {
		return actor.ResumeDirective
	})
}

func (h *host) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Subscribe:
		if m.Channel == messages.RootURI {
			h.subs[m.Sub] = true
			state := h.root
			ctx.Respond(&SubscribeResult{Snapshot: &messages.Snapshot{Resource: messages.RootURI, State: state, FromSeq: h.journal.Current()}})
			return
		}
		if e := h.entries[m.Channel]; e != nil {
			ctx.Forward(e.pid)
			return
		}
		ctx.Respond(&SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", m.Channel)})
	case *Unsubscribe:
		if m.Channel == messages.RootURI {
			delete(h.subs, m.Sub)
		} else if e := h.entries[m.Channel]; e != nil {
			ctx.Forward(e.pid)
		}
	case *Dispatch:
		h.dispatch(ctx, m)
	case *CreateTerminal:
		h.create(ctx, m)
	case *DisposeTerminal:
		if e := h.entries[m.URI]; e != nil {
			delete(h.entries, m.URI)
			h.removeOrder(m.URI)
			ctx.Send(e.pid, m)
			if e.listed {
				h.publishTerminals(ctx)
			}
		}
		ctx.Respond(&DisposeResult{})
	case *terminalRow:
		e := h.entries[m.info.Resource]
		if e == nil || e.pid.Id != m.pid.Id {
			return
		}
		e.info, e.listed = m.info, true
		h.publishTerminals(ctx)
	case *ListTerminals:
		ctx.Respond(append([]string(nil), h.order...))
	case *Shutdown:
		h.shuttingDown = true
		h.shutdownWaiters = append(h.shutdownWaiters, ctx.Sender())
		for uri, e := range h.entries {
			ctx.Send(e.pid, &DisposeTerminal{URI: uri})
		}
		h.maybeShutdownDone(ctx)
	case *actor.Terminated:
		for uri, e := range h.entries {
			if e.pid.Id == m.Who.Id {
				delete(h.entries, uri)
				h.removeOrder(uri)
				if e.listed {
					h.publishTerminals(ctx)
				}
			}
		}
		h.maybeShutdownDone(ctx)
	}
}

func (h *host) maybeShutdownDone(ctx actor.Context) {
	if !h.shuttingDown || len(ctx.Children()) > 0 {
		return
	}
	for _, w := range h.shutdownWaiters {
		ctx.Send(w, &ShutdownDone{})
	}
	h.shutdownWaiters = nil
}

func (h *host) removeOrder(uri string) {
	for i, u := range h.order {
		if u == uri {
			h.order = append(h.order[:i], h.order[i+1:]...)
			return
		}
	}
}

func (h *host) create(ctx actor.Context, m *CreateTerminal) {
	if h.shuttingDown {
		ctx.Respond(&CreateResult{Err: messages.Errorf(messages.CodeInternalError, "This host is closing, so nothing new starts on it")})
		return
	}
	if m.URI == messages.RootURI {
		ctx.Respond(&CreateResult{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: %s is the root channel", m.URI)})
		return
	}
	if _, taken := h.entries[m.URI]; taken {
		ctx.Respond(&CreateResult{Err: messages.Errorf(messages.CodeAlreadyExists, "Terminal already exists: %s", m.URI)})
		return
	}
	props := newTerminalProps(h.opts, h.journal, ctx.Self(), m, h.defaultShell())
	pid, err := ctx.SpawnNamed(props, "terminal-"+sanitizeName(m.URI))
	if err != nil {
		pid = ctx.Spawn(props)
	}
	ctx.Watch(pid)
	h.entries[m.URI] = &terminalEntry{pid: pid}
	h.order = append(h.order, m.URI)
	ctx.Forward(pid)
}

// defaultShell is the root config's defaultShell where this machine can run it.
func (h *host) defaultShell() string {
	if s, _ := h.root.Config.Values[ConfigDefaultShell].(string); s != "" && isExecutable(s) {
		return s
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func (h *host) dispatch(ctx actor.Context, m *Dispatch) {
	if m.Channel != messages.RootURI {
		if e := h.entries[m.Channel]; e != nil {
			ctx.Forward(e.pid)
		}
		// A dispatch to a channel that does not exist is ignored (PROTOCOL.md 4).
		return
	}
	if m.Action.Type != messages.RootConfigChanged {
		h.reject(m, "only root/configChanged may be dispatched on the root channel")
		return
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
}

func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }

func (h *host) reject(m *Dispatch, reason string) {
	origin := m.Origin
	env := &messages.Envelope{Channel: m.Channel, Action: m.Raw, Origin: &origin, RejectionReason: reason, ServerSeq: h.journal.Next()}
	m.Sub.Deliver(m.Channel, messages.EnvelopeFrame(env))
}

func (h *host) publishTerminals(ctx actor.Context) {
	list := make([]messages.TerminalInfo, 0, len(h.order))
	for _, uri := range h.order {
		if e := h.entries[uri]; e != nil && e.listed {
			list = append(list, e.info)
		}
	}
	a := &messages.Action{Type: messages.RootTerminalsChanged, Terminals: &list}
	messages.ReduceRoot(&h.root, a)
	h.broadcast(&messages.Envelope{Channel: messages.RootURI, Action: messages.EncodeAction(a)})
}

func (h *host) broadcast(env *messages.Envelope) {
	frame := h.journal.Stamp(env)
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
