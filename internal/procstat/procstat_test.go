package procstat

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// TestReadsThisProcessAndTheMachine: what /proc says of this very process and of the
// machine is there and sane; a pid that is gone reads as not known.
func TestReadsThisProcessAndTheMachine(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	pid := os.Getpid()
	if rss, ok := RSSBytes(pid); !ok || rss <= 0 {
		t.Errorf("RSSBytes = %d, %v", rss, ok)
	}
	if n, ok := Threads(pid); !ok || n < 1 {
		t.Errorf("Threads = %d, %v", n, ok)
	}
	if n, ok := Descriptors(pid); !ok || n < 3 {
		t.Errorf("Descriptors = %d, %v", n, ok)
	}
	if _, ok := CPUSeconds(pid); !ok {
		t.Error("CPUSeconds not known for this process")
	}
	if m, ok := ReadMachine(); !ok || m.Total <= 0 || m.Busy > m.Total || m.Switches <= 0 {
		t.Errorf("ReadMachine = %+v, %v", m, ok)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kids, ok := Children(pid)
	if !ok || len(kids) < 1 {
		t.Errorf("Children = %v, %v; want the sleep", kids, ok)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, ok := RSSBytes(cmd.Process.Pid); ok {
		t.Error("a reaped process still reads as known")
	}
}

// A child's CPU counts in its parent's children's time while it runs and after it is
// reaped, and never goes back: two readings give what the children used between them.
func TestChildrenCPUSecondsCountsLiveAndReapedChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	pid := os.Getpid()
	before, ok := ChildrenCPUSeconds(pid)
	if !ok {
		t.Fatal("ChildrenCPUSeconds not known for this process")
	}
	// A child that spins (a few tenths of a second of CPU), says so, and waits for
	// its input to close.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo spun; read -r _; exit 0`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "spun\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}
	live, _ := ChildrenCPUSeconds(pid)
	if live <= before {
		t.Errorf("children's CPU %.2f s with a child that spun, %.2f s before it", live, before)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if after, _ := ChildrenCPUSeconds(pid); after < live {
		t.Fatalf("children's CPU went back from %.2f s while running to %.2f s once reaped", live, after)
	}
}
