package channel

import (
	"testing"
	"time"
)

// A burst never waits for another: with one burst blocked, the next still runs,
// and a goroutine that finished a burst takes the next one.
func TestPoolRunsEveryBurstWhileOneBlocks(t *testing.T) {
	p := NewPool(10)
	release := make(chan struct{})
	blocked := make(chan struct{})
	p.Schedule(func() {
		close(blocked)
		<-release
	})
	<-blocked
	ran := make(chan int, 100)
	for i := range 100 {
		p.Schedule(func() { ran <- i })
	}
	seen := map[int]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < 100 {
		select {
		case i := <-ran:
			seen[i] = true
		case <-deadline:
			t.Fatalf("%d of 100 bursts ran while one was blocked", len(seen))
		}
	}
	close(release)
	if p.Throughput() != 10 {
		t.Fatalf("Throughput() = %d, want 10", p.Throughput())
	}
}
