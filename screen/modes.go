package screen

import (
	"bytes"
	"strings"
)

// closedChan is what a nil Modes' WhenAltScreen returns.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Modes follows, from a program's output alone, what the host is asked about a
// pseudoterminal's screen without keeping one: whether the alternate screen is up
// (DEC private modes 1049, 1047 and 47), whether the program asked for bracketed
// paste (2004), and whether the output asks the terminal something it must answer
// on the program's input. It holds a few kilobytes at most and reads a chunk with no
// ESC in it with one IndexByte, where the full emulator holds megabytes and renders
// every character, so a terminal keeps a Modes for its whole life and makes a Screen
// only when something needs one.
//
// A full reset (RIS, ESC c) turns both modes off.
//
// The zero Modes is ready to use. A nil *Modes is a terminal with no screen: both
// modes are off and WhenAltScreen is settled. A Modes is not safe for concurrent use.
type Modes struct {
	p       Parser
	alt     bool
	paste   bool
	altSeen bool
	whenAlt chan struct{} // made on demand; closed once altSeen

	// What Replay gives back: whether a full reset came, and the last switch of
	// each mode since then: the alternate screen's mode number ("" for none) and
	// whether it was on, and the same for bracketed paste.
	reset             bool
	altMode           string
	altOn             bool
	pasteSet, pasteOn bool
}

// AltScreen reports whether the program has the alternate screen up.
func (m *Modes) AltScreen() bool { return m != nil && m.alt }

// BracketedPaste reports whether the program asked for bracketed paste.
func (m *Modes) BracketedPaste() bool { return m != nil && m.paste }

// WhenAltScreen returns a channel closed once the program first switched to the
// alternate screen; it stays closed when the program switches back. On a nil Modes
// it is already closed.
func (m *Modes) WhenAltScreen() <-chan struct{} {
	if m == nil {
		return closedChan
	}
	if m.whenAlt == nil {
		m.whenAlt = make(chan struct{})
		if m.altSeen {
			close(m.whenAlt)
		}
	}
	return m.whenAlt
}

// Scan reads the next chunk of output. It reports whether the chunk ended a query a
// terminal answers on the program's input: device status and cursor position
// (CSI … n), device attributes (CSI … c), mode reports (CSI … $ p) and colour queries
// (OSC 4, 10, 11, 12 and the like with a "?" for a value). A sequence split across
// chunks counts in the chunk that ends it.
func (m *Modes) Scan(s string) (asked bool) {
	if m == nil {
		return false
	}
	return scanModes(m, s, strings.IndexByte)
}

// ScanBytes is Scan for a byte slice.
func (m *Modes) ScanBytes(b []byte) (asked bool) {
	if m == nil {
		return false
	}
	return scanModes(m, b, bytes.IndexByte)
}

func scanModes[T string | []byte](m *Modes, s T, indexByte func(T, byte) int) (asked bool) {
	for len(s) > 0 {
		if m.p.Ground() {
			i := indexByte(s, esc)
			if i < 0 {
				return asked
			}
			s = s[i:]
			if n, final := plainCSI(s); n > 0 && !modesFinal(final) {
				s = s[n:] // colours and cursor moves, most of what output holds
				continue
			}
		}
		tok, n := next(&m.p, s)
		s = s[n:]
		if tok.Kind > Control && m.apply(tok) {
			asked = true
		}
	}
	return asked
}

// modesFinal reports whether a CSI with this final byte may matter to Modes.
func modesFinal(final byte) bool {
	switch final {
	case 'h', 'l', 'n', 'c', 'p':
		return true
	}
	return false
}

// apply follows one escape sequence, the token m.p returned last; it reports whether
// the sequence is a query.
func (m *Modes) apply(t Token) (query bool) {
	if t.Malformed || t.Overflow {
		return false
	}
	switch t.Kind {
	case Escape:
		if t.Final == 'c' && len(m.p.Intermediates()) == 0 {
			m.alt, m.paste = false, false
			m.reset, m.altMode, m.pasteSet = true, "", false
		}
	case CSI:
		switch t.Final {
		case 'h', 'l': // SM, RM; with "?", DECSET and DECRST
			if params := m.p.Params(); len(params) > 0 && params[0] == '?' && len(m.p.Intermediates()) == 0 {
				m.setPrivate(params[1:], t.Final == 'h')
			}
		case 'n', 'c': // DSR, DA
			return len(m.p.Intermediates()) == 0
		case 'p': // DECRQM
			return string(m.p.Intermediates()) == "$"
		}
	case OSC:
		// xterm's colour queries: OSC 4;c;? and OSC 10/11/12;? (the "?" stands
		// where a colour would be set).
		data := m.p.Data()
		return bytes.HasSuffix(data, []byte(";?")) || bytes.Contains(data, []byte(";?;"))
	}
	return false
}

// setPrivate applies DECSET (on) or DECRST to each mode of params.
func (m *Modes) setPrivate(params []byte, on bool) {
	for len(params) > 0 {
		p := params
		if i := bytes.IndexByte(params, ';'); i >= 0 {
			p, params = params[:i], params[i+1:]
		} else {
			params = nil
		}
		switch string(p) {
		case "1049":
			m.setAlt("1049", on)
		case "1047":
			m.setAlt("1047", on)
		case "47":
			m.setAlt("47", on)
		case "2004":
			m.paste, m.pasteSet, m.pasteOn = on, true, on
		}
	}
}

func (m *Modes) setAlt(mode string, on bool) {
	m.alt, m.altMode, m.altOn = on, mode, on
	if on && !m.altSeen {
		m.altSeen = true
		if m.whenAlt != nil {
			close(m.whenAlt)
		}
	}
}

// Replay returns the escape sequences that make the same mode changes the output
// scanned so far made, for a screen that is not shown that output: a full reset if
// one came, then the last switch of the alternate screen and the last of bracketed
// paste after it. It is empty when the output changed no mode.
func (m *Modes) Replay() []byte {
	var b []byte
	if m.reset {
		b = append(b, "\x1bc"...)
	}
	if m.altMode != "" {
		b = decset(append(append(b, "\x1b[?"...), m.altMode...), m.altOn)
	}
	if m.pasteSet {
		b = decset(append(b, "\x1b[?2004"...), m.pasteOn)
	}
	return b
}

func decset(b []byte, on bool) []byte {
	if on {
		return append(b, 'h')
	}
	return append(b, 'l')
}
