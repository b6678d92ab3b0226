package messages

import (
	"bytes"
	"encoding/json"
)

// Action types of a chat channel (PROTOCOL.md 8; actions.schema.json Chat*Action).
const (
	ChatTurnStarted             = "chat/turnStarted"
	ChatTurnComplete            = "chat/turnComplete"
	ChatTurnCancelled           = "chat/turnCancelled"
	ChatError                   = "chat/error"
	ChatResponsePart            = "chat/responsePart"
	ChatDelta                   = "chat/delta"
	ChatReasoning               = "chat/reasoning"
	ChatUsage                   = "chat/usage"
	ChatToolCallStart           = "chat/toolCallStart"
	ChatToolCallDelta           = "chat/toolCallDelta"
	ChatToolCallReady           = "chat/toolCallReady"
	ChatToolCallConfirmed       = "chat/toolCallConfirmed"
	ChatToolCallContentChanged  = "chat/toolCallContentChanged"
	ChatToolCallComplete        = "chat/toolCallComplete"
	ChatToolCallResultConfirmed = "chat/toolCallResultConfirmed"
	ChatToolCallAuthRequired    = "chat/toolCallAuthRequired"
	ChatToolCallAuthResolved    = "chat/toolCallAuthResolved"
	ChatPendingMessageSet       = "chat/pendingMessageSet"
	ChatPendingMessageRemoved   = "chat/pendingMessageRemoved"
	ChatQueuedMessagesReordered = "chat/queuedMessagesReordered"
	ChatActivityChanged         = "chat/activityChanged"
	ChatDraftChanged            = "chat/draftChanged"
	ChatWorkingDirectorySet     = "chat/workingDirectorySet"
	ChatWorkingDirectoryRemoved = "chat/workingDirectoryRemoved"
	ChatTurnsLoaded             = "chat/turnsLoaded"
)

// Pending message kinds (chat/pendingMessageSet and chat/pendingMessageRemoved).
const (
	PendingSteering = "steering"
	PendingQueued   = "queued"
)

// ChatAction is an action of a chat channel the host builds. Each is a struct named
// after its schema definition; it writes its own `type`, so the type cannot be wrong
// or missing.
type ChatAction interface {
	json.Marshaler
	// ChatActionType is the action's type, one of the Chat* constants.
	ChatActionType() string
}

// ConfirmedNotNeeded is the ToolCallConfirmationReason of a call that needs no
// confirmation (a command the user typed).
const ConfirmedNotNeeded = "not-needed"

// ContentTerminal is the type of a tool result's terminal block.
const ContentTerminal = "terminal"

// Message is a chat message (state.schema.json Message) as decoded JSON. A client's
// message may carry attachments, a model, an agent or a provider's _meta the host
// does not model; a turn started from a queued message carries it whole, so it is
// kept as the object the client sent rather than a struct that would drop them.
type Message map[string]any

// Message origins (state.schema.json MessageOrigin's kind): who a message is from.
const (
	OriginUser = "user"
	// OriginSystemNotification is the host telling the chat something happened (a
	// background command ended, a monitor fired): no person typed it.
	OriginSystemNotification = "systemNotification"
)

// UserMessage is a message a user typed.
func UserMessage(text string) Message {
	return Message{"text": text, "origin": map[string]any{"kind": OriginUser}}
}

// SystemNotificationMessage is a message from the host itself, with its _meta when
// meta is not empty.
func SystemNotificationMessage(text string, meta map[string]any) Message {
	m := Message{"text": text, "origin": map[string]any{"kind": OriginSystemNotification}}
	if len(meta) > 0 {
		m["_meta"] = meta
	}
	return m
}

// Text is the message's text, or "" when it has none.
func (m Message) Text() string { return asString(m["text"]) }

// OriginKind is the kind of the message's origin, or "" when it has none.
func (m Message) OriginKind() string { return object(m).obj("origin").str("kind") }

// ErrorInfo says what went wrong (state.schema.json ErrorInfo).
type ErrorInfo struct {
	ErrorType string `json:"errorType"`
	Message   string `json:"message"`
	Stack     string `json:"stack,omitempty"`
}

// TerminalCommandResult is how a terminal block's command ended: its exit code when
// it exited, and the tail of what it printed.
type TerminalCommandResult struct {
	ExitCode  *int   `json:"exitCode,omitempty"`
	Preview   string `json:"preview"`
	Truncated bool   `json:"truncated"`
}

// TerminalContent is a tool result's terminal block (ToolResultTerminalContent): the
// terminal a client subscribes to for the call's output. Its `type` is written for it.
type TerminalContent struct {
	Resource string                 `json:"resource"`
	Title    string                 `json:"title"`
	IsPty    bool                   `json:"isPty"`
	Result   *TerminalCommandResult `json:"result,omitempty"`
}

// MarshalJSON writes the block with its type.
func (c TerminalContent) MarshalJSON() ([]byte, error) {
	type fields TerminalContent
	return withMember("type", ContentTerminal, fields(c))
}

// ToolCallError is a failed tool call's error.
type ToolCallError struct {
	Message string `json:"message"`
}

// ToolCallResult is what a finished tool call produced (state.schema.json
// ToolCallResult). The host's calls are terminal commands, so their content is
// terminal blocks.
type ToolCallResult struct {
	Success          bool              `json:"success"`
	PastTenseMessage string            `json:"pastTenseMessage"`
	Content          []TerminalContent `json:"content,omitempty"`
	Error            *ToolCallError    `json:"error,omitempty"`
}

// ChatTurnStartedAction starts a turn with a message; from a pending message, it
// names it and consumes it.
type ChatTurnStartedAction struct {
	TurnID          string  `json:"turnId"`
	StartedAt       string  `json:"startedAt"`
	Message         Message `json:"message"`
	QueuedMessageID string  `json:"queuedMessageId,omitempty"`
}

// ChatTurnCompleteAction ends the active turn; Duration is in milliseconds.
type ChatTurnCompleteAction struct {
	TurnID   string `json:"turnId"`
	Duration int64  `json:"duration"`
}

// ChatTurnCancelledAction ends the active turn as cancelled (a client's).
type ChatTurnCancelledAction struct {
	TurnID   string `json:"turnId"`
	Duration int64  `json:"duration"`
}

// ChatErrorAction ends the active turn with an error. It carries the error twice,
// as the 1.x `part: {kind:'error', error}` and as the <=0.8 `error`, so clients of
// either version read it.
type ChatErrorAction struct {
	TurnID   string
	Duration int64
	Error    ErrorInfo
}

// MarshalJSON writes both shapes of the error.
func (a ChatErrorAction) MarshalJSON() ([]byte, error) {
	type errorPart struct {
		Kind  string    `json:"kind"`
		Error ErrorInfo `json:"error"`
	}
	return withMember("type", ChatError, struct {
		TurnID   string    `json:"turnId"`
		Duration int64     `json:"duration"`
		Part     errorPart `json:"part"`
		Error    ErrorInfo `json:"error"`
	}{a.TurnID, a.Duration, errorPart{"error", a.Error}, a.Error})
}

// ChatToolCallStartAction opens a tool call in the active turn (it streams).
type ChatToolCallStartAction struct {
	TurnID      string `json:"turnId"`
	ToolCallID  string `json:"toolCallId"`
	ToolName    string `json:"toolName"`
	DisplayName string `json:"displayName"`
	Intention   string `json:"intention,omitempty"`
}

// ChatToolCallReadyAction says what a tool call will do; with Confirmed it runs,
// without it it waits for a confirmation.
type ChatToolCallReadyAction struct {
	TurnID            string `json:"turnId"`
	ToolCallID        string `json:"toolCallId"`
	InvocationMessage string `json:"invocationMessage"`
	ToolInput         string `json:"toolInput,omitempty"`
	Intention         string `json:"intention,omitempty"`
	Confirmed         string `json:"confirmed,omitempty"`
}

// ChatToolCallContentChangedAction replaces a running call's content: how a command
// publishes its terminal while it runs.
type ChatToolCallContentChangedAction struct {
	TurnID     string            `json:"turnId"`
	ToolCallID string            `json:"toolCallId"`
	Content    []TerminalContent `json:"content"`
}

// ChatToolCallCompleteAction finishes a call with its result.
type ChatToolCallCompleteAction struct {
	TurnID     string         `json:"turnId"`
	ToolCallID string         `json:"toolCallId"`
	Result     ToolCallResult `json:"result"`
}

// ChatPendingMessageSetAction queues a message, or sets the steering message (a
// client's).
type ChatPendingMessageSetAction struct {
	Kind    string  `json:"kind"`
	ID      string  `json:"id"`
	Message Message `json:"message"`
}

// ChatPendingMessageRemovedAction takes a pending message away.
type ChatPendingMessageRemovedAction struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// The chat actions write their type.

func (a ChatTurnStartedAction) MarshalJSON() ([]byte, error) {
	type fields ChatTurnStartedAction
	return withMember("type", ChatTurnStarted, fields(a))
}

func (a ChatTurnCompleteAction) MarshalJSON() ([]byte, error) {
	type fields ChatTurnCompleteAction
	return withMember("type", ChatTurnComplete, fields(a))
}

func (a ChatTurnCancelledAction) MarshalJSON() ([]byte, error) {
	type fields ChatTurnCancelledAction
	return withMember("type", ChatTurnCancelled, fields(a))
}

func (a ChatToolCallStartAction) MarshalJSON() ([]byte, error) {
	type fields ChatToolCallStartAction
	return withMember("type", ChatToolCallStart, fields(a))
}

func (a ChatToolCallReadyAction) MarshalJSON() ([]byte, error) {
	type fields ChatToolCallReadyAction
	return withMember("type", ChatToolCallReady, fields(a))
}

func (a ChatToolCallContentChangedAction) MarshalJSON() ([]byte, error) {
	type fields ChatToolCallContentChangedAction
	return withMember("type", ChatToolCallContentChanged, fields(a))
}

func (a ChatToolCallCompleteAction) MarshalJSON() ([]byte, error) {
	type fields ChatToolCallCompleteAction
	return withMember("type", ChatToolCallComplete, fields(a))
}

func (a ChatPendingMessageSetAction) MarshalJSON() ([]byte, error) {
	type fields ChatPendingMessageSetAction
	return withMember("type", ChatPendingMessageSet, fields(a))
}

func (a ChatPendingMessageRemovedAction) MarshalJSON() ([]byte, error) {
	type fields ChatPendingMessageRemovedAction
	return withMember("type", ChatPendingMessageRemoved, fields(a))
}

func (ChatTurnStartedAction) ChatActionType() string            { return ChatTurnStarted }
func (ChatTurnCompleteAction) ChatActionType() string           { return ChatTurnComplete }
func (ChatTurnCancelledAction) ChatActionType() string          { return ChatTurnCancelled }
func (ChatErrorAction) ChatActionType() string                  { return ChatError }
func (ChatToolCallStartAction) ChatActionType() string          { return ChatToolCallStart }
func (ChatToolCallReadyAction) ChatActionType() string          { return ChatToolCallReady }
func (ChatToolCallContentChangedAction) ChatActionType() string { return ChatToolCallContentChanged }
func (ChatToolCallCompleteAction) ChatActionType() string       { return ChatToolCallComplete }
func (ChatPendingMessageSetAction) ChatActionType() string      { return ChatPendingMessageSet }
func (ChatPendingMessageRemovedAction) ChatActionType() string  { return ChatPendingMessageRemoved }

// ChatTurnsLoadedAction puts older completed turns, oldest first, ahead of those a
// chat's state holds: what a fetchTurns asked for, or what a subscribe needed.
// TurnsNextCursor is the cursor of the page before these; "" when none is left.
type ChatTurnsLoadedAction struct {
	Turns           []Turn `json:"turns"`
	TurnsNextCursor string `json:"turnsNextCursor,omitempty"`
}

func (a ChatTurnsLoadedAction) MarshalJSON() ([]byte, error) {
	type fields ChatTurnsLoadedAction
	if a.Turns == nil {
		a.Turns = []Turn{}
	}
	return withMember("type", ChatTurnsLoaded, fields(a))
}

func (ChatTurnsLoadedAction) ChatActionType() string { return ChatTurnsLoaded }

// Turn is a finished turn whose response is one tool call (state.schema.json Turn),
// as the host rebuilds a `!` command's turn from what it kept.
type Turn struct {
	ID        string            `json:"id"`
	StartedAt string            `json:"startedAt"`
	Duration  int64             `json:"duration"`
	Message   Message           `json:"message"`
	ToolCall  CompletedToolCall `json:"-"`
	State     string            `json:"state"`
}

// MarshalJSON writes the tool call as the turn's one response part.
func (t Turn) MarshalJSON() ([]byte, error) {
	type fields Turn
	type part struct {
		Kind     string            `json:"kind"`
		ToolCall CompletedToolCall `json:"toolCall"`
	}
	return json.Marshal(struct {
		fields
		ResponseParts []part `json:"responseParts"`
	}{fields(t), []part{{"toolCall", t.ToolCall}}})
}

// CompletedToolCall is a tool call in the completed state (ToolCallCompletedState):
// what it was asked, and its result spread over it.
type CompletedToolCall struct {
	ToolCallID        string `json:"toolCallId"`
	ToolName          string `json:"toolName"`
	DisplayName       string `json:"displayName"`
	Intention         string `json:"intention"`
	InvocationMessage string `json:"invocationMessage"`
	ToolInput         string `json:"toolInput"`
	Confirmed         string `json:"confirmed"`
	ToolCallResult
}

// MarshalJSON writes the call with its status.
func (c CompletedToolCall) MarshalJSON() ([]byte, error) {
	type fields CompletedToolCall
	return withMember("status", callCompleted, fields(c))
}

// withMember encodes fields, a struct, as a JSON object with one more string member
// in front: how a value whose kind is fixed by its Go type (an action's type, a
// block's type, a tool call's status) writes it without a field a caller could get
// wrong.
func withMember(name, value string, fields any) ([]byte, error) {
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	key, _ := json.Marshal(name)
	val, _ := json.Marshal(value)
	var b bytes.Buffer
	b.Grow(len(key) + len(val) + len(body) + 2)
	b.WriteByte('{')
	b.Write(key)
	b.WriteByte(':')
	b.Write(val)
	if len(body) > 2 { // body is "{...}": more members follow
		b.WriteByte(',')
	}
	b.Write(body[1:])
	return b.Bytes(), nil
}
