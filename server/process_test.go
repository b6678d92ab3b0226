package server_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// runCommand opens a one-command terminal through termhost's createTerminal extension.
func (c *conn) runCommand(uri, command string, extra map[string]any) {
	c.t.Helper()
	x := map[string]any{"command": command}
	for k, v := range extra {
		x[k] = v
	}
	params := map[string]any{"_meta": map[string]any{"x-termhost": x}}
	if cwd, ok := extra["cwd"]; ok {
		params["cwd"] = cwd
		delete(x, "cwd")
	}
	c.createTerminal(uri, params)
}

// waitExit waits for terminal/exited and returns its code and signal name.
func (c *conn) waitExit(uri string) (int, string) {
	c.t.Helper()
	// A one-command terminal may have exited before the subscribe: then its snapshot
	// says so and no action follows.
	if st := c.snaps[uri]; st != nil && st.Lifecycle != nil && st.Lifecycle.Status == messages.StatusExited {
		sig, _ := st.Meta["signal"].(string)
		return *st.Lifecycle.ExitCode, sig
	}
	env := c.waitAction(uri, messages.TerminalExited)
	a, err := env.Decode()
	if err != nil || a.ExitCode == nil {
		c.t.Fatalf("exited without a code: %s", env.Action)
	}
	sig, _ := a.Meta["signal"].(string)
	return *a.ExitCode, sig
}

func (c *conn) countActions(uri, actionType string) int {
	n := 0
	for _, s := range c.seen {
		if s.Envelope != nil && s.Envelope.Channel == uri && s.Envelope.Type == actionType {
			n++
		}
	}
	return n
}

func TestExitComesAfterAllOutput(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("flood")
		// The command waits for a line, so the subscription is in place before the
		// flood and the exit are seen as actions.
		c.runCommand(uri, "echo ready; read go; head -c 300000 /dev/zero | tr '\\0' 'a'; echo; echo END-OF-FLOOD", nil)
		c.input(uri, "go\r")
		code, _ := c.waitExit(uri)
		out := c.output(uri)
		if code != 0 || strings.Count(out, "a") < 300000 || !strings.Contains(out, "END-OF-FLOOD") {
			t.Fatalf("exit %d after %d bytes of output (want all 300000 and the end marker first)", code, len(out))
		}
		// Exactly once: ask for something that round-trips through the terminal's
		// mailbox after the exit, then count.
		if _, err := c.Subscribe(c.ctx(), uri); err != nil {
			t.Fatal(err)
		}
		if n := c.countActions(uri, messages.TerminalExited); n != 1 {
			t.Fatalf("terminal/exited came %d times", n)
		}
		exited := false
		for _, n := range c.seen {
			if e := n.Envelope; e != nil && e.Channel == uri {
				if e.Type == messages.TerminalExited {
					exited = true
				} else if exited && e.Type == messages.TerminalData {
					t.Fatal("output arrived after terminal/exited")
				}
			}
		}
	})
}

// TestSignalsAreReportedByName ends the shell with a signal in each mode: the exit
// code is 128+n, the signal is named on the action, in the exited state and on the
// root row.
func TestSignalsAreReportedByName(t *testing.T) {
	for _, tc := range []struct {
		signal string
		code   int
	}{{"TERM", 143}, {"KILL", 137}} {
		t.Run(tc.signal, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode terminalMode) {
				h := mode.host(t)
				c := h.dial("x")
				uri := mode.uri("signal-" + tc.signal)
				c.createTerminal(uri, nil)
				kill := "kill -" + tc.signal + " $$\r"
				if mode.pty && tc.signal == "TERM" {
					// An interactive bash ignores SIGTERM (bash(1), SIGNALS), and under a
					// pseudoterminal the shell is interactive: the terminal's own process
					// becomes a shell that does not, and signals itself.
					kill = "exec sh -c 'kill -TERM $$'\r"
				}
				c.input(uri, kill)
				want := "SIG" + tc.signal
				code, sig := c.waitExit(uri)
				if code != tc.code || sig != want {
					t.Fatalf("got %d %q, want %d %s", code, sig, tc.code, want)
				}
				snap, _ := c.Subscribe(c.ctx(), uri)
				st, _ := snap.TerminalState()
				if st.Lifecycle.Status != "exited" || *st.Lifecycle.ExitCode != tc.code || *st.ExitCode != tc.code || st.Meta["signal"] != want {
					t.Fatalf("exited state: %s", snap.State)
				}
				rows := waitRoot(c, func(r []messages.TerminalInfo) bool {
					row := findRow(r, uri)
					return row != nil && row.Lifecycle != nil && row.Lifecycle.Status == "exited"
				})
				if row := findRow(rows, uri); *row.Lifecycle.ExitCode != tc.code {
					t.Fatalf("root row %+v", row)
				}
			})
		})
	}
}

func TestInterrupt(t *testing.T) {
	t.Run("pipes", func(t *testing.T) {
		h := startHost(t, withPty(false))
		c := h.dial("x")
		uri := "ahp-terminal:/int-pipes"
		c.createTerminal(uri, nil)
		// "started" is printed by the process that then becomes sleep, so once it is
		// seen the ^C cannot land in the moment between the shell's fork and the exec.
		c.input(uri, "sh -c 'echo start''ed; exec sleep 30'\r")
		c.waitOutput(uri, "started")
		c.input(uri, "\x03")
		code, sig := c.waitExit(uri)
		if code != 130 || sig != "SIGINT" {
			t.Fatalf("got %d %q, want 130 SIGINT", code, sig)
		}
	})
	t.Run("pty", func(t *testing.T) {
		h := startHost(t, withPty(true))
		c := h.dial("x")
		uri := "ahp-terminal:/int-pty"
		c.createTerminal(uri, nil)
		c.input(uri, "sh -c 'echo sleep''ing; exec sleep 30'; echo NOT-INTERRUPTED\r")
		c.waitOutput(uri, "sleeping")
		prompts := strings.Count(c.output(uri), "\x1b[?2004h")
		c.input(uri, "\x03")
		// Type only once the prompt is back, as a person would: input typed while the
		// line discipline flushes for ^C may be dropped by the kernel.
		c.waitFor("the prompt after ^C", func(*client.Notification) bool {
			return strings.Count(c.output(uri), "\x1b[?2004h") > prompts
		})
		c.input(uri, "echo back-at-$((1+1))\r")
		out := c.waitOutput(uri, "back-at-2")
		if strings.Contains(out, "\nNOT-INTERRUPTED") {
			t.Fatal("sleep ran to its end")
		}
	})
}

func TestScrollbackCapForLateSubscriber(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("big")
		c.runCommand(uri, "i=0; while [ $i -lt 4000 ]; do printf '%099d\\n' $i; i=$((i+1)); done; echo LATEST", nil)
		c.waitExit(uri)
		late := h.dial("late")
		snap, err := late.Subscribe(late.ctx(), uri)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := snap.TerminalState()
		var text strings.Builder
		for _, p := range st.Content {
			text.WriteString(p.Text())
		}
		got := text.String()
		if n := len([]rune(got)); n > 200000 || n < 190000 {
			t.Fatalf("late subscriber got %d characters, want at most (and about) 200,000", n)
		}
		if !strings.HasSuffix(got, "LATEST"+mode.nl()) {
			t.Fatalf("scrollback does not end in the latest output: %q", got[len(got)-40:])
		}
	})
}

func TestEnvironment(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("env")
		c.createTerminal(uri, map[string]any{"cols": 91, "rows": 33})
		c.input(uri, "echo \"T=$TERM C=$COLUMNS L=$LINES\"\r")
		wantTerm := "dumb"
		if mode.pty {
			wantTerm = os.Getenv("TERM")
			if wantTerm == "" || wantTerm == "dumb" {
				wantTerm = "xterm-256color"
			}
		}
		c.waitOutput(uri, fmt.Sprintf("T=%s C=91 L=33", wantTerm))

		flags := mode.uri("flags")
		c.runCommand(flags, `echo "H=$VSCODE_PREVENT_SHELL_HISTORY P=[$PAGER] G=$GIT_TERMINAL_PROMPT D=$DEBIAN_FRONTEND X=$MINE"`,
			map[string]any{"preventShellHistory": true, "nonInteractive": true, "env": map[string]any{"MINE": "yes", "TERM": "ignored"}})
		c.waitExit(flags)
		if out := c.output(flags); !strings.Contains(out, "H=1 P=[] G=0 D=noninteractive X=yes") {
			t.Fatalf("env: %q", out)
		}
	})
}

func TestMissingFolderForACommandIs127(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("nodir")
		c.runCommand(uri, "echo should-not-run", map[string]any{"cwd": "file:///no/such/place"})
		code, _ := c.waitExit(uri)
		out := c.output(uri)
		if code != 127 || !strings.Contains(out, "/no/such/place") || strings.Contains(out, "should-not-run") {
			t.Fatalf("exit %d output %q", code, out)
		}
		// One more round trip through the terminal's mailbox, then count: the exit seen
		// in the first snapshot or as an action, never both, never twice.
		if _, err := c.Subscribe(c.ctx(), uri); err != nil {
			t.Fatal(err)
		}
		exits := c.countActions(uri, messages.TerminalExited)
		if st := c.snaps[uri]; st.Lifecycle.Status == messages.StatusExited {
			exits++
		}
		if exits != 1 {
			t.Fatalf("a failed start fired %d exits", exits)
		}
	})
}

func TestArgsAreQuotedWordByWord(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("argv")
		c.runCommand(uri, "printf", map[string]any{"args": []string{"[%s]\\n", "a b", "c'd", "$HOME"}})
		c.waitExit(uri)
		nl := mode.nl()
		if out := c.output(uri); !strings.Contains(out, "[a b]"+nl+"[c'd]"+nl+"[$HOME]"+nl) {
			t.Fatalf("argv output %q", out)
		}
	})
}

func TestDisposeEndsBackgroundJobs(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("bg")
		c.createTerminal(uri, nil)
		c.input(uri, "sleep 1000 & echo BGPID=$!.\r")
		var m []string
		c.waitFor("the background pid", func(*client.Notification) bool {
			m = bgPID.FindStringSubmatch(c.output(uri))
			return m != nil
		})
		pid, _ := strconv.Atoi(m[1])
		c.mustRequest("disposeTerminal", map[string]any{"channel": uri})
		waitGone(t, pid)
	})
}

var bgPID = regexp.MustCompile(`BGPID=(\d+)\.`)

// waitGone polls /proc until pid is gone or a zombie nobody will reap is impossible:
// there is no event for another process's death, so this is the one poll in the suite.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		fields := strings.Fields(string(b))
		if len(fields) > 2 && fields[2] == "Z" {
			// A zombie whose parent is not us (the shell is gone, so init reaps it).
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still alive after dispose", pid)
}

func TestInputToAnExitedTerminalIsRefused(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("done")
		c.runCommand(uri, "true", nil)
		c.waitExit(uri)
		c.input(uri, "echo hi\r")
		rej := c.waitFor("rejected input", func(n *client.Notification) bool {
			return n.Envelope != nil && n.Envelope.Type == messages.TerminalInput && n.Envelope.RejectionReason != ""
		})
		if !strings.Contains(rej.Envelope.RejectionReason, "exited") {
			t.Fatalf("reason %q", rej.Envelope.RejectionReason)
		}
	})
}

func TestAbsurdSizesAreClamped(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		uri := mode.uri("sizes")
		snap := c.createTerminal(uri, map[string]any{"cols": 100000, "rows": 100000})
		st, _ := snap.TerminalState()
		if *st.Cols > 1000 || *st.Rows > 1000 {
			t.Fatalf("created at %dx%d", *st.Cols, *st.Rows)
		}
		c.dispatch(uri, map[string]any{"type": "terminal/resized", "cols": 0, "rows": 0})
		env := c.waitAction(uri, messages.TerminalResized)
		a, _ := env.Decode()
		if *a.Cols < 1 || *a.Rows < 1 || a.Meta["termhost"] == nil {
			t.Fatalf("clamped echo %s", env.Action)
		}
	})
}

func TestUnknownShellFailsCleanly(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": "/no/such/shell"}})
		c.waitAction(messages.RootURI, "root/configChanged")
		// A defaultShell this machine cannot run is passed over for the system shell.
		uri := mode.uri("fallback-shell")
		c.createTerminal(uri, nil)
		c.input(uri, "echo fell-back\r")
		c.waitOutput(uri, "fell-back")
	})
}

// TestChurnLeavesNoZombieOrFd runs create → exit → dispose cycles, 8 at a time, and
// counts this process's descriptors and children before and after, in each mode.
// Any growth fails it; 500 cycles a mode keep the run as long as the 1,000 under a
// pseudoterminal alone did.
func TestChurnLeavesNoZombieOrFd(t *testing.T) {
	cycles := 500
	if testing.Short() {
		cycles = 50
	}
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		warm := h.dial("warm")
		warm.runCommand("ahp-terminal:/warm", "true", nil)
		warm.waitExit("ahp-terminal:/warm")
		warm.mustRequest("disposeTerminal", map[string]any{"channel": "ahp-terminal:/warm"})

		clients := make([]*conn, 8)
		for w := range clients {
			clients[w] = h.dial(fmt.Sprintf("churn-%d", w))
		}
		fdsBefore := countFDs(t)
		// Children of earlier tests' hosts that are still being reaped are not this
		// test's; any new child still here at the end is.
		kidsBefore := map[string]bool{}
		pidOf := func(k string) string { return strings.SplitN(k, "(", 2)[0] }
		for _, k := range childPIDs(t) {
			kidsBefore[pidOf(k)] = true
		}
		newKids := func() []string {
			var out []string
			for _, k := range childPIDs(t) {
				if !kidsBefore[pidOf(k)] {
					out = append(out, k)
				}
			}
			return out
		}
		var wg sync.WaitGroup
		work := make(chan int)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					uri := fmt.Sprintf("ahp-terminal:/churn-%d", i)
					c.runCommand(uri, "true", nil)
					c.waitExit(uri)
					c.mustRequest("disposeTerminal", map[string]any{"channel": uri})
					c.seen = nil
				}
			}()
		}
		for i := 0; i < cycles; i++ {
			work <- i
		}
		close(work)
		wg.Wait()

		// Disposal answers before the last process is reaped; wait for the children.
		deadline := time.Now().Add(waitTimeout)
		for len(newKids()) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if kids := newKids(); len(kids) > 0 {
			t.Fatalf("children left after %d cycles: %v", cycles, kids)
		}
		// The connections were open before and after, so any growth is a leak. Poll a
		// moment for descriptors the runtime is still closing.
		for countFDs(t) > fdsBefore && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if after := countFDs(t); after > fdsBefore {
			t.Fatalf("descriptors: %d before, %d after %d cycles", fdsBefore, after, cycles)
		}
	})
}

func countFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(entries)
}

// childPIDs lists this process's children, zombies included.
func childPIDs(t *testing.T) []string {
	self := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	var kids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:]
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == self {
			kids = append(kids, e.Name()+"("+f[0]+")")
		}
	}
	return kids
}

// TestMultiByteOutputSurvivesReadSplits prints characters of two, three and four
// bytes in long runs, so reads of the pipe or pty split some of them: every one
// arrives whole, none as U+FFFD.
func TestMultiByteOutputSurvivesReadSplits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("utf8")
		uri := mode.uri("utf8-out")
		c.runCommand(uri, "echo ready; read go; i=0; while [ $i -lt 3000 ]; do printf 'é→日😀'; i=$((i+1)); done; echo; echo END", nil)
		c.input(uri, "go\r")
		c.waitExit(uri)
		out := c.output(uri)
		if strings.ContainsRune(out, '\uFFFD') {
			t.Fatal("a character split across reads arrived broken")
		}
		if n := strings.Count(out, "é→日😀"); n != 3000 {
			t.Fatalf("%d of 3000 runs arrived whole", n)
		}
	})
}

func TestCwdThatIsAFileOpensHome(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("x")
		file := t.TempDir() + "/plain-file"
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		uri := mode.uri("cwd-file")
		snap := c.createTerminal(uri, map[string]any{"cwd": file})
		st, _ := snap.TerminalState()
		if strings.Contains(st.Cwd, "plain-file") {
			t.Fatalf("opened in a file: %s", st.Cwd)
		}
		c.input(uri, "echo alive\r")
		c.waitOutput(uri, "alive")
	})
}
