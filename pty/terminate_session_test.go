//go:build linux

package pty

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A job a double fork handed to init, in a process group of its own (job control
// puts the subshell in one), is still in the terminal's session: Terminate ends it,
// whether the shell is still running or has exited already.
func TestTerminateEndsADoubleForkedJob(t *testing.T) {
	requirePty(t)
	for _, tc := range []struct {
		name    string
		command string
	}{
		{"shell running", "set -m; (sleep 1000 & echo pid=$!); echo ready; read line"},
		{"shell exited", "set -m; (sleep 1000 & echo pid=$!); echo ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			r := start(t, Spec{Command: tc.command, UsePty: true})
			// "ready" comes once the shell has the terminal back from the subshell.
			job := watchChild(t, r.out.waitFor(ctx, t, "ready"))
			// The subshell that started it may still be ending, and the job may not
			// have become sleep yet: wait for both.
			waitFor(t, func() bool {
				var buf [statBufSize]byte
				st, ok := statInto(job.pid, buf[:])
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(job.pid) + "/cmdline")
				return ok && strings.HasPrefix(string(cmd), "sleep\x00") && !isDescendant(st.ppid, r.p.Pid())
			}, "the job running sleep, handed away from the shell")
			if tc.name == "shell exited" {
				r.waitExit(ctx, t)
				<-r.p.Done()
			}
			Terminate(r.p, testTimeout, nil)
			job.waitGone(t)
		})
	}
}

// A process that made a session of its own left the terminal: Terminate leaves it.
func TestTerminateLeavesASetsidProcess(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "setsid sleep 1000 & echo pid=$!; read line", UsePty: usePty})
		out := r.out.waitFor(ctx, t, "\n")
		pid := parsePid(t, out)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		// setsid forks when it is a group leader; either way the sleep's session is
		// its own pid's or its parent's, never the shell's.
		waitFor(t, func() bool {
			sid, _, ok := procSessionAndStart(pid)
			return ok && sid != r.p.Pid()
		}, "the setsid process to leave the shell's session")
		Terminate(r.p, testTimeout, nil)
		r.waitExit(ctx, t)
		if sid, _, ok := procSessionAndStart(pid); !ok || sid == r.p.Pid() {
			t.Fatalf("the setsid process %d is gone or back in the shell's session after Terminate (sid %d, ok %v)", pid, sid, ok)
		}
	})
}

// waitFor polls cond until it holds, failing after testTimeout: no event says that
// another process changed its parent or its session.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, testTimeout)
		}
		<-tick.C
	}
}

// isDescendant reports whether pid is ancestor or one of its descendants.
func isDescendant(pid, ancestor int) bool {
	var buf [statBufSize]byte
	for seen := 0; pid > 1 && seen < 64; seen++ {
		if pid == ancestor {
			return true
		}
		st, ok := statInto(pid, buf[:])
		if !ok {
			return false
		}
		pid = st.ppid
	}
	return false
}
