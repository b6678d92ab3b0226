package messages

import "encoding/json"

// Action types of the terminal channel (PROTOCOL.md 5.2) and the root channel.
const (
	TerminalData                      = "terminal/data"
	TerminalInput                     = "terminal/input"
	TerminalResized                   = "terminal/resized"
	TerminalClaimed                   = "terminal/claimed"
	TerminalTitleChanged              = "terminal/titleChanged"
	TerminalCwdChanged                = "terminal/cwdChanged"
	TerminalExited                    = "terminal/exited"
	TerminalCleared                   = "terminal/cleared"
	TerminalCommandDetectionAvailable = "terminal/commandDetectionAvailable"
	TerminalCommandExecuted           = "terminal/commandExecuted"
	TerminalCommandFinished           = "terminal/commandFinished"

	RootTerminalsChanged = "root/terminalsChanged"
	RootConfigChanged    = "root/configChanged"
)

// IsTerminalAction reports whether actionType is one of the protocol's terminal
// actions, whoever sends it.
func IsTerminalAction(actionType string) bool {
	switch actionType {
	case TerminalData, TerminalInput, TerminalResized, TerminalClaimed, TerminalTitleChanged, TerminalCwdChanged,
		TerminalExited, TerminalCleared, TerminalCommandDetectionAvailable, TerminalCommandExecuted, TerminalCommandFinished:
		return true
	}
	return false
}

// ClientDispatchable reports whether a client may dispatch an action of this type on
// a terminal channel; the rest are the server's alone.
func ClientDispatchable(actionType string) bool {
	switch actionType {
	case TerminalInput, TerminalResized, TerminalClaimed, TerminalTitleChanged, TerminalCleared:
		return true
	}
	return false
}

// Action is one state action of the terminal or root channel, with every payload
// field of those channels flattened into one struct. Pointers tell an absent field
// from a zero one where the protocol does.
type Action struct {
	Type string `json:"type"`

	Data        *string `json:"data,omitempty"`
	Cols        *int    `json:"cols,omitempty"`
	Rows        *int    `json:"rows,omitempty"`
	Claim       *Claim  `json:"claim,omitempty"`
	Title       *string `json:"title,omitempty"`
	Cwd         *string `json:"cwd,omitempty"`
	ExitCode    *int    `json:"exitCode,omitempty"`
	CommandID   string  `json:"commandId,omitempty"`
	CommandLine *string `json:"commandLine,omitempty"`
	Timestamp   *int64  `json:"timestamp,omitempty"`
	DurationMs  *int64  `json:"durationMs,omitempty"`

	Terminals *[]TerminalInfo `json:"terminals,omitempty"`
	Config    map[string]any  `json:"config,omitempty"`
	Replace   *bool           `json:"replace,omitempty"`

	Meta map[string]any `json:"_meta,omitempty"`
}

// Origin names the client dispatch an envelope echoes.
type Origin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// Envelope is an action as the host sends it (the params of an `action` notification).
// Action is the encoded action: the host's own, or a client's as it was dispatched.
type Envelope struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       uint64          `json:"serverSeq"`
	Origin          *Origin         `json:"origin,omitempty"`
	RejectionReason string          `json:"rejectionReason,omitempty"`
}

// Helpers for building actions.

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }
