package procstat

import (
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
