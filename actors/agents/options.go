package agents

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/termhost/termhost/actors/agentmsg"
)

// Options are what every session's runner shares. Zero values mean the defaults
// named.
type Options struct {
	// Agents are the host's configured agents: name → argv (program and arguments).
	Agents map[string][]string
	// MCP, when set, gives the MCP server a session's agent is offered in
	// session/new's mcpServers (ok false: none): the URL of the host's /mcp for that
	// session and the headers to send (a token). It is offered only to an agent that
	// says it takes MCP over HTTP (agentCapabilities.mcpCapabilities.http).
	MCP func(session string) (url string, headers map[string]string, ok bool)
	// RestartLimit bounds restarts after crashes within RestartWindow (defaults 3
	// in 1 minute): the crash past the limit leaves the agent lost.
	RestartLimit  int
	RestartWindow time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL when the runner stops the
	// agent's process group. Default 2 s.
	KillGrace time.Duration
	// Logger gets the agent's stderr (debug) and what goes wrong that no chat is
	// told; nil discards it.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.RestartLimit <= 0 {
		o.RestartLimit = 3
	}
	if o.RestartWindow <= 0 {
		o.RestartWindow = time.Minute
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// NewProps is the factory a session spawns its runner with (session.Config.Agent).
func NewProps(o Options) func(agentmsg.Spec) *actor.Props {
	o = o.withDefaults()
	return func(spec agentmsg.Spec) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor { return newRunner(o, spec) })
	}
}
