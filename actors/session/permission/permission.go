// Package permission owns how an agent's question (ACP's session/request_permission)
// is shown in a chat and how a person's answer maps back onto the agent's choices:
// the chat/toolCallReady that puts the question to the chat's clients, and the
// option a chat/toolCallConfirmed answers the agent with. It holds no state; the
// session keeps each question waiting and answers it once.
package permission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/messages"
)

// The tool call a question is shown as, when the agent asks about a call it has not
// shown.
const (
	ToolName    = "permission"
	DisplayName = "Permission"
)

// defaultTitle is what the question says when the agent gave it no title.
const defaultTitle = "The agent asks to go on"

// Ready is the chat/toolCallReady that shows an agent's question: no `confirmed`, so
// the call awaits a confirmation, with the agent's choices as ConfirmationOptions
// (kind approve or deny; allowing ones in group 0, refusing ones in group 1).
type Ready struct {
	TurnID, ToolCallID, Title string
	ToolInput                 any
	Options                   []agentmsg.PermissionOption
}

type confirmationOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Group int    `json:"group"`
}

// ChatActionType makes Ready a chat action the session can apply and publish.
func (Ready) ChatActionType() string { return messages.ChatToolCallReady }

// MarshalJSON writes the action as the protocol's chat/toolCallReady.
func (a Ready) MarshalJSON() ([]byte, error) {
	options := make([]confirmationOption, len(a.Options))
	for i, o := range a.Options {
		options[i] = confirmationOption{ID: o.ID, Label: o.Name, Kind: "approve"}
		if !Allows(o.Kind) {
			options[i].Kind, options[i].Group = "deny", 1
		}
		if options[i].Label == "" {
			options[i].Label = o.ID
		}
	}
	title := a.Title
	if title == "" {
		title = defaultTitle
	}
	return json.Marshal(struct {
		Type              string               `json:"type"`
		TurnID            string               `json:"turnId"`
		ToolCallID        string               `json:"toolCallId"`
		InvocationMessage string               `json:"invocationMessage"`
		ConfirmationTitle string               `json:"confirmationTitle"`
		ToolInput         any                  `json:"toolInput,omitempty"`
		Options           []confirmationOption `json:"options"`
	}{messages.ChatToolCallReady, a.TurnID, a.ToolCallID, title, title, a.ToolInput, options})
}

// Allows reports whether an ACP permission option kind allows the call (allow_once,
// allow_always) rather than refusing it (reject_once, reject_always).
func Allows(kind string) bool { return !strings.HasPrefix(kind, "reject") }

// Choose is the option id a confirmation answers the agent with: the option the
// client chose (selected); else for an approval the agent's first allowing option,
// and for a refusal its reject_once option, else its first refusing one, else "".
// A refusal is answered with the agent's own refusing option where it offers one,
// because ACP's other answer, the cancelled outcome (""), says the whole turn was
// cancelled (session/request_permission: a client that cancels the turn MUST answer
// pending permissions with it), which a refused tool call is not. A choice that
// contradicts approved, or names no option of the agent's, is refused with the reason.
func Choose(options []agentmsg.PermissionOption, approved bool, selected string) (id, refusal string) {
	if selected != "" {
		i := slices.IndexFunc(options, func(o agentmsg.PermissionOption) bool { return o.ID == selected })
		switch {
		case i < 0:
			return "", fmt.Sprintf("the agent offered no option %q", selected)
		case Allows(options[i].Kind) != approved && approved:
			return "", fmt.Sprintf("option %q refuses the call: send it with approved false", selected)
		case Allows(options[i].Kind) != approved:
			return "", fmt.Sprintf("option %q allows the call: send it with approved true", selected)
		}
		return selected, ""
	}
	if !approved {
		id := ""
		for _, o := range options {
			if o.Kind == "reject_once" {
				return o.ID, ""
			}
			if id == "" && !Allows(o.Kind) {
				id = o.ID
			}
		}
		return id, ""
	}
	for _, o := range options {
		if Allows(o.Kind) {
			return o.ID, ""
		}
	}
	return "", "the agent offered no option that allows the call"
}
