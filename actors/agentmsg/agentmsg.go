// Package agentmsg is the contract between a session (actors/session) and the agent
// runner behind it (actors/agents): the spec a runner is made with and the messages
// the two send each other. Neither side imports the other.
package agentmsg

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/termhost/termhost/actors/backendterm"
)

// The contract between a session and the agent that runs behind it (an ACP agent
// process, actors/agents). The session owns the chat: turns, their queue, the tool
// calls a client sees and confirms. The agent runner owns the process and speaks its
// protocol, and turns what the agent streams into chat actions for the session to
// apply. Every message below between the two is fire-and-forget, in order; a runner's
// messages go to its parent, the session.

// Spec is what a session's agent runner is made for.
type Spec struct {
	// Session is the session's URI; Agent the name of the agent chosen for it (one
	// of the host's configured agents).
	Session string
	Agent   string
	// AgentSessionID is the agent's own id for this conversation from an earlier run
	// (kept in the session record), for a runner to resume it with session/load; ""
	// for a new conversation.
	AgentSessionID string
	// WorkingDirectories are the session's (file URIs or paths); the agent runs in
	// the first, and may read and write files only below them.
	WorkingDirectories []string
	// Root is the root actor: where the agent's terminals are made.
	Root *actor.PID
	// Terminals is the host's backend-terminal seam, over which the agent's
	// terminal/* requests are served (every command the agent runs is a host terminal).
	Terminals *backendterm.Terminals
	// Writes is the session's group of disk writes on their way (see ToolServiceSpec).
	Writes *sync.WaitGroup
}

// Session → runner.

// Prompt asks the agent to take a turn of a chat (ACP session/prompt).
type Prompt struct {
	Chat, TurnID string
	Text         string
	// By is the signed-in person whose turn it is ("" when unknown).
	By string
}

// Cancel asks the agent to stop the turn (ACP session/cancel). The turn still
// ends with an TurnEnded.
type Cancel struct{ Chat, TurnID string }

// Runner → session.

// Actions are chat actions of a running turn, to be applied to the chat in
// order: typed actions of package messages (ChatResponsePartAction, ChatDeltaAction,
// ChatReasoningAction, ChatToolCallStartAction, ChatToolCallReadyAction,
// ChatToolCallContentChangedAction, ChatToolCallCompleteAction, …), each naming the
// turn.
type Actions struct {
	Chat, TurnID string
	Actions      []any
}

// Permission asks the people in the chat to allow a tool call (ACP
// session/request_permission). The session shows the call awaiting confirmation
// (chat/toolCallReady without confirmed, with the options) and, when a client with
// the grant confirms or refuses it (chat/toolCallConfirmed), or the turn ends, sends
// the chosen option's id on Reply ("" for refused or cancelled) exactly once.
type Permission struct {
	Chat, TurnID string
	ToolCallID   string
	Title        string
	// Options are the agent's choices: id, name, kind (allow_once, allow_always,
	// reject_once, reject_always).
	Options []PermissionOption
	Reply   chan<- string
}

// PermissionOption is one choice an agent offers for a permission.
type PermissionOption struct {
	ID, Name, Kind string
}

// TurnEnded says the agent's turn ended (session/prompt answered): StopReason is
// ACP's (end_turn, max_tokens, max_turn_requests, refusal, cancelled), Err a failure
// (the agent crashed or answered an error) to show as the turn's error.
type TurnEnded struct {
	Chat, TurnID string
	StopReason   string
	Err          string
}

// Started says the agent is running a conversation, with its id for it; the
// session keeps it to resume after a restart.
type Started struct {
	AgentSessionID string
}

// Lost says the agent process ended and could not be brought back with the
// conversation; Reason says why, for the chat.
type Lost struct {
	Reason string
}

// Restarted says the agent process crashed and was started again, resuming the
// conversation; Reason says what happened, for the chat.
type Restarted struct {
	Reason string
}
