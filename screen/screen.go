// Package screen owns what the host reads out of a program's output.
//
// Parser is the host's one escape-sequence parser: an incremental tokenizer of
// output after ECMA-48 that carries a sequence split between reads over to the next
// one. Everything that looks at escape sequences reads them with it: Modes, which
// follows the alternate screen and bracketed paste and notices queries without an
// emulator; StripEscapes, which leaves the plain text; and the shell integration's
// mark parser.
//
// Screen is the headless screen of a terminal under a pseudoterminal: a VT emulator
// (github.com/charmbracelet/x/vt) that keeps the grid of cells a real terminal would
// show, so that the host can answer the queries a program sends its terminal and
// read back the visible text. A Screen owns three things: the emulator that every
// chunk of the program's output is fed to, the pipe the emulator writes its answers
// to (cursor position reports, device attributes, mode reports, colour queries), and
// the two goroutines that drain that pipe and hand the answers to the reply
// function, which writes them back to the program's input.
//
// A terminal on pipes has no screen. It holds a nil *Screen, on which every method
// is valid: Text answers "", and Write, Resize and Close do nothing.
package screen

import (
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/vt"
)

// maxPending bounds the answers held for a reply function that has fallen
// behind. A program that floods queries while the reply function cannot
// write to its input would otherwise grow the queue without limit; past the
// bound whole answers are dropped, never parts of one.
const maxPending = 1 << 20

// Screen is a headless terminal screen fed with a program's output.
//
// Write, Resize and Text may be called from any goroutine; the terminal that
// owns the screen calls them from its own. The reply function
// is called from a goroutine the screen owns.
type Screen struct {
	mu     sync.Mutex // guards emu and closed
	emu    *vt.Emulator
	closed bool

	// The answers the emulator wrote, waiting for the reply function.
	qmu     sync.Mutex
	pending []byte
	wake    chan struct{} // capacity 1: something is pending
	done    chan struct{} // closed by Close
	wg      sync.WaitGroup
	reply   func([]byte)
	closing sync.Once
}

// New makes a screen of the given size. reply receives the emulator's
// answers to queries the program made (e.g. ESC[6n cursor position report);
// it is called from a goroutine the screen owns, must not block long, and is
// never called after Close returns. It owns the slice it is given. Answers
// reach it in the order the program asked, possibly several in one call.
// reply may be nil, in which case the answers are read and dropped. reply
// must not call Close.
//
// A size below one column or one row is taken as one.
func New(cols, rows int, reply func([]byte)) *Screen {
	cols, rows = clampSize(cols, rows)
	s := &Screen{
		emu:   vt.NewEmulator(cols, rows),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		reply: reply,
	}
	// Nothing reads the scrollback: the screen answers from what is
	// visible, and the terminal keeps its own output. x/vt cannot turn it
	// off (a size of 0 is ignored) and defaults to 10,000 lines, each a clone
	// of a scrolled-off row, with an O(lines) shift per scroll once full, so
	// keep the least it allows.
	s.emu.SetScrollbackSize(1)
	s.wg.Add(1)
	go s.drain()
	if reply != nil {
		s.wg.Add(1)
		go s.deliver()
	}
	return s
}

func clampSize(cols, rows int) (int, int) {
	return max(cols, 1), max(rows, 1)
}

// drain reads the emulator's answer pipe for as long as it is open. The
// emulator writes an answer synchronously, in the middle of Write, and that
// write blocks until it is read here, so this loop never waits on anything
// but the pipe: the answers are queued and deliver hands them on. A reply
// function that is slow, or blocked on a program that is not reading its
// input, therefore never stalls Write.
func (s *Screen) drain() {
	defer s.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, err := s.emu.Read(buf)
		if n > 0 && s.reply != nil {
			s.qmu.Lock()
			// An answer is written with one pipe write and is far below
			// len(buf), so one read holds whole answers only.
			if len(s.pending)+n <= maxPending {
				s.pending = append(s.pending, buf[:n]...)
			}
			s.qmu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver hands queued answers to the reply function until Close.
func (s *Screen) deliver() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.qmu.Lock()
		p := s.pending
		s.pending = nil
		s.qmu.Unlock()
		select {
		case <-s.done:
			return
		default:
		}
		if len(p) > 0 {
			s.reply(p)
		}
	}
}

// Write feeds the program's output to the screen, in order. A sequence or a
// UTF-8 character split across calls is put back together. It does nothing
// once the screen is closed.
func (s *Screen) Write(p []byte) {
	if s == nil || len(p) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	_, _ = s.emu.Write(p)
}

// Resize changes the screen's size. Text already on the screen is not
// reflowed; what is written afterwards wraps at the new width. A size below
// one column or one row is taken as one.
func (s *Screen) Resize(cols, rows int) {
	if s == nil {
		return
	}
	cols, rows = clampSize(cols, rows)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.emu.Resize(cols, rows)
}

// Text returns the visible screen's current text: its lines joined by "\n",
// trailing spaces trimmed from each line and trailing empty lines dropped.
// After Close it is the text the screen last showed.
func (s *Screen) Text() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	text := s.emu.String() // each line already right-trimmed of spaces
	s.mu.Unlock()
	return strings.TrimRight(text, "\n")
}

// Close stops the screen: later writes are dropped, the goroutines that
// drain the emulator's answers end, and once it returns the reply function
// is not called again. Answers not yet delivered are dropped. It may be
// called more than once.
func (s *Screen) Close() {
	if s == nil {
		return
	}
	s.closing.Do(func() {
		s.mu.Lock()
		s.closed = true
		// Close the emulator's answer pipe rather than the emulator: the
		// drain goroutine's Read then ends with io.EOF, and the emulator's
		// own closed flag, which Read reads unguarded, is never written from
		// this goroutine. Any answer the emulator tries to write from now on
		// fails at once instead of blocking.
		if c, ok := s.emu.InputPipe().(io.Closer); ok {
			_ = c.Close()
		} else {
			_ = s.emu.Close()
		}
		s.mu.Unlock()
		close(s.done)
	})
	s.wg.Wait()
}
