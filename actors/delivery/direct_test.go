package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// socket stands in for a connection's socket under a direct writer: it keeps what
// was written, in order, and fails a test that sees two batches written at once.
type socket struct {
	room    atomic.Bool
	writing atomic.Bool
	overlap atomic.Bool

	mu      sync.Mutex
	written []string
}

func newSocket() *socket {
	s := &socket{}
	s.room.Store(true)
	return s
}

func (s *socket) Room(int) bool { return s.room.Load() }

func (s *socket) Write(frames [][]byte) error { return s.write(frames) }

func (s *socket) write(frames [][]byte) error {
	if !s.writing.CompareAndSwap(false, true) {
		s.overlap.Store(true)
	}
	s.mu.Lock()
	for _, f := range frames {
		s.written = append(s.written, string(f))
	}
	s.mu.Unlock()
	s.writing.Store(false)
	return nil
}

func (s *socket) frames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.written...)
}

// writer is the connection's writer goroutine: Next, write, Wrote, until Next fails.
func (s *socket) writer(o *Outbox) (done <-chan error) {
	c := make(chan error, 1)
	go func() {
		for {
			frames, err := o.Next(context.Background())
			if err != nil {
				c <- err
				return
			}
			_ = s.write(frames)
			o.Wrote()
		}
	}()
	return c
}

// A keystroke's frames, delivered while nothing else is queued, are on the socket
// when Deliver returns: the producer wrote them, and the writer has nothing to do.
func TestOutboxProducerWritesWhileTheWriterIsIdle(t *testing.T) {
	const ch = "ahp-terminal:/t"
	s := newSocket()
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	o.Deliver(ch, []byte(`{"echo":"a"}`))
	o.Deliver(ch, dataFrame(ch, "a", 1))
	if got := s.frames(); len(got) != 2 || got[0] != `{"echo":"a"}` || !strings.Contains(got[1], `"data":"a"`) {
		t.Fatalf("on the socket after Deliver: %q", got)
	}
	if frames, err := o.Next(cancelled()); err == nil {
		t.Fatalf("the writer was left %d frames", len(frames))
	}
}

// With no room in the socket, the producer does not write (it would wait for the
// peer inside a terminal's mailbox); the writer takes the frames, in order.
func TestOutboxWithoutRoomLeavesTheWriteToTheWriter(t *testing.T) {
	s := newSocket()
	s.room.Store(false)
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	o.Send([]byte("one"))
	o.Send([]byte("two"))
	if got := s.frames(); len(got) != 0 {
		t.Fatalf("written without room: %q", got)
	}
	frames, err := o.Next(context.Background())
	if err != nil || len(frames) != 2 || string(frames[0]) != "one" || string(frames[1]) != "two" {
		t.Fatalf("Next = %q, %v; want one, two", frames, err)
	}
}

// A large frame (a flood's) is left to the writer even with room.
func TestOutboxLeavesLargeFramesToTheWriter(t *testing.T) {
	s := newSocket()
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	big := []byte(strings.Repeat("x", directBytes+1))
	o.Send(big)
	if got := s.frames(); len(got) != 0 {
		t.Fatalf("a %d-byte frame was written by its producer", len(big))
	}
	if frames, err := o.Next(context.Background()); err != nil || len(frames) != 1 {
		t.Fatalf("Next = %d frames, %v", len(frames), err)
	}
}

// A flood's chunk to its only subscriber is written by its producer, with room;
// larger than that, or with no room, it is left to the writer.
func TestOutboxSoleSubscriberGetsAFloodsChunkDirectly(t *testing.T) {
	const ch = "ahp-terminal:/t"
	s := newSocket()
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	chunk := dataFrame(ch, strings.Repeat("x", 64<<10), 1)
	o.DeliverAlone(ch, chunk)
	if got := s.frames(); len(got) != 1 || got[0] != string(chunk) {
		t.Fatalf("the producer wrote %d frames, want the chunk", len(got))
	}
	o.DeliverAlone(ch, dataFrame(ch, strings.Repeat("y", directAloneBytes), 2))
	s.room.Store(false)
	o.DeliverAlone(ch, dataFrame(ch, "z", 3))
	if got := s.frames(); len(got) != 1 {
		t.Fatalf("the producer wrote %d frames, want only the first chunk", len(got))
	}
	frames, err := o.Next(context.Background())
	if err != nil || len(frames) != 2 || !strings.Contains(string(frames[0]), `yy"`) || !strings.Contains(string(frames[1]), `"z"`) {
		t.Fatalf("Next = %d frames, %v; want the too-large chunk, then the small one", len(frames), err)
	}
}

// Producers on several goroutines and the writer, with room coming and going and
// frames small and large: every frame is written once, each producer's in the order
// it delivered them, and never two batches at once.
func TestOutboxDirectAndWriterKeepOrder(t *testing.T) {
	s := newSocket()
	o := NewOutbox(OutboxLimits{Bytes: 64 << 20}, nil)
	o.SetDirect(s)
	done := s.writer(o)
	const producers, each = 4, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				f := fmt.Sprintf("%d:%d:", p, i)
				if i%97 == 0 {
					f += strings.Repeat("x", directBytes) // goes by the writer
				}
				if i%50 == 0 {
					s.room.Store(i%100 != 0)
				}
				o.Send([]byte(f))
			}
		}()
	}
	wg.Wait()
	o.Finish(ReasonShutdown)
	select {
	case err := <-done:
		var fin *Finished
		if !errors.As(err, &fin) {
			t.Fatalf("the writer ended with %v, want Finished", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the writer did not flush and finish")
	}
	if s.overlap.Load() {
		t.Fatal("two batches were written at once")
	}
	next := make([]int, producers)
	for _, f := range s.frames() {
		var p, i int
		if _, err := fmt.Sscanf(f, "%d:%d:", &p, &i); err != nil {
			t.Fatalf("frame %.20q: %v", f, err)
		}
		if i != next[p] {
			t.Fatalf("producer %d: frame %d written where %d was due", p, i, next[p])
		}
		next[p]++
	}
	for p, n := range next {
		if n != each {
			t.Fatalf("producer %d: %d frames written, want %d", p, n, each)
		}
	}
}

// A subscribe's answer and the output held behind it go out with the answer first,
// written at Release while the writer is idle.
func TestOutboxReleaseWritesTheAnswerThenTheHeldOutput(t *testing.T) {
	const ch = "ahp-terminal:/t"
	s := newSocket()
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	o.Hold(ch)
	o.Deliver(ch, dataFrame(ch, "prompt$ ", 1))
	if got := s.frames(); len(got) != 0 {
		t.Fatalf("held output written before the answer: %q", got)
	}
	o.Release([]byte(`{"answer":1}`), ch)
	got := s.frames()
	if len(got) != 2 || got[0] != `{"answer":1}` || !strings.Contains(got[1], `"data":"prompt$ "`) {
		t.Fatalf("on the socket after Release: %q", got)
	}
}

// batchSocket counts the writes as well: frames delivered as one batch go out in one.
type batchSocket struct {
	*socket
	writes atomic.Int32
}

func (s *batchSocket) Write(frames [][]byte) error {
	s.writes.Add(1)
	return s.write(frames)
}

// Frames delivered together (an echo and its output from another node) are written
// together, in order, by the producer.
func TestOutboxBatchIsOneWrite(t *testing.T) {
	const ch = "ahp-terminal:/t"
	s := &batchSocket{socket: newSocket()}
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetDirect(s)
	o.DeliverBatch(ch, [][]byte{[]byte(`{"echo":"a"}`), dataFrame(ch, "a", 1)})
	if got := s.frames(); len(got) != 2 || got[0] != `{"echo":"a"}` || !strings.Contains(got[1], `"data":"a"`) {
		t.Fatalf("written %q", got)
	}
	if n := s.writes.Load(); n != 1 {
		t.Fatalf("a batch of two went out in %d writes", n)
	}
}
