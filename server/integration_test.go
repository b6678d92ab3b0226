package server_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// TestCommandDetection drives real bash, zsh and fish under a pseudoterminal with
// termhost's shell integration: the command line, its exit code and the folder come
// back as actions, and no mark reaches the output.
func TestCommandDetection(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			path, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed here (.ci/run installs it)", shell)
			}
			h := startHost(t, withPty(true))
			c := h.dial("cd")
			c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": path}})
			c.waitAction(messages.RootURI, "root/configChanged")
			uri := "ahp-terminal:/detect-" + shell
			c.createTerminal(uri, nil)
			// The first prompt's mark may come before the subscribe; then the snapshot
			// already says so.
			if st := c.snaps[uri]; st.SupportsCommandDetection == nil || !*st.SupportsCommandDetection {
				c.waitAction(uri, messages.TerminalCommandDetectionAvailable)
			}

			line := "echo x; sh -c 'exit 4'"
			c.input(uri, line+"\r")
			exec := c.waitAction(uri, messages.TerminalCommandExecuted)
			ea, _ := exec.Decode()
			if ea.CommandLine == nil || *ea.CommandLine != line {
				t.Fatalf("commandExecuted line %s, want %q", exec.Action, line)
			}
			fin := c.waitAction(uri, messages.TerminalCommandFinished)
			fa, _ := fin.Decode()
			if fa.CommandID != ea.CommandID || fa.ExitCode == nil || *fa.ExitCode != 4 {
				t.Fatalf("commandFinished %s for %s", fin.Action, exec.Action)
			}

			c.input(uri, "cd /tmp\r")
			cwd := c.waitFor("cwdChanged to /tmp", func(n *client.Notification) bool {
				if n.Envelope == nil || n.Envelope.Type != messages.TerminalCwdChanged {
					return false
				}
				a, _ := n.Envelope.Decode()
				return a.Cwd != nil && *a.Cwd == "file:///tmp"
			})
			_ = cwd
			out := c.output(uri)
			for _, mark := range []string{"\x1b]633;", "\x1b]133;"} {
				if strings.Contains(out, mark) {
					t.Fatalf("a mark reached the output: %q", out)
				}
			}
			snap, _ := c.Subscribe(c.ctx(), uri)
			st, _ := snap.TerminalState()
			if st.SupportsCommandDetection == nil || !*st.SupportsCommandDetection {
				t.Fatal("state does not say supportsCommandDetection")
			}
			var found bool
			for _, p := range st.Content {
				if p.Type == messages.PartCommand && p.CommandLine == line && p.IsComplete && p.ExitCode != nil && *p.ExitCode == 4 {
					found = true
				}
			}
			if !found {
				t.Fatalf("no complete command part for %q in %s", line, snap.State)
			}
		})
	}
}

func TestScreenAnswersAndAltBuffer(t *testing.T) {
	h := startHost(t, withPty(true))
	c := h.dial("scr")
	uri := "ahp-terminal:/screen"
	c.createTerminal(uri, nil)
	// The screen answers the cursor position query on the program's input.
	c.input(uri, "printf '\\033[6n'; read -rs -d R pos; echo \"POS=${pos#*[}.\"\r")
	// The typed line's echo holds "POS=${pos…" too; only an answer has digits.
	c.waitFor("a cursor position report", func(*client.Notification) bool {
		return cursorReport.MatchString(c.output(uri))
	})

	info := h.screen(t, uri)
	if info.AltBuffer {
		t.Fatal("alt buffer before any program asked for it")
	}
	c.input(uri, "printf '\\033[?1049h'\r")
	select {
	case <-info.WhenAltBuffer:
	case <-c.ctx().Done():
		t.Fatal("whenAltBuffer did not settle")
	}
	if !h.screen(t, uri).AltBuffer {
		t.Fatal("not in the alt buffer after the switch")
	}

	// On pipes nothing of this is claimed.
	p := startHost(t, withPty(false))
	pc := p.dial("pipes")
	pu := "ahp-terminal:/pipes-screen"
	snap := pc.createTerminal(pu, nil)
	st, _ := snap.TerminalState()
	if st.SupportsCommandDetection == nil || *st.SupportsCommandDetection || *st.IsPty {
		t.Fatalf("pipes claim detection or pty: %s", snap.State)
	}
	pinfo := p.screen(t, pu)
	select {
	case <-pinfo.WhenAltBuffer:
	default:
		t.Fatal("whenAltBuffer on pipes does not settle at once")
	}
	if pinfo.AltBuffer || pinfo.BracketedPaste {
		t.Fatal("pipes claim a screen mode")
	}
}

var cursorReport = regexp.MustCompile(`POS=\d+;\d+\.`)

func (h *testHost) screen(t *testing.T, uri string) *terminal.ScreenInfo {
	t.Helper()
	res, err := h.srv.System().Root.RequestFuture(h.srv.RootPID(), &terminal.ScreenQuery{URI: uri}, waitTimeout).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res.(*terminal.ScreenInfo)
}
