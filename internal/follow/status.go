package follow

import (
	"fmt"
	"io"
	"sync"
)

// StatusLine writes termhost's own lines, set apart from the terminal's output: each
// starts on a line of its own and is bracketed. A reconnect is one line, begun when
// the connection is lost and ended when it is back.
type StatusLine struct {
	mu    sync.Mutex
	w     io.Writer
	eol   string // "\r\n" while the terminal is raw
	atBOL bool   // the output shown last ended a line
}

// NewStatusLine writes status lines to w, ending each with eol.
func NewStatusLine(w io.Writer, eol string) *StatusLine {
	return &StatusLine{w: w, eol: eol, atBOL: true}
}

// wrote notes output shown on the same screen.
func (s *StatusLine) wrote(data string) {
	s.mu.Lock()
	s.atBOL = data[len(data)-1] == '\n'
	s.mu.Unlock()
}

func (s *StatusLine) prefix() string {
	if s.atBOL {
		return ""
	}
	return s.eol
}

// Line writes one whole status line.
func (s *StatusLine) Line(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%s[termhost: %s]%s", s.prefix(), msg, s.eol)
	s.atBOL = true
}

// begin starts a status line that end finishes.
func (s *StatusLine) begin(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%s[termhost: %s", s.prefix(), msg)
	s.atBOL = false
}

func (s *StatusLine) end(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, " %s]%s", msg, s.eol)
	s.atBOL = true
}
