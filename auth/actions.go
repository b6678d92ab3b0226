package auth

import (
	"strings"

	"github.com/termhost/termhost/messages"
)

// ActionGrant is the grant a client-dispatchable action of this type needs ("" for
// none). A connection checks it before it dispatches; a cluster node that acts for
// another node's client checks it again.
func ActionGrant(actionType string) string {
	switch actionType {
	case messages.TerminalInput:
		return GrantTerminalInput
	case messages.TerminalResized:
		return GrantTerminalResize
	case messages.TerminalClaimed:
		return GrantTerminalClaim
	case messages.TerminalTitleChanged:
		return GrantTerminalRename
	case messages.TerminalCleared:
		return GrantTerminalClear
	case messages.RootConfigChanged:
		return GrantConfigChange
	}
	if strings.HasPrefix(actionType, "chat/") || strings.HasPrefix(actionType, "session/") {
		return GrantChatSend
	}
	return ""
}

// ReadGrant is the grant reading a channel needs: a session or chat is read by
// whoever may take part in it, anything else is a terminal's output.
func ReadGrant(channel string) string {
	if strings.HasPrefix(channel, "ahp-session:") || strings.HasPrefix(channel, "ahp-chat:") {
		return GrantChatSend
	}
	return GrantTerminalOutput
}
