package terminal

import "github.com/termhost/termhost/screen"

// modeTracker is screen.Modes in the shape the terminal reads it: the two modes as
// fields, refreshed by scan. Every pseudoterminal terminal has one, while the full
// emulator (megabytes per terminal) is made only when a program asks the terminal
// something or a caller wants the screen's text (see terminal.ensureScreen).
type modeTracker struct {
	screen.Modes
	alt, paste bool
	whenAlt    <-chan struct{}
}

func newModeTracker() *modeTracker {
	m := &modeTracker{}
	m.whenAlt = m.WhenAltScreen()
	return m
}

// scan reads the mode switches in one chunk of output; it reports whether the chunk
// ended a query the terminal must answer (see screen.Modes.Scan).
func (m *modeTracker) scan(s string) (asked bool) {
	asked = m.Scan(s)
	m.alt, m.paste = m.AltScreen(), m.BracketedPaste()
	return asked
}

// asksTheTerminal reports whether output holds a query a terminal answers on the
// program's input: device status and cursor position (CSI … n), device attributes
// (CSI … c), mode reports (CSI … $ p) and colour queries (OSC 4/10/11/12 with "?").
// The terminal's own modeTracker reports the same from scan, across chunks.
func asksTheTerminal(s string) bool {
	var m screen.Modes
	return m.Scan(s)
}
