package server_test

import (
	"testing"
	"time"

	"github.com/termhost/termhost/server"
)

// TestSilentCommandIsListedAtOnce: a one-command terminal has no prompt to wait for,
// so its create is answered as soon as the command runs, even under a pseudoterminal
// and when the command prints nothing. The wait for a first output is made an hour
// here: a terminal listed only by it would never answer in time.
func TestSilentCommandIsListedAtOnce(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t, func(c *server.Config) { c.Root.ListTimeout = time.Hour })
		c := h.dial("silent")
		uri := "ahp-terminal:/silent"
		c.mustRequest("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "silent"},
			"_meta": map[string]any{"x-termhost": map[string]any{"command": "sleep", "args": []string{"30"}}}})
		c.mustRequest("disposeTerminal", map[string]any{"channel": uri})
	})
}
