//go:build unix

package session_test

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
)

var pidLine = regexp.MustCompile(`pid=(\d+)`)

// shellOf runs `!echo pid=$$` as a turn and returns the terminal its call names and
// the pid of the shell it ran in.
func (h *harness) shellOf(from int, turnID string) (int, string, int) {
	h.t.Helper()
	h.say(turnID, "!echo pid=$$")
	i, res := h.completedResult(from, turnID)
	if !res.Success || len(res.Content) != 1 || res.Content[0].Result == nil {
		h.t.Fatalf("%s: %+v", turnID, res)
	}
	m := pidLine.FindStringSubmatch(res.Content[0].Result.Preview)
	if m == nil {
		h.t.Fatalf("%s printed %q", turnID, res.Content[0].Result.Preview)
	}
	pid, _ := strconv.Atoi(m[1])
	return i, res.Content[0].Resource, pid
}

// typeInto types into a terminal as a client would, and returns once the terminal
// has taken it (its session has then been told).
func (h *harness) typeInto(uri, data string) {
	h.t.Helper()
	h.seq++
	a := &messages.Action{Type: messages.TerminalInput, Data: &data}
	h.system.Root.Send(h.root, &channel.Dispatch{Channel: uri, Action: a, Raw: messages.EncodeAction(a),
		Origin: messages.Origin{ClientID: "unit", ClientSeq: h.seq}, Sub: h.log, By: "ann"})
	if _, err := h.system.Root.RequestFuture(h.root, &terminal.SnapshotQuery{URI: uri}, waitTimeout).Result(); err != nil {
		h.t.Fatalf("the terminal %s did not answer after the input: %v", uri, err)
	}
}

func running(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone waits for a process of ours to be ended and reaped.
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnusedCommandShellsAreRetired: a session keeps the newest Config.LiveShells
// shells of its commands live; an older one that nobody used after its command is
// ended, and its call's terminal is then what was kept of it. A shell somebody
// typed into stays.
func TestUnusedCommandShellsAreRetired(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	store, err := persistence.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{bash: bash, store: store, liveShells: 2})

	i, typed, typedPid := h.shellOf(0, "t1")
	h.typeInto(typed, " ") // somebody uses the first command's shell
	pids := []int{typedPid}
	uris := []string{typed}
	for n := 2; n <= 4; n++ {
		var uri string
		var pid int
		i, uri, pid = h.shellOf(i, fmt.Sprintf("t%d", n))
		pids, uris = append(pids, pid), append(uris, uri)
	}
	// Unused: 2, 3, 4; the newest two stay, so 2 is retired.
	waitGone(t, "the second command's unused shell", pids[1])
	for _, n := range []int{0, 2, 3} {
		if !running(pids[n]) {
			t.Fatalf("command %d's shell (pid %d) was ended; live: the typed-into one and the newest two", n+1, pids[n])
		}
	}
	// Its terminal opens from what was kept: the command and its output.
	chat, key, _ := toolterm.Parse(uris[1])
	kept, err := store.LoadTerminal(h.uri, chat, key)
	if err != nil || !strings.Contains(kept.Output, fmt.Sprintf("pid=%d", pids[1])) {
		t.Fatalf("the retired shell's kept terminal: %+v, %v", kept, err)
	}

	// The next command retires the oldest unused one again, never the typed-into.
	_, _, _ = h.shellOf(i, "t5")
	waitGone(t, "the third command's unused shell", pids[2])
	if !running(pids[0]) {
		t.Fatal("the shell somebody typed into was ended")
	}
}

// TestIdleSessionEndsItsShells: once no command has come for Config.ShellIdle, the
// session's spare shells (two by default) and its commands' unused shells are
// ended; the next command still runs, in a shell started for it.
func TestIdleSessionEndsItsShells(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	spares := make(chan *terminal.Spare, 16)
	h := newHarness(t, harnessOptions{bash: bash, spares: spares, shellIdle: 300 * time.Millisecond})

	i, _, shell := h.shellOf(0, "t1")
	ended := []int{shell}
	for n := 0; n < 2; n++ {
		select {
		case sp := <-spares:
			ended = append(ended, sp.Pid())
		case <-time.After(waitTimeout):
			t.Fatalf("%d spare shells were started, want 2", n)
		}
	}
	for _, pid := range ended {
		waitGone(t, "an idle session's shell", pid)
	}

	_, _, again := h.shellOf(i, "t2")
	if slices.Contains(ended, again) {
		t.Fatalf("the command after the idle time ran in an ended shell (pid %d)", again)
	}
}
