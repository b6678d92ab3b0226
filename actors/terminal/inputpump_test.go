package terminal

import (
	"bytes"
	"fmt"
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
	p.attach(w, nil, nil)
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

// recordingControl is a process whose resizes and interrupts go into the same record
// as the bytes written to it.
type recordingControl struct{ w *stingyWriter }

func (c recordingControl) Resize(cols, rows int) error {
	_, err := c.w.Write([]byte(fmt.Sprintf("<resize %dx%d>", cols, rows)))
	return err
}

func (c recordingControl) Signal(sig syscall.Signal) error {
	_, err := c.w.Write([]byte("<" + sig.String() + ">"))
	return err
}

func (c recordingControl) Pid() int { return 1 }

// TestInputPumpKeepsControlsInTheirPlace: a resize and an interrupt reach the process
// after what was typed before them and before what is typed after, also while the
// process's input buffer is full and before the process started.
func TestInputPumpKeepsControlsInTheirPlace(t *testing.T) {
	w := &stingyWriter{room: 2}
	p := newInputPump(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.close()
	p.push([]byte("before-start "))
	p.resize(100, 30)
	p.attach(w, recordingControl{w}, nil)
	p.push([]byte("stty size"))
	p.resize(120, 40)
	p.push([]byte(" sleep"))
	p.interrupt()
	p.push([]byte(" next"))
	want := "before-start <resize 100x30>stty size<resize 120x40> sleep<interrupt> next"
	deadline := time.Now().Add(10 * time.Second)
	for w.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the process got %q, want %q", w.String(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
