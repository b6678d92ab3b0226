package server_test

import (
	"strings"
	"testing"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// TestStopBackgroundWorkOverTheWire asks vscode/stopBackgroundWork what a client may
// get wrong: work that is not there, a chat that is not there (named as channel, the
// synonym), params missing, and a person without terminal:input.
func TestStopBackgroundWorkOverTheWire(t *testing.T) {
	h := startHost(t)
	c := h.dial("bg-owner")
	chat := c.openSession("ahp-session:/bg", t.TempDir())

	_, err := c.request("vscode/stopBackgroundWork", map[string]any{"chat": chat, "id": "bg-nope", "x-vscode": map[string]any{"reason": "user"}})
	if e := rpcError(t, err, messages.CodeNotFound); !strings.Contains(e.Message, `"bg-nope"`) || !strings.Contains(e.Message, chat) {
		t.Errorf("an unknown id: %q", e.Message)
	}
	_, err = c.request("vscode/stopBackgroundWork", map[string]any{"channel": "ahp-session:/nope/chat", "id": "bg-1"})
	if e := rpcError(t, err, messages.CodeNotFound); e.Message != "No chat ahp-session:/nope/chat on this host" {
		t.Errorf("an unknown chat: %q", e.Message)
	}
	_, err = c.request("vscode/stopBackgroundWork", map[string]any{"chat": chat})
	rpcError(t, err, messages.CodeInvalidParams)
	_, err = c.request("vscode/stopBackgroundWork", map[string]any{"chat": chat, "channel": "ahp-session:/other/chat", "id": "bg-1"})
	rpcError(t, err, messages.CodeInvalidParams)

	// Stopping work is typing ^C at its terminal: a guest may not.
	guest, _ := h.dialAs(t, h.addUser("gus", auth.RoleGuest), "bg-guest")
	_, err = guest.request("vscode/stopBackgroundWork", map[string]any{"chat": chat, "id": "bg-nope"})
	if e := rpcError(t, err, messages.CodePermissionDenied); e.Message != refusalFor("gus", auth.GrantTerminalInput) {
		t.Errorf("the guest's refusal: %q", e.Message)
	}
}
