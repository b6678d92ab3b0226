package screen

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

const deadline = 5 * time.Second

// replies collects what the reply function is handed.
type replies struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{} // gets a token per call
}

func newReplies() *replies {
	return &replies{seen: make(chan struct{}, 1)}
}

func (r *replies) reply(p []byte) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
}

func (r *replies) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// waitFor waits until the collected replies satisfy ok, or fails at the
// deadline.
func (r *replies) waitFor(t *testing.T, ok func(string) bool) string {
	t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		if s := r.String(); ok(s) {
			return s
		}
		select {
		case <-r.seen:
		case <-timer.C:
			t.Fatalf("timed out waiting for replies; have %q", r.String())
		}
	}
}

func newScreen(t *testing.T, cols, rows int, reply func([]byte)) *Screen {
	t.Helper()
	s := New(cols, rows, reply)
	t.Cleanup(s.Close)
	return s
}

func TestText(t *testing.T) {
	s := newScreen(t, 80, 24, nil)
	s.Write([]byte("hello\r\nworld"))
	if got, want := s.Text(), "hello\nworld"; got != want {
		t.Fatalf("Text() = %q, want %q", got, want)
	}
}

func TestTextTrims(t *testing.T) {
	s := newScreen(t, 20, 5, nil)
	s.Write([]byte("a   \r\n\r\n  b  \r\n\r\n"))
	if got, want := s.Text(), "a\n\n  b"; got != want {
		t.Fatalf("Text() = %q, want %q", got, want)
	}
	s2 := newScreen(t, 20, 5, nil)
	if got := s2.Text(); got != "" {
		t.Fatalf("empty screen Text() = %q, want empty", got)
	}
}

func TestTextOverwrite(t *testing.T) {
	s := newScreen(t, 20, 5, nil)
	s.Write([]byte("hello\rj\x1b[2C\x1b[K"))
	if got, want := s.Text(), "jel"; got != want {
		t.Fatalf("Text() = %q, want %q", got, want)
	}
	s.Write([]byte("\x1b[2J\x1b[3;2Hx"))
	if got, want := s.Text(), "\n\n x"; got != want {
		t.Fatalf("Text() = %q, want %q", got, want)
	}
}

func waitClosed(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(deadline):
		t.Fatal("channel not closed before the deadline")
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// The screen shows the alternate screen while a program has it up and the main
// screen again after. Whether the alternate screen is up is Modes' to answer (see
// modes_test.go, which feeds Modes these same writes).
func TestAltBuffer(t *testing.T) {
	s := newScreen(t, 80, 24, nil)
	s.Write([]byte("prompt$ "))
	s.Write([]byte("\x1b[?1049h"))
	s.Write([]byte("full screen"))
	if got, want := s.Text(), "full screen"; got != want {
		t.Fatalf("alt Text() = %q, want %q", got, want)
	}
	s.Write([]byte("\x1b[?1049l"))
	if got, want := s.Text(), "prompt$"; got != want {
		t.Fatalf("main Text() = %q, want %q", got, want)
	}
}

func TestCursorPositionReport(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	s.Write([]byte("\x1b[5;10Hab\x1b[6n"))
	want := "\x1b[5;12R"
	got := r.waitFor(t, func(s string) bool { return len(s) >= len(want) })
	if got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
}

func TestRepliesInOrder(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	var want strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(s.writer(), "\x1b[%d;%dH\x1b[6n", i, i+1)
		fmt.Fprintf(&want, "\x1b[%d;%dR", i, i+1)
	}
	got := r.waitFor(t, func(s string) bool { return len(s) >= want.Len() })
	if got != want.String() {
		t.Fatalf("replies = %q, want %q", got, want.String())
	}
}

// writer adapts a Screen to io.Writer for the tests.
func (s *Screen) writer() writerFunc { return writerFunc(s.Write) }

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func TestSplitByteByByte(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	in := "h\u00e9llo \u4e16\u754c\r\n\x1b[1;31mred\x1b[0m\x1b]0;title\x07\x1b[?2004h\x1b[?1049h" +
		"alt\x1b[3;4H\x1b[6n"
	for i := 0; i < len(in); i++ {
		s.Write([]byte{in[i]})
	}
	// The modes this input switches on are checked, split the same way, in
	// TestModesSplitByteByByte.
	if got, want := s.Text(), "alt"; got != want {
		t.Fatalf("alt Text() = %q, want %q", got, want)
	}
	got := r.waitFor(t, func(s string) bool { return strings.HasSuffix(s, "R") })
	if want := "\x1b[3;4R"; got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
	s.Write([]byte("\x1b[?1049l"))
	if got, want := s.Text(), "h\u00e9llo \u4e16\u754c\nred"; got != want {
		t.Fatalf("main Text() = %q, want %q", got, want)
	}
}

// sizeOf asks the screen its size the way a program does: the cursor is moved as far
// as it goes (CUP stops at the last row and column) and its position is asked for
// (DSR 6), between a save and a restore of the cursor (DECSC, DECRC).
func sizeOf(t *testing.T, s *Screen, r *replies) (cols, rows int) {
	t.Helper()
	n := strings.Count(r.String(), "R")
	s.Write([]byte("\x1b7\x1b[999;999H\x1b[6n\x1b8"))
	got := r.waitFor(t, func(s string) bool { return strings.Count(s, "R") > n })
	last := got[strings.LastIndex(got, "\x1b["):]
	if _, err := fmt.Sscanf(last, "\x1b[%d;%dR", &rows, &cols); err != nil {
		t.Fatalf("cursor report %q: %v", last, err)
	}
	return cols, rows
}

func TestResize(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 10, 5, r.reply)
	if c, r := sizeOf(t, s, r); c != 10 || r != 5 {
		t.Fatalf("size = %d, %d, want 10, 5", c, r)
	}
	s.Write([]byte("abcdefghijklmno"))
	if got, want := s.Text(), "abcdefghij\nklmno"; got != want {
		t.Fatalf("Text() at 10 cols = %q, want %q", got, want)
	}

	s.Resize(5, 5)
	if c, r := sizeOf(t, s, r); c != 5 || r != 5 {
		t.Fatalf("size = %d, %d, want 5, 5", c, r)
	}
	s.Write([]byte("\x1b[2J\x1b[H0123456789xy"))
	if got, want := s.Text(), "01234\n56789\nxy"; got != want {
		t.Fatalf("Text() at 5 cols = %q, want %q", got, want)
	}

	s.Resize(20, 3)
	s.Write([]byte("\x1b[2J\x1b[H0123456789abcdefghijkl"))
	if got, want := s.Text(), "0123456789abcdefghij\nkl"; got != want {
		t.Fatalf("Text() at 20 cols = %q, want %q", got, want)
	}

	s.Resize(0, -1) // clamped, must not panic
	if c, r := sizeOf(t, s, r); c != 1 || r != 1 {
		t.Fatalf("size = %d, %d, want 1, 1", c, r)
	}
}

func TestResizeReportsCursor(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	s.Write([]byte("\x1b[24;80H"))
	s.Resize(10, 4)
	s.Write([]byte("\x1b[6n"))
	got := r.waitFor(t, func(s string) bool { return strings.HasSuffix(s, "R") })
	if want := "\x1b[4;10R"; got != want {
		t.Fatalf("reply = %q, want %q", got, want)
	}
}

func TestNilScreen(t *testing.T) {
	var s *Screen
	s.Write([]byte("hello\x1b[?1049h\x1b[?2004h\x1b[6n"))
	s.Resize(10, 10)
	if got := s.Text(); got != "" {
		t.Fatalf("nil Text() = %q", got)
	}
	s.Close()
	s.Close()
}

func TestCloseIdempotent(t *testing.T) {
	var calls sync.WaitGroup
	calls.Add(1)
	var once sync.Once
	s := New(80, 24, func([]byte) { once.Do(calls.Done) })
	s.Write([]byte("hi\x1b[6n"))
	done := make(chan struct{})
	go func() { calls.Wait(); close(done) }()
	waitClosed(t, done)

	s.Close()
	s.Close()
	// Everything after Close is harmless.
	s.Write([]byte("more\x1b[6n\x1b[?1049h"))
	s.Resize(40, 10)
	// Had the switch to the alternate screen been applied, the screen would be blank.
	if got, want := s.Text(), "hi"; got != want {
		t.Fatalf("Text() after Close = %q, want %q", got, want)
	}
	s.Close()
}

func TestCloseConcurrent(t *testing.T) {
	s := New(80, 24, func([]byte) {})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	s.Write([]byte("x\x1b[6n"))
	wg.Wait()
}

// No reply is made once Close has returned, even while answers are queued
// and the reply function is slow.
func TestNoReplyAfterClose(t *testing.T) {
	var mu sync.Mutex
	closed := false
	bad := false
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	s := New(80, 24, func([]byte) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		mu.Lock()
		if closed {
			bad = true
		}
		mu.Unlock()
	})
	s.Write([]byte("\x1b[6n"))
	waitClosed(t, chanOf(started))
	// The reply function is blocked; queue more answers behind it.
	for range 100 {
		s.Write([]byte("\x1b[6n"))
	}
	closeDone := make(chan struct{})
	go func() { s.Close(); close(closeDone) }()
	// Close waits for the call in progress.
	select {
	case <-closeDone:
		t.Fatal("Close returned while reply was still running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	waitClosed(t, closeDone)
	mu.Lock()
	closed = true
	mu.Unlock()
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if bad {
		t.Fatal("reply called after Close returned")
	}
}

func chanOf(c chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() { <-c; close(out) }()
	return out
}

// A reply function that blocks must not stall Write: the emulator's answers
// are queued, not written through.
func TestBlockedReplyDoesNotStallWrite(t *testing.T) {
	release := make(chan struct{})
	s := New(80, 24, func([]byte) { <-release })
	defer s.Close()
	defer close(release)
	done := make(chan struct{})
	go func() {
		for range 10000 {
			s.Write([]byte("\x1b[6n"))
		}
		close(done)
	}()
	waitClosed(t, done)
}

func TestFloodDoesNotDeadlock(t *testing.T) {
	r := newReplies()
	s := New(80, 24, r.reply)
	const size = 1 << 20
	var out bytes.Buffer
	queries := 0
	line := 0
	for out.Len() < size {
		line++
		fmt.Fprintf(&out, "line %d \x1b[1;3%dmcolour\x1b[0m %s\r\n", line, line%8, strings.Repeat("x", line%100))
		if line%3 == 0 {
			out.WriteString("\x1b[6n")
			queries++
		}
	}
	data := out.Bytes()

	done := make(chan struct{})
	go func() {
		defer close(done)
		// Feed in uneven chunks, splitting sequences anywhere.
		for i, n := 0, 1; i < len(data); n = n*7%4093 + 1 {
			end := min(i+n, len(data))
			s.Write(data[i:end])
			i = end
		}
	}()
	// The deadline is for a deadlock, not for speed: every line scrolls,
	// which x/vt does cell by cell, and the race detector slows that a lot.
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("feeding the flood did not finish")
	}

	got := r.waitFor(t, func(s string) bool { return strings.Count(s, "R") >= queries })
	if n := strings.Count(got, "R"); n != queries {
		t.Fatalf("got %d replies, want %d", n, queries)
	}
	if !strings.HasPrefix(got, "\x1b[") {
		t.Fatalf("replies start %q", got[:min(len(got), 20)])
	}

	closed := make(chan struct{})
	go func() { s.Close(); s.Close(); close(closed) }()
	waitClosed(t, closed)
}

// A flood with nobody delivering replies quickly, closed in the middle.
func TestFloodThenCloseWhileReplyBlocked(t *testing.T) {
	release := make(chan struct{})
	s := New(80, 24, func([]byte) {
		select {
		case <-release:
		case <-time.After(time.Millisecond):
		}
	})
	chunk := []byte(strings.Repeat("\x1b[6n", 256))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range (1 << 18) / len(chunk) {
			s.Write(chunk)
		}
		s.Close()
	}()
	// The deadline is for a deadlock, not for speed. Every query's answer
	// is a synchronous pipe write that waits for the drain goroutine, so the
	// flood is one goroutine hand-off per query: with the race detector on a
	// loaded machine, 1 MiB of queries (262,144 hand-offs, about a second on
	// a quiet one) outlasted the 5 s deadline, which was this test's flake.
	// 64 Ki queries still outrun a reply that takes a millisecond per call.
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the flood and Close did not finish while the reply was blocked")
	}
	close(release)
	s.Close()
}

func TestOtherQueriesAnswered(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	s.Write([]byte("\x1b[c"))
	got := r.waitFor(t, func(s string) bool { return strings.HasSuffix(s, "c") })
	if !strings.HasPrefix(got, "\x1b[?") {
		t.Fatalf("DA1 reply = %q", got)
	}
}

func TestConcurrentReaders(t *testing.T) {
	r := newReplies()
	s := newScreen(t, 80, 24, r.reply)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.Text()
		}
	}()
	for i := range 500 {
		fmt.Fprintf(s.writer(), "%d\x1b[?2004h\x1b[?1049h\x1b[6n\x1b[?1049l\r\n", i)
	}
	close(stop)
	wg.Wait()
}

// BenchmarkScreenWrite feeds a screen the two shapes of output it mostly
// gets: a stream of coloured lines that scrolls (a build log, ls -l), and a
// full-screen program redrawing in place.
func BenchmarkScreenWrite(b *testing.B) {
	var scroll bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&scroll, "\x1b[1;3%dm%3d\x1b[0m %s drwxr-xr-x  2 user group 4096 Jan  1 00:00 some-file-name.go\r\n",
			i%8, i, "\u00e9\u4e16")
	}
	var redraw bytes.Buffer
	redraw.WriteString("\x1b[?1049h")
	for y := range 40 {
		fmt.Fprintf(&redraw, "\x1b[%d;1H\x1b[7m%3d\x1b[0m %s\x1b[K", y+1, y, strings.Repeat("text ", 20))
	}
	redraw.WriteString("\x1b[40;1H\x1b[6n")

	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"scroll", scroll.Bytes()},
		{"redraw", redraw.Bytes()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(120, 40, func([]byte) {})
			defer s.Close()
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				s.Write(bc.data)
			}
		})
	}
}

// With no reply function the answers are still drained, so queries never
// block Write.
func TestNilReplyDrains(t *testing.T) {
	s := newScreen(t, 80, 24, nil)
	done := make(chan struct{})
	go func() {
		for range 1000 {
			s.Write([]byte("\x1b[6n\x1b[c"))
		}
		close(done)
	}()
	waitClosed(t, done)
}
