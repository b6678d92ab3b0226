//go:build unix

package session_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
)

// TestCommandsAdoptASpareShell: after a session's first `!` command, the next runs in
// a shell started ahead (its $$ is the spare's pid), which was no terminal before
// its command: the root was asked for one terminal per command. The spare waiting
// when the session is disposed is ended with it.
func TestCommandsAdoptASpareShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	spares := make(chan *terminal.Spare, 16)
	// One spare at a time, so that the spares come in the order they are adopted.
	h := newHarness(t, harnessOptions{bash: bash, spares: spares, spareCount: 1})
	nextSpare := func() *terminal.Spare {
		t.Helper()
		select {
		case sp := <-spares:
			return sp
		case <-time.After(waitTimeout):
			t.Fatal("no spare shell was started")
			return nil
		}
	}

	h.say("t1", "!echo one")
	i, res := h.completedResult(0, "t1")
	if !res.Success || !strings.Contains(res.Content[0].Result.Preview, "one") {
		t.Fatalf("first command: %+v", res)
	}
	// The harness hears of a spare as it starts, a moment before the session does: a
	// command said in that moment starts a shell of its own, and the spare waits for
	// the next one. So each spare is held to run the first command after it, or the
	// one after that, and never a command's terminal before.
	commands := 1
	for n := 2; n <= 4; n++ {
		sp := nextSpare()
		want := fmt.Sprintf("pid=%d", sp.Pid())
		adopted := false
		for try := 0; try < 2 && !adopted; try++ {
			commands++
			turn := fmt.Sprintf("t%d-%d", n, try)
			h.say(turn, "!echo pid=$$")
			i, res = h.completedResult(i, turn)
			if !res.Success {
				t.Fatalf("command %d failed: %+v", commands, res)
			}
			adopted = strings.Contains(res.Content[0].Result.Preview, want)
		}
		if !adopted {
			t.Fatalf("spare %d: neither of the two commands after it printed %s: it did not run in the spare shell", n-1, want)
		}
		created, err := h.system.Root.RequestFuture(h.root, createdQuery{}, waitTimeout).Result()
		if err != nil || created.(int) != commands {
			t.Fatalf("the root was asked for %v terminals (%v) after %d commands: a spare is no terminal", created, err, commands)
		}
	}

	waiting := nextSpare() // started beside the last command, never adopted
	if err := syscall.Kill(waiting.Pid(), 0); err != nil {
		t.Fatalf("the spare shell %d is not running: %v", waiting.Pid(), err)
	}
	if _, err := h.system.Root.RequestFuture(h.session, &session.Dispose{URI: h.uri}, waitTimeout).Result(); err != nil {
		t.Fatalf("dispose: %v", err)
	}
	// Released means reaped by this process: the pid names no process of ours.
	deadline := time.Now().Add(waitTimeout)
	for syscall.Kill(waiting.Pid(), 0) == nil || !errors.Is(syscall.Kill(waiting.Pid(), 0), syscall.ESRCH) {
		if time.Now().After(deadline) {
			t.Fatalf("the spare shell %d outlived its session", waiting.Pid())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
