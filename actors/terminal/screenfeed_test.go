package terminal

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// A backlog that is dropped leaves the newest chunk's tail and the mode changes the
// dropped chunks made, read as one stream.
func TestDropBacklogKeepsModeChanges(t *testing.T) {
	filler := strings.Repeat("\x1b[01;34mdir\x1b[0m\r\n", 1000)
	cases := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"none", []string{filler, filler}, ""},
		{"in order, last of each", []string{"\x1b[?1049h" + filler + "\x1b[?2004h", filler + "\x1b[?1049l\x1b[?1047h"}, "\x1b[?1047h\x1b[?2004h"},
		{"split between chunks", []string{filler + "\x1b[?20", "04h" + filler + "\x1b", "[?1049h"}, "\x1b[?1049h\x1b[?2004h"},
		{"several in one", []string{filler + "\x1b[?2004;1049h"}, "\x1b[?1049h\x1b[?2004h"},
		{"after a full reset", []string{"\x1b[?2004h" + filler + "\x1bc", filler + "\x1b[?47h"}, "\x1bc\x1b[?47h"},
	}
	for _, c := range cases {
		f := &screenFeeder{}
		for _, ch := range c.chunks {
			f.queue = append(f.queue, []byte(ch))
		}
		last := []byte(strings.Repeat("y", floodTail+10) + "tail")
		f.queue = append(f.queue, last)
		f.dropBacklogLocked()
		var got []string
		for _, q := range f.queue {
			got = append(got, string(q))
		}
		wantQueue := []string{c.want, string(last[len(last)-floodTail:])}
		if c.want == "" {
			wantQueue = wantQueue[1:]
		}
		if strings.Join(got, "|") != strings.Join(wantQueue, "|") {
			t.Errorf("%s: queue %.80q, want %.80q", c.name, got, wantQueue)
		}
		size := 0
		for _, q := range f.queue {
			size += len(q)
		}
		if f.size != size || !f.flooding {
			t.Errorf("%s: size %d of %d, flooding %v", c.name, f.size, size, f.flooding)
		}
	}
}

// A second drop reads the first one's mode changes with the rest, so they are not lost.
func TestDropBacklogTwice(t *testing.T) {
	f := &screenFeeder{}
	f.queue = [][]byte{[]byte("\x1b[?1049h"), []byte("x")}
	f.dropBacklogLocked()
	f.queue = append(f.queue, []byte("\x1b[?2004h"), []byte("tail"))
	f.dropBacklogLocked()
	if len(f.queue) != 2 || !bytes.Equal(f.queue[0], []byte("\x1b[?1049h\x1b[?2004h")) || string(f.queue[1]) != "tail" {
		t.Fatalf("queue %q", f.queue)
	}
}

// breakingScreen is a screen whose emulator fails on the byte '!'.
type breakingScreen struct {
	mu     sync.Mutex
	wrote  []byte
	closed bool
}

func (s *breakingScreen) Write(p []byte) {
	if bytes.IndexByte(p, '!') >= 0 {
		panic("the emulator failed")
	}
	s.mu.Lock()
	s.wrote = append(s.wrote, p...)
	s.mu.Unlock()
}

func (s *breakingScreen) Close() { s.mu.Lock(); s.closed = true; s.mu.Unlock() }

// TestScreenFeederPanicIsHandedOver: a panic while feeding the screen stops the
// feeder and reaches its owner, with the feeder it came from; nothing is fed after
// it, and the process goes on.
func TestScreenFeederPanicIsHandedOver(t *testing.T) {
	scr := &breakingScreen{}
	type failure struct {
		f      *screenFeeder
		reason any
	}
	failed := make(chan failure, 1)
	f := newScreenFeeder(scr, func(f *screenFeeder, reason any) { failed <- failure{f, reason} })
	f.feed([]byte("fine "))
	f.feed([]byte("then!"))
	select {
	case got := <-failed:
		if got.f != f || got.reason != "the emulator failed" {
			t.Fatalf("handed over %+v", got)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the feeder's panic was never handed over")
	}
	f.feed([]byte("after"))
	f.abandon()
	scr.mu.Lock()
	defer scr.mu.Unlock()
	if string(scr.wrote) != "fine " || !scr.closed {
		t.Fatalf("the screen got %q (closed %v); want only what came before the failure, then closed", scr.wrote, scr.closed)
	}
}
