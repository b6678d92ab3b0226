package session

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session/shellpool"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/persistence"
)

// Config is what every session of a host shares. The zero value of each field means
// the default its comment names.
type Config struct {
	// Journal stamps every envelope a session or chat sends; required.
	Journal *delivery.Journal
	// Store keeps sessions, their local turns and retained terminals; nil keeps
	// nothing.
	Store *persistence.Store
	// DefaultShell runs `!` commands: $SHELL, else /bin/sh, when empty.
	DefaultShell string
	// CommandTimeout ends a `!` command still running after it. Default 2 minutes.
	CommandTimeout time.Duration
	// PresenceGrace is how long an active client whose connections all went keeps
	// its place among a session's active clients, for it to come back with
	// reconnect. Default 30 s.
	PresenceGrace time.Duration
	// Logger gets what goes wrong that no client is waiting to hear (a write that
	// failed); nil discards it.
	Logger *slog.Logger
	// ToolService makes the props of a session's agent shell service, spawned as a
	// child of the session on the first ToolServiceQuery and stopped with it. Nil:
	// the host runs none, and the query is answered with no PID.
	ToolService func(ToolServiceSpec) *actor.Props
	// Agents are the names of the agents this host runs (Create.Agent names one).
	// A restored session whose agent is no longer among them has no agent: its
	// turns end saying so.
	Agents []string
	// Agent makes the props of a session's agent runner, spawned as a child of a
	// session made with an agent when it starts, and stopped with it (agent.go). Nil:
	// no session has an agent.
	Agent func(agentmsg.Spec) *actor.Props
	// AgentCancelGrace is how long a client's cancel of an agent's turn waits for
	// the agent to end it (agentmsg.TurnEnded) before the session ends it as cancelled
	// itself. Default 10 s.
	AgentCancelGrace time.Duration
	// Prestart starts a spare shell for a session's next `!` command
	// (terminal.Prestart with the host's terminal config); it forks, and is called
	// off the mailbox. Nil: no spares, every command's shell starts with its turn.
	Prestart func(*terminal.Create) (*terminal.Spare, error)
	// LiveShells is how many shells of a session's `!` commands that ended at their
	// prompt, and that nobody has used since, stay live; an older one is ended, its
	// call's terminal then served from what was kept (retire.go). Default 4.
	LiveShells int
	// Spares is how many spare shells a session that runs `!` commands keeps
	// started ahead (spare.go). Default 2.
	Spares int
	// SpareBudget bounds the spares all the host's sessions hold together
	// (shellpool.Budget); it is shared by them. Nil: each session keeps its
	// Spares whatever the others hold.
	SpareBudget *shellpool.Budget
	// ShellIdle is how long a session's spare shell and its commands' unused shells
	// live once no command comes. Default 10 minutes.
	ShellIdle time.Duration
}

func (c Config) withDefaults() Config {
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = 2 * time.Minute
	}
	if c.PresenceGrace <= 0 {
		c.PresenceGrace = 30 * time.Second
	}
	if c.AgentCancelGrace <= 0 {
		c.AgentCancelGrace = 10 * time.Second
	}
	if c.LiveShells <= 0 {
		c.LiveShells = 4
	}
	if c.Spares <= 0 {
		c.Spares = 2
	}
	if c.ShellIdle <= 0 {
		c.ShellIdle = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
