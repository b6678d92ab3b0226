package screen

import (
	"math/rand"
	"testing"
)

func TestModesAltScreen(t *testing.T) {
	var m Modes
	m.Scan("prompt$ ")
	if m.AltScreen() {
		t.Fatal("AltScreen before any switch")
	}
	if isClosed(m.WhenAltScreen()) {
		t.Fatal("WhenAltScreen closed before any switch")
	}
	m.Scan("\x1b[?1049h")
	if !m.AltScreen() {
		t.Fatal("AltScreen false after ESC[?1049h")
	}
	waitClosed(t, m.WhenAltScreen())
	m.Scan("full screen")
	m.Scan("\x1b[?1049l")
	if m.AltScreen() {
		t.Fatal("AltScreen true after ESC[?1049l")
	}
	// Stays closed once closed.
	waitClosed(t, m.WhenAltScreen())
}

// A program that enters and leaves the alternate screen within one chunk still
// settles WhenAltScreen, asked for before or after.
func TestModesAltScreenInAndOutInOneWrite(t *testing.T) {
	var before, after Modes
	when := before.WhenAltScreen()
	for _, m := range []*Modes{&before, &after} {
		m.Scan("\x1b[?1049hx\x1b[?1049l")
		if m.AltScreen() {
			t.Fatal("AltScreen true after leaving")
		}
	}
	waitClosed(t, when)
	waitClosed(t, after.WhenAltScreen())
}

func TestModesAltScreen1047And47(t *testing.T) {
	for _, on := range []string{"\x1b[?1047h", "\x1b[?47h"} {
		var m Modes
		m.Scan(on)
		if !m.AltScreen() {
			t.Fatalf("AltScreen false after %q", on)
		}
		waitClosed(t, m.WhenAltScreen())
	}
}

func TestModesBracketedPaste(t *testing.T) {
	var m Modes
	if m.BracketedPaste() {
		t.Fatal("bracketed paste on at start")
	}
	m.Scan("\x1b[?2004h")
	if !m.BracketedPaste() {
		t.Fatal("bracketed paste off after ESC[?2004h")
	}
	m.Scan("\x1b[?2004l")
	if m.BracketedPaste() {
		t.Fatal("bracketed paste on after ESC[?2004l")
	}
	m.Scan("\x1b[?2004h\x1bc") // RIS resets it
	if m.BracketedPaste() {
		t.Fatal("bracketed paste on after a full reset")
	}
}

// The input of TestSplitByteByByte, whose screen checks the text and the reply.
func TestModesSplitByteByByte(t *testing.T) {
	var m Modes
	in := "h\u00e9llo \u4e16\u754c\r\n\x1b[1;31mred\x1b[0m\x1b]0;title\x07\x1b[?2004h\x1b[?1049h" +
		"alt\x1b[3;4H\x1b[6n"
	asked := false
	for i := 0; i < len(in); i++ {
		asked = m.Scan(in[i:i+1]) || asked
	}
	if !m.BracketedPaste() {
		t.Fatal("bracketed paste split byte by byte not seen")
	}
	if !m.AltScreen() {
		t.Fatal("alt screen split byte by byte not seen")
	}
	waitClosed(t, m.WhenAltScreen())
	if !asked {
		t.Fatal("ESC[6n split byte by byte not seen")
	}
}

func TestModesFollowsSwitchesAcrossChunks(t *testing.T) {
	var m Modes
	for _, chunk := range []string{"plain ", "\x1b[?20", "04h prompt \x1b", "[?1049h"} {
		m.Scan(chunk)
	}
	if !m.BracketedPaste() || !m.AltScreen() {
		t.Fatalf("paste %v alt %v, want both on", m.BracketedPaste(), m.AltScreen())
	}
	if !isClosed(m.WhenAltScreen()) {
		t.Fatal("WhenAltScreen did not settle")
	}
	m.Scan("\x1b[?1049l\x1b[?2004;1l")
	if m.AltScreen() || m.BracketedPaste() {
		t.Fatalf("paste %v alt %v, want both off", m.BracketedPaste(), m.AltScreen())
	}
	m.Scan("\x1b[?1047h\x1bc")
	if m.AltScreen() {
		t.Fatal("a full reset left the alternate screen on")
	}
}

// Sequences that look like mode switches and are not leave the modes alone.
func TestModesIgnoresOtherSequences(t *testing.T) {
	for _, in := range []string{
		"\x1b[1049h",           // SM, not DECSET
		"\x1b[?01049h",         // another mode number
		"\x1b[?25h\x1b[?1h",    // other private modes
		"\x1b[?2004$h",         // an intermediate byte
		"\x1b[?20\n04h",        // cut short by a control character
		"\x1b[?20\x1b[04h",     // cut short by ESC
		"\x1b]0;\x1b[?2004h\a", // not inside a string: the ESC ends it; see below
		"\x1b c",               // not RIS
	} {
		var m Modes
		m.Scan(in)
		want := in == "\x1b]0;\x1b[?2004h\a"
		if m.AltScreen() || m.BracketedPaste() != want {
			t.Errorf("%q: alt %v paste %v", in, m.AltScreen(), m.BracketedPaste())
		}
	}
}

func TestModesAsked(t *testing.T) {
	for s, want := range map[string]bool{
		"\x1b[6n":                    true,
		"x\x1b[?6n":                  true,
		"\x1b[c":                     true,
		"\x1b[>0c":                   true,
		"\x1b[?2004$p":               true,
		"\x1b]11;?\x07":              true,
		"\x1b]4;1;?\x1b\\":           true,
		"\x1b]4;1;?;2;?\x07":         true,
		"\x1b[0m colours \x1b[31m":   false,
		"\x1b]0;title\x07":           false,
		"\x1b]0;is it?\x07":          false,
		"\x1b[?2004h prompt$ ":       false,
		"no escapes at all":          false,
		"\x1b[2J\x1b[H clear screen": false,
		"\x1b[6":                     false, // not ended yet
		"\x1b[?2004p":                false, // no $
	} {
		var m Modes
		if got := m.Scan(s); got != want {
			t.Errorf("Scan(%q) = %v, want %v", s, got, want)
		}
		var b Modes
		if got := b.ScanBytes([]byte(s)); got != want {
			t.Errorf("ScanBytes(%q) = %v, want %v", s, got, want)
		}
	}
	// A query split across chunks counts in the chunk that ends it.
	var m Modes
	if m.Scan("out \x1b]11;") || !m.Scan("?\x07 more") || m.Scan("after") {
		t.Fatal("a query split across chunks was not counted once, in the chunk that ends it")
	}
}

func TestModesNil(t *testing.T) {
	var m *Modes
	if m.Scan("hello\x1b[?1049h\x1b[?2004h\x1b[6n") || m.ScanBytes([]byte("\x1b[6n")) {
		t.Fatal("a nil Modes saw a query")
	}
	if m.AltScreen() {
		t.Fatal("nil AltScreen true")
	}
	if m.BracketedPaste() {
		t.Fatal("nil BracketedPaste true")
	}
	if !isClosed(m.WhenAltScreen()) {
		t.Fatal("nil WhenAltScreen not closed")
	}
}

func TestModesReplay(t *testing.T) {
	for in, want := range map[string]string{
		"plain \x1b[31mtext\x1b[0m": "",
		"\x1b[?1049h":               "\x1b[?1049h",
		"\x1b[?1049h\x1b[?2004h x \x1b[?1049l\x1b[?1047h": "\x1b[?1047h\x1b[?2004h",
		"\x1b[?2004;1049h":          "\x1b[?1049h\x1b[?2004h",
		"\x1b[?2004h\x1bc\x1b[?47h": "\x1bc\x1b[?47h",
		"\x1b[?2004h\x1bc":          "\x1bc",
		"\x1b[?2004l":               "\x1b[?2004l",
	} {
		var m Modes
		m.Scan(in)
		if got := string(m.Replay()); got != want {
			t.Errorf("Replay after %q = %q, want %q", in, got, want)
		}
		// The replay brings another tracker to the same modes.
		var r Modes
		r.Scan(string(m.Replay()))
		if r.AltScreen() != m.AltScreen() || r.BracketedPaste() != m.BracketedPaste() {
			t.Errorf("replay of %q: alt %v paste %v, want %v %v", in, r.AltScreen(), r.BracketedPaste(), m.AltScreen(), m.BracketedPaste())
		}
	}
}

// However the output is split, Modes ends in the same state and sees the same
// number of chunks with a query.
func TestModesSplitsMatchWhole(t *testing.T) {
	r := rand.New(rand.NewSource(2004))
	in := benchShapes[0].chunk[:4096] + "\x1b[?1049h\x1b]11;?\x07" + benchShapes[2].chunk[:4096] + "\x1b[?2004h\x1b[6n\x1b[?1049l"
	var whole Modes
	if !whole.Scan(in) || whole.AltScreen() || !whole.BracketedPaste() {
		t.Fatalf("whole: asked/alt/paste wrong")
	}
	for range 100 {
		var m Modes
		asked := 0
		for _, c := range randomSplit(r, in) {
			if m.Scan(c) {
				asked++
			}
		}
		if asked < 1 || m.AltScreen() || !m.BracketedPaste() || !isClosed(m.WhenAltScreen()) || string(m.Replay()) != string(whole.Replay()) {
			t.Fatalf("split: asked %d alt %v paste %v replay %q", asked, m.AltScreen(), m.BracketedPaste(), m.Replay())
		}
	}
}
