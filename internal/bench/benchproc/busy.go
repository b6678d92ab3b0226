package benchproc

import (
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
)

// Spin keeps n goroutines busy until stop is closed: the busy neighbour's work.
func Spin(n int, stop <-chan struct{}) {
	runtime.GOMAXPROCS(max(n, runtime.GOMAXPROCS(0)))
	var quit atomic.Bool
	done := make(chan struct{})
	for range n {
		go func() {
			x := uint64(1)
			for !quit.Load() {
				for range 1 << 12 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			if x == 0 {
				fmt.Fprint(io.Discard, x) // keeps the loop's work from being dropped
			}
			done <- struct{}{}
		}()
	}
	<-stop
	quit.Store(true)
	for range n {
		<-done
	}
}

// ServeBusy is `termhost bench-busy N`: N spinning goroutines until stdin closes, so
// the neighbour goes when the bench that started it does.
func ServeBusy(n int, stdin io.Reader) {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(stop)
	}()
	Spin(n, stop)
}
