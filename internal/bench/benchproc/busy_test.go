package benchproc

import (
	"io"
	"testing"
	"time"
)

// TestServeBusyEndsWithItsInput: the busy neighbour goes when the bench that started
// it closes its stdin, so a bench that dies leaves no CPU burning behind it.
func TestServeBusyEndsWithItsInput(t *testing.T) {
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeBusy(2, r)
	}()
	// A pipe's write returns once the other end read it: while ServeBusy reads on,
	// every write returns, and should it stop early the write waits while done closes.
	for range 3 {
		wrote := make(chan error, 1)
		go func() {
			_, err := w.Write([]byte("anything\n"))
			wrote <- err
		}()
		select {
		case <-done:
			t.Fatal("ServeBusy returned while its input was still open")
		case err := <-wrote:
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ServeBusy still running 30 s after its input closed")
	}
}
