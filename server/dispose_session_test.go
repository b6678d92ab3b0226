package server_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Jobs a double fork handed to init are still in the terminal's session, and ending
// the terminal ends them: by disposeTerminal while its shell runs, and by the host
// shutting down, under a pseudoterminal (where job control puts each in a group of
// its own) and on pipes.
func TestDisposeOrShutdownEndsDoubleForkedJobs(t *testing.T) {
	for i, tc := range []struct {
		name   string
		usePty bool
		end    string // "dispose" or "shutdown"
	}{
		{"pty/dispose", true, "dispose"},
		{"pipes/dispose", false, "dispose"},
		{"pty/shutdown", true, "shutdown"},
		{"pipes/shutdown", false, "shutdown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Durations no other process on the machine sleeps for: the jobs are found
			// by their command lines.
			tag := fmt.Sprintf("%d%d", os.Getpid(), i)
			sleeps := []string{"1011." + tag, "1013." + tag}
			t.Cleanup(func() {
				for _, pid := range sleepers(sleeps) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})

			h := startHost(t, withPty(tc.usePty))
			c := h.dial("jobs")
			uri := "ahp-terminal:/double-fork"
			c.createTerminal(uri, nil)
			c.input(uri, "( sleep "+sleeps[0]+" & )\r")
			c.input(uri, "bash -c 'sleep "+sleeps[1]+" &'\r")
			c.input(uri, "echo typed-$((6*7))\r")
			c.waitOutput(uri, "typed-42")
			waitProcs(t, "both jobs running", func() bool { return len(sleepers(sleeps)) == 2 })
			for _, pid := range sleepers(sleeps) {
				t.Logf("job %d: parent %d", pid, parentPid(pid))
			}

			switch tc.end {
			case "dispose":
				c.mustRequest("disposeTerminal", map[string]any{"channel": uri})
			case "shutdown":
				h.stop()
			}
			waitProcs(t, "every job ended", func() bool { return len(sleepers(sleeps)) == 0 })
		})
	}
}

// sleepers lists the live processes running `sleep D` for one of durations.
func sleepers(durations []string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, d := range durations {
			// A zombie's command line is empty: it has ended, only nobody reaped it.
			if bytes.Equal(cmd, []byte("sleep\x00"+d+"\x00")) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func parentPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// waitProcs polls cond until it holds, failing after waitTimeout: no event says that
// a process that is not the host's child started or ended.
func waitProcs(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, waitTimeout)
		}
		<-tick.C
	}
}
