package server_test

import (
	"strings"
	"testing"
)

// Keystrokes go to the terminal a connection subscribed to, and after that terminal
// is disposed and another is made under the same URI, to the new one: a connection
// never types into a terminal that is gone.
func TestTypingFollowsATerminalRecreatedUnderTheSameURI(t *testing.T) {
	h := startHost(t)
	c := h.dial("c")
	uri := "ahp-terminal:/again"
	c.createTerminal(uri, nil)
	c.input(uri, "echo first-$((6*7))\r")
	c.waitOutput(uri, "first-42")

	c.mustRequest("disposeTerminal", map[string]any{"channel": uri})
	// Typed into the gone terminal: ignored, and the connection goes on.
	c.input(uri, "echo lost\r")

	c.seen = nil
	c.createTerminal(uri, nil)
	c.input(uri, "echo second-$((6*7))\r")
	out := c.waitOutput(uri, "second-42")
	if strings.Contains(out, "lost") {
		t.Fatalf("the new terminal got input typed into the old one: %q", out)
	}
}
