package auth

import (
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestActionGrant(t *testing.T) {
	for typ, want := range map[string]string{
		messages.TerminalInput:        GrantTerminalInput,
		messages.TerminalResized:      GrantTerminalResize,
		messages.TerminalClaimed:      GrantTerminalClaim,
		messages.TerminalTitleChanged: GrantTerminalRename,
		messages.TerminalCleared:      GrantTerminalClear,
		messages.RootConfigChanged:    GrantConfigChange,
		"chat/turnStarted":            GrantChatSend,
		"session/titleChanged":        GrantChatSend,
		messages.TerminalData:         "", // not the client's to dispatch: refused elsewhere, not by a grant
	} {
		if got := ActionGrant(typ); got != want {
			t.Errorf("ActionGrant(%q) = %q, want %q", typ, got, want)
		}
	}
}

func TestReadGrant(t *testing.T) {
	for ch, want := range map[string]string{
		"ahp-terminal:/work":   GrantTerminalOutput,
		"ahp-session:/s1":      GrantChatSend,
		"ahp-chat:/s1/c1":      GrantChatSend,
		"ahp-terminal:/cmd-1x": GrantTerminalOutput,
	} {
		if got := ReadGrant(ch); got != want {
			t.Errorf("ReadGrant(%q) = %q, want %q", ch, got, want)
		}
	}
}
