package terminal

import "testing"

func TestModeTrackerFollowsSwitchesAcrossChunks(t *testing.T) {
	m := newModeTracker()
	for _, chunk := range []string{"plain ", "\x1b[?20", "04h prompt \x1b", "[?1049h"} {
		m.scan(chunk)
	}
	if !m.paste || !m.alt {
		t.Fatalf("paste %v alt %v, want both on", m.paste, m.alt)
	}
	select {
	case <-m.whenAlt:
	default:
		t.Fatal("whenAlt did not settle")
	}
	m.scan("\x1b[?1049l\x1b[?2004;1l")
	if m.alt || m.paste {
		t.Fatalf("paste %v alt %v, want both off", m.paste, m.alt)
	}
	m.scan("\x1b[?1047h\x1bc")
	if m.alt {
		t.Fatal("a full reset left the alternate screen on")
	}
}

func TestAsksTheTerminal(t *testing.T) {
	for s, want := range map[string]bool{
		"\x1b[6n":                    true,
		"x\x1b[?6n":                  true,
		"\x1b[c":                     true,
		"\x1b[>0c":                   true,
		"\x1b[?2004$p":               true,
		"\x1b]11;?\x07":              true,
		"\x1b[0m colours \x1b[31m":   false,
		"\x1b]0;title\x07":           false,
		"\x1b[?2004h prompt$ ":       false,
		"no escapes at all":          false,
		"\x1b[2J\x1b[H clear screen": false,
	} {
		if got := asksTheTerminal(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}
