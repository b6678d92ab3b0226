package terminal

import (
	"sync"
	"time"

	"github.com/termhost/termhost/screen"
)

// maxScreenBacklog bounds the output waiting for a terminal's screen. The emulator is
// far slower than a pseudoterminal (a few MB/s on scrolling output), so it is fed on
// its own goroutine, in order, and never throttles the shell or the subscribers; when
// it falls this far behind, the oldest backlog is dropped except for its effect on the
// screen's modes (the alternate screen and bracketed paste, which the screen reports
// to programs that ask, and on which its text depends).
const maxScreenBacklog = 256 << 10

// During a flood (the backlog was dropped and has not emptied since) the screen gets
// only the newest floodTail bytes of each drop and floodPause between writes: it still
// follows the output and every mode switch, at a bounded share of a core instead of a
// whole one (the emulator was 45% of the host's CPU in a 50 MB flood).
const (
	floodTail  = 16 << 10
	floodPause = 20 * time.Millisecond
)

// screenFeeder owns a Screen's input side: chunks queue here and one goroutine writes
// them to the screen in order.
type screenFeeder struct {
	scr screenWriter

	mu       sync.Mutex // guards queue, size, closed and flooding
	queue    [][]byte
	size     int
	closed   bool
	flooding bool
	wake     chan struct{}
	stopped  chan struct{}
}

// screenWriter is what the feeder feeds: a *screen.Screen.
type screenWriter interface {
	Write(p []byte)
	Close()
}

var _ screenWriter = (*screen.Screen)(nil)

// newScreenFeeder starts feeding scr. A panic while feeding it (the emulator failing
// on some output) stops the feeder and is handed to failed, from the feeder's own
// goroutine: its owner decides what becomes of the screen, and the host goes on.
func newScreenFeeder(scr screenWriter, failed func(f *screenFeeder, reason any)) *screenFeeder {
	f := &screenFeeder{scr: scr, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go f.run(failed)
	return f
}

// feed queues a chunk; it never blocks.
func (f *screenFeeder) feed(p []byte) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.queue = append(f.queue, p)
	f.size += len(p)
	if f.size > maxScreenBacklog {
		f.dropBacklogLocked()
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// dropBacklogLocked replaces all but the newest chunk with the mode changes they
// made, so the screen's modes stay right: a full reset if one came, then the last
// switch of the alternate screen and of bracketed paste (screen.Modes.Replay). The
// dropped chunks are read as one stream, so a switch split between two of them counts.
func (f *screenFeeder) dropBacklogLocked() {
	last := f.queue[len(f.queue)-1]
	if len(last) > floodTail {
		last = last[len(last)-floodTail:]
	}
	f.flooding = true
	var dropped screen.Modes
	for _, chunk := range f.queue[:len(f.queue)-1] {
		dropped.ScanBytes(chunk)
	}
	modes := dropped.Replay()
	clear(f.queue)
	f.queue = f.queue[:0]
	if len(modes) > 0 {
		f.queue = append(f.queue, modes)
	}
	f.queue = append(f.queue, last)
	f.size = len(modes) + len(last)
}

func (f *screenFeeder) run(failed func(f *screenFeeder, reason any)) {
	defer close(f.stopped)
	defer func() {
		if reason := recover(); reason != nil {
			f.mu.Lock()
			f.closed, f.queue = true, nil
			f.mu.Unlock()
			failed(f, reason)
		}
	}()
	for range f.wake {
		for {
			f.mu.Lock()
			if f.closed {
				f.mu.Unlock()
				return
			}
			if len(f.queue) == 0 {
				f.flooding = false
				f.mu.Unlock()
				break
			}
			chunk := f.queue[0]
			f.queue[0] = nil
			f.queue = f.queue[1:]
			f.size -= len(chunk)
			flooding := f.flooding
			f.mu.Unlock()
			f.scr.Write(chunk)
			if flooding {
				time.Sleep(floodPause)
			}
		}
	}
}

// close stops the feeder and closes the screen.
func (f *screenFeeder) close() {
	f.mu.Lock()
	already := f.closed
	f.closed = true
	f.queue = nil
	f.mu.Unlock()
	if already {
		return
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
	<-f.stopped
	f.scr.Close()
}

// abandon lets go of a feeder whose goroutine failed: the screen it fed may be in any
// state, so it is closed as far as it will close, and not used again.
func (f *screenFeeder) abandon() {
	<-f.stopped
	defer func() { _ = recover() }()
	f.scr.Close()
}
