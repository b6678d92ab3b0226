package agents

import (
	"encoding/json"

	"github.com/termhost/termhost/messages"
)

// Chat actions the runner builds that package messages has no typed value for yet
// (PROTOCOL.md 8; actions.schema.json ChatResponsePartAction, ChatDeltaAction,
// ChatReasoningAction, and the tool-call actions with ToolResultContent other than a
// terminal block). Each is a messages.ChatAction: it writes its own `type`, and the
// session applies it with the same reducer as every other.
//
// The tool-call actions whose content is only terminal blocks are the typed values
// of package messages (ChatToolCallContentChangedAction, ChatToolCallCompleteAction);
// these local ones carry text blocks too.

// Response part kinds (state.schema.json MarkdownResponsePart, ReasoningResponsePart).
const (
	partMarkdown  = "markdown"
	partReasoning = "reasoning"
)

// textPart is a markdown or reasoning response part: chat/delta and chat/reasoning
// append to it by its id.
type textPart struct {
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Content string `json:"content"`
}

// responsePartAction appends a part to the active turn's response (chat/responsePart).
type responsePartAction struct {
	TurnID string   `json:"turnId"`
	Part   textPart `json:"part"`
}

// deltaAction appends text to a markdown part (chat/delta).
type deltaAction struct {
	TurnID  string `json:"turnId"`
	PartID  string `json:"partId"`
	Content string `json:"content"`
}

// reasoningAction appends text to a reasoning part (chat/reasoning).
type reasoningAction struct {
	TurnID  string `json:"turnId"`
	PartID  string `json:"partId"`
	Content string `json:"content"`
}

// textContent is a tool result's text block (ToolResultTextContent).
type textContent struct {
	Text string
}

// toolCallContentChangedAction replaces a running call's content
// (chat/toolCallContentChanged) with blocks of any kind.
type toolCallContentChangedAction struct {
	TurnID     string `json:"turnId"`
	ToolCallID string `json:"toolCallId"`
	Content    []any  `json:"content"`
}

// toolCallResult is messages.ToolCallResult with blocks of any kind.
type toolCallResult struct {
	Success          bool                    `json:"success"`
	PastTenseMessage string                  `json:"pastTenseMessage"`
	Content          []any                   `json:"content,omitempty"`
	Error            *messages.ToolCallError `json:"error,omitempty"`
}

// toolCallCompleteAction finishes a call (chat/toolCallComplete) with blocks of any
// kind.
type toolCallCompleteAction struct {
	TurnID     string         `json:"turnId"`
	ToolCallID string         `json:"toolCallId"`
	Result     toolCallResult `json:"result"`
}

// flatten encodes fields, a struct, as a JSON object with a `type` member in front.
func flatten(typ string, fields any) ([]byte, error) {
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(typ)
	out := make([]byte, 0, len(body)+len(head)+9)
	out = append(out, `{"type":`...)
	out = append(out, head...)
	if len(body) > 2 { // body is "{...}": more members follow
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

func (a responsePartAction) MarshalJSON() ([]byte, error) {
	type fields responsePartAction
	return flatten(messages.ChatResponsePart, fields(a))
}

func (a deltaAction) MarshalJSON() ([]byte, error) {
	type fields deltaAction
	return flatten(messages.ChatDelta, fields(a))
}

func (a reasoningAction) MarshalJSON() ([]byte, error) {
	type fields reasoningAction
	return flatten(messages.ChatReasoning, fields(a))
}

func (a toolCallContentChangedAction) MarshalJSON() ([]byte, error) {
	type fields toolCallContentChangedAction
	return flatten(messages.ChatToolCallContentChanged, fields(a))
}

func (a toolCallCompleteAction) MarshalJSON() ([]byte, error) {
	type fields toolCallCompleteAction
	return flatten(messages.ChatToolCallComplete, fields(a))
}

func (c textContent) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", c.Text})
}

func (responsePartAction) ChatActionType() string { return messages.ChatResponsePart }
func (deltaAction) ChatActionType() string        { return messages.ChatDelta }
func (reasoningAction) ChatActionType() string    { return messages.ChatReasoning }
func (toolCallContentChangedAction) ChatActionType() string {
	return messages.ChatToolCallContentChanged
}
func (toolCallCompleteAction) ChatActionType() string { return messages.ChatToolCallComplete }

var (
	_ messages.ChatAction = responsePartAction{}
	_ messages.ChatAction = deltaAction{}
	_ messages.ChatAction = reasoningAction{}
	_ messages.ChatAction = toolCallContentChangedAction{}
	_ messages.ChatAction = toolCallCompleteAction{}
)
