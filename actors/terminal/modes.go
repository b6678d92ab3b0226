package terminal

import "strings"

// modeTracker follows the two screen modes the host is asked about, the alternate
// screen and bracketed paste, from the output alone. It costs a scan for ESC per chunk,
// so every pseudoterminal terminal has one, while the full emulator (megabytes per
// terminal) is made only when a program asks the terminal something or a caller wants
// the screen's text (see terminal.ensureScreen).
type modeTracker struct {
	alt, paste bool
	whenAlt    chan struct{}
	altSeen    bool
	carry      string // the start of a sequence split across chunks
}

func newModeTracker() *modeTracker { return &modeTracker{whenAlt: make(chan struct{})} }

// scan reads the mode switches in one chunk of output.
func (m *modeTracker) scan(s string) {
	if m.carry != "" {
		s = m.carry + s
		m.carry = ""
	}
	for {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 {
			return
		}
		s = s[i:]
		if len(s) < 2 {
			m.carry = s
			return
		}
		switch {
		case s[1] == 'c': // RIS: a full reset leaves both modes off.
			m.alt, m.paste = false, false
			s = s[2:]
			continue
		case s[1] != '[':
			s = s[1:]
			continue
		}
		if len(s) < 3 {
			m.carry = s
			return
		}
		if s[2] != '?' {
			s = s[2:]
			continue
		}
		// ESC [ ? params (h|l)
		j := 3
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
			j++
		}
		if j == len(s) {
			if len(s) < 32 {
				m.carry = s
			}
			return
		}
		if s[j] == 'h' || s[j] == 'l' {
			on := s[j] == 'h'
			for _, p := range strings.Split(s[3:j], ";") {
				switch p {
				case "1049", "1047", "47":
					m.setAlt(on)
				case "2004":
					m.paste = on
				}
			}
		}
		s = s[j:]
	}
}

func (m *modeTracker) setAlt(on bool) {
	m.alt = on
	if on && !m.altSeen {
		m.altSeen = true
		close(m.whenAlt)
	}
}

// asksTheTerminal reports whether output holds a query a terminal answers on the
// program's input: device status and cursor position (CSI … n), device attributes
// (CSI … c), mode reports (CSI … $ p) and colour queries (OSC 4/10/11/12 with "?").
func asksTheTerminal(s string) bool {
	for {
		i := strings.IndexByte(s, 0x1b)
		if i < 0 || i+2 >= len(s) {
			return false
		}
		s = s[i+1:]
		switch s[0] {
		case '[':
			j := 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == '?' || s[j] == '>' || s[j] == '=' || s[j] == '$') {
				j++
			}
			if j < len(s) {
				switch s[j] {
				case 'n', 'c':
					return true
				case 'p':
					if j > 1 && s[j-1] == '$' {
						return true
					}
				}
			}
		case ']':
			end := strings.IndexAny(s, "\x07\x1b")
			if end < 0 {
				end = len(s)
			}
			body := s[1:end]
			if strings.HasSuffix(body, ";?") || strings.Contains(body, ";?;") {
				return true
			}
		}
	}
}
