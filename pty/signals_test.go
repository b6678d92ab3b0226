package pty

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// childSignalsEnv makes the test binary, started again by
// TestShellsDoNotInheritIgnoredSignals, start one shell and print what it ignores.
const childSignalsEnv = "TERMHOST_PTY_TEST_PRINT_SIGIGN"

// TestShellsDoNotInheritIgnoredSignals: a process started with SIGHUP and SIGINT
// ignored (as `nohup` and `&` in a script start one) starts shells that do not ignore
// them, under a pseudoterminal and on pipes. The test binary is run again by a shell
// that ignores both, and its shell reads its own SigIgn.
func TestShellsDoNotInheritIgnoredSignals(t *testing.T) {
	if os.Getenv(childSignalsEnv) != "" {
		printChildSigIgn()
		return
	}
	for _, usePty := range []bool{true, false} {
		t.Run(fmt.Sprintf("pty=%v", usePty), func(t *testing.T) {
			if usePty {
				requirePty(t)
			}
			cmd := exec.CommandContext(testContext(t), "/bin/sh", "-c", `trap "" HUP INT; exec "$0" -test.run='^TestShellsDoNotInheritIgnoredSignals$'`, os.Args[0])
			cmd.Env = append(os.Environ(), childSignalsEnv+"="+strconv.FormatBool(usePty))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the test binary under ignored signals: %v\n%s", err, out)
			}
			parent, child := sigIgnLine(t, string(out), "parent"), sigIgnLine(t, string(out), "child")
			for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
				bit := uint64(1) << (sig - 1)
				if parent&bit == 0 {
					t.Fatalf("the parent does not ignore %v (SigIgn %x): the test set nothing up", sig, parent)
				}
				if child&bit != 0 {
					t.Errorf("a started shell ignores %v (SigIgn %x)", sig, child)
				}
			}
		})
	}
}

// printChildSigIgn is the re-run test binary's part: its own SigIgn, then its shell's.
func printChildSigIgn() {
	status, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			fmt.Printf("parent %s\n", strings.TrimSpace(v))
		}
	}
	p, err := Start(Spec{Shell: testShell, Command: `sed -n 's/^SigIgn:[[:space:]]*/child /p' /proc/self/status`, UsePty: os.Getenv(childSignalsEnv) == "true"})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	out := collect(p.Output())
	p.Wait()
	<-out.done
	fmt.Print(strings.ReplaceAll(out.String(), "\r", ""))
}

func sigIgnLine(t *testing.T, out, who string) uint64 {
	t.Helper()
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), who+" "); ok {
			n, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				t.Fatalf("%s's SigIgn %q: %v", who, v, err)
			}
			return n
		}
	}
	t.Fatalf("no %s SigIgn line in %q", who, out)
	return 0
}
