package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// A shell that cannot be started answers createTerminal with an error naming the
// cause, leaves nothing on the root list, and the host goes on serving; a command
// that is not found is the command failing, in a terminal that started.
func TestASpawnThatFailsAnswersCreateWithAnError(t *testing.T) {
	// An executable file whose interpreter is not there: exec of the shell fails.
	broken := filepath.Join(t.TempDir(), "broken-shell")
	if err := os.WriteFile(broken, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		usePty bool
		// shell is the one that cannot start: root config's defaultShell, or else
		// the host's own (a defaultShell this machine cannot run is passed over).
		shell     string
		viaConfig bool
		cause     string
	}{
		{"pipes/defaultShell", false, broken, true, "the interpreter its #! line names, or its loader: no such file or directory"},
		{"pty/defaultShell", true, broken, true, "the interpreter its #! line names, or its loader: no such file or directory"},
		{"pipes/host shell", false, "/no/such/shell", false, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []hostOption{withPty(tc.usePty)}
			if !tc.viaConfig {
				opts = append(opts, func(c *server.Config) { c.Root.DefaultShell = tc.shell })
			}
			h := startHost(t, opts...)
			c := h.dial("spawner")
			if tc.viaConfig {
				c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": tc.shell}})
				c.waitAction(messages.RootURI, "root/configChanged")
			}

			bad := "ahp-terminal:/cannot-start"
			_, err := c.request("createTerminal", map[string]any{"channel": bad, "claim": map[string]any{"kind": "client", "clientId": "spawner"}})
			e := rpcError(t, err, messages.CodeInternalError)
			if want := "Cannot start " + tc.shell + ": " + tc.cause; e.Message != want {
				t.Fatalf("error %q, want %q", e.Message, want)
			}
			t.Logf("createTerminal: %s", e.Message)
			if _, err := c.Subscribe(c.ctx(), bad); err == nil {
				t.Fatalf("subscribe to %s succeeded after its create failed", bad)
			} else {
				rpcError(t, err, messages.CodeNotFound)
			}

			// The host goes on: with a shell that runs, a terminal starts, under the
			// same URI too.
			c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": "/bin/bash"}})
			c.waitAction(messages.RootURI, "root/configChanged")
			good := "ahp-terminal:/starts"
			c.createTerminal(good, nil)
			c.input(good, "echo good-$((6*7))\r")
			c.waitOutput(good, "good-42")
			c.waitFor("a root list with "+good, func(n *client.Notification) bool {
				return listHas(n, good)
			})
			for _, n := range c.seen {
				if listHas(n, bad) {
					t.Fatalf("the root list held %s: %s", bad, n.Params)
				}
			}
			c.createTerminal(bad, nil)
			c.input(bad, "echo again-$((6*7))\r")
			c.waitOutput(bad, "again-42")

			// A command the shell cannot find is the command failing: 127, with the
			// shell's own words in the terminal.
			missing := "ahp-terminal:/no-such-command"
			c.runCommand(missing, "termhost-no-such-command-xyz", nil)
			if code, _ := c.waitExit(missing); code != 127 {
				t.Fatalf("a command not found exited %d, want 127; output %q", code, c.output(missing))
			}
		})
	}
}

// listHas reports whether n is a root/terminalsChanged whose list holds uri.
func listHas(n *client.Notification, uri string) bool {
	if n.Envelope == nil || n.Envelope.Channel != messages.RootURI || n.Envelope.Type != messages.RootTerminalsChanged {
		return false
	}
	a, err := n.Envelope.Decode()
	if err != nil || a.Terminals == nil {
		return false
	}
	for _, ti := range *a.Terminals {
		if ti.Resource == uri {
			return true
		}
	}
	return false
}
