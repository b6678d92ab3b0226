//go:build linux

package pty

import (
	"slices"
	"sync"
	"testing"
)

// Sessions asked for at the same time are found in shared passes, and each asker
// gets its own session's members: the shell and the job it left in the background.
func TestSessionScannerServesEachSession(t *testing.T) {
	ctx := testContext(t)
	var scanner SessionScanner
	type shell struct{ pid, job int }
	var shells []shell
	for range 4 {
		r := start(t, Spec{Command: "sleep 1000 & echo pid=$!; wait"})
		job := parsePid(t, r.out.waitFor(ctx, t, "\n"))
		shells = append(shells, shell{r.p.Pid(), job})
	}
	var wg sync.WaitGroup
	for _, sh := range shells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pids []int
			for _, m := range scanner.members(sh.pid) {
				pids = append(pids, m.pid)
			}
			if !slices.Contains(pids, sh.pid) || !slices.Contains(pids, sh.job) {
				t.Errorf("session %d: members %v, want the shell and its job %d", sh.pid, pids, sh.job)
			}
			for _, other := range shells {
				if other != sh && (slices.Contains(pids, other.pid) || slices.Contains(pids, other.job)) {
					t.Errorf("session %d: members %v hold another session's process", sh.pid, pids)
				}
			}
		}()
	}
	wg.Wait()
}
