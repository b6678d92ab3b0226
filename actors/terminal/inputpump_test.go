package terminal

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stingyWriter takes at most room bytes per TryWrite, like a terminal whose input
// buffer is nearly full, and everything through Write, the pump's blocking path.
type stingyWriter struct {
	room int

	mu  sync.Mutex
	got bytes.Buffer
}

func (w *stingyWriter) TryWrite(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(b), w.room)
	w.got.Write(b[:n])
	if n < len(b) {
		return n, syscall.EAGAIN
	}
	return n, nil
}

func (w *stingyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(b)
}

func (w *stingyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.String()
}

// Input typed before the process started, and input the process cannot take at once,
// are finished by the pump, and what is typed meanwhile follows: nothing lost,
// nothing reordered.
func TestInputPumpKeepsOrderAcrossAFullBuffer(t *testing.T) {
	w := &stingyWriter{room: 3}
	p := newInputPump(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.close()
	var want bytes.Buffer
	// Typed before the process started, then after: the early input goes first.
	for _, s := range []string{"early ", "typing "} {
		p.push([]byte(s))
		want.WriteString(s)
	}
	p.attach(w, nil)
	for _, s := range []string{"a", "bcdefgh", "ij", "klmnopqrstuvwxyz", "0"} {
		p.push([]byte(s))
		want.WriteString(s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.String() != want.String() {
		if time.Now().After(deadline) {
			t.Fatalf("the process got %q, want %q", w.String(), want.String())
		}
		time.Sleep(time.Millisecond)
	}
}
