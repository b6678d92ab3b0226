package pty

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A shell waited for holds no thread while it runs: an operator's host with a
// thousand shells would otherwise hold a thousand threads blocked in waitid. The
// waits are seen parked in the poller, the process's threads stay few, and every
// shell's exit is still reported as it ended.
func TestWaitingHoldsNoThread(t *testing.T) {
	const shells = 32
	before := threadCount(t)
	var started []*running
	for i := 0; i < shells; i++ {
		// A shell on pipes reads its stdin, which stays open until Close.
		r := start(t, Spec{Command: "read line; exit " + strconv.Itoa(i%7)})
		started = append(started, r)
	}
	// start has each one waited for already.
	deadline := time.Now().Add(testTimeout)
	for parkedWaits() < shells {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waits are parked in the poller; the others hold a thread each", parkedWaits(), shells)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if now := threadCount(t); now >= before+shells/2 {
		t.Fatalf("threads went from %d to %d while %d shells were waited for", before, now, shells)
	}
	want := map[int]int{}
	for i, r := range started {
		want[i%7]++
		if _, err := r.p.Write([]byte("x\n")); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	ctx := testContext(t)
	for _, r := range started {
		want[r.waitExit(ctx, t).Code]--
	}
	for code, n := range want {
		if n != 0 {
			t.Fatalf("exit code %d reported %d times too few", code, n)
		}
	}
}

// parkedWaits counts goroutines inside awaitExit that the poller holds.
func parkedWaits() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "pty.awaitExit") {
			n++
		}
	}
	return n
}

func threadCount(t *testing.T) int {
	t.Helper()
	return countProcEntries(t, "task", "threads")
}
