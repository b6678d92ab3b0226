package agenttools

import (
	"strings"
	"testing"
)

func TestKeyBytes(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		// Named keys and their aliases.
		{"enter", "\r"},
		{"return", "\r"},
		{"ENTER", "\r"},
		{"tab", "\t"},
		{"shift+tab", "\x1b[Z"},
		{"Shift-Tab", "\x1b[Z"},
		{"escape", "\x1b"},
		{"esc", "\x1b"},
		{"backspace", "\x7f"},
		{"space", " "},
		{" enter ", "\r"},

		// Cursor and editing keys.
		{"up", "\x1b[A"},
		{"down", "\x1b[B"},
		{"right", "\x1b[C"},
		{"left", "\x1b[D"},
		{"home", "\x1b[H"},
		{"end", "\x1b[F"},
		{"pageup", "\x1b[5~"},
		{"PageDown", "\x1b[6~"},
		{"page_up", "\x1b[5~"},
		{"pgdn", "\x1b[6~"},
		{"page up", "\x1b[5~"},
		{"ArrowUp", "\x1b[A"},
		{"ctrl+ArrowLeft", "\x1b[1;5D"},
		{"delete", "\x1b[3~"},
		{"del", "\x1b[3~"},
		{"insert", "\x1b[2~"},

		// Function keys, as xterm sends them.
		{"f1", "\x1bOP"},
		{"f2", "\x1bOQ"},
		{"f3", "\x1bOR"},
		{"F4", "\x1bOS"},
		{"f5", "\x1b[15~"},
		{"f6", "\x1b[17~"},
		{"f7", "\x1b[18~"},
		{"f8", "\x1b[19~"},
		{"f9", "\x1b[20~"},
		{"f10", "\x1b[21~"},
		{"f11", "\x1b[23~"},
		{"f12", "\x1b[24~"},

		// Modified cursor and function keys: CSI num ; 1+mods final.
		{"ctrl+left", "\x1b[1;5D"},
		{"alt+right", "\x1b[1;3C"},
		{"shift+up", "\x1b[1;2A"},
		{"ctrl+shift+end", "\x1b[1;6F"},
		{"ctrl+alt+shift+home", "\x1b[1;8H"},
		{"ctrl+delete", "\x1b[3;5~"},
		{"shift+pageup", "\x1b[5;2~"},
		{"shift+f1", "\x1b[1;2P"},
		{"ctrl+f5", "\x1b[15;5~"},

		// Ctrl and letters, every spelling.
		{"ctrl+a", "\x01"},
		{"ctrl+c", "\x03"},
		{"Ctrl-C", "\x03"},
		{"C-c", "\x03"},
		{"control+d", "\x04"},
		{"CTRL+Z", "\x1a"},
		{"ctrl+shift+c", "\x03"},
		{"ctrl+l", "\x0c"},

		// Ctrl and the other characters.
		{"ctrl+[", "\x1b"},
		{`ctrl+\`, "\x1c"},
		{"ctrl+]", "\x1d"},
		{"ctrl+^", "\x1e"},
		{"ctrl+_", "\x1f"},
		{"ctrl+@", "\x00"},
		{"ctrl+space", "\x00"},
		{"ctrl+?", "\x7f"},
		{"ctrl+backspace", "\b"},

		// Alt sends ESC first.
		{"alt+x", "\x1bx"},
		{"M-x", "\x1bx"},
		{"meta+b", "\x1bb"},
		{"alt+X", "\x1bX"},
		{"alt+.", "\x1b."},
		{"alt+-", "\x1b-"},
		{"alt+ctrl+c", "\x1b\x03"},
		{"ctrl+alt+c", "\x1b\x03"},
		{"alt+enter", "\x1b\r"},
		{"alt+backspace", "\x1b\x7f"},
		{"alt+shift+tab", "\x1b\x1b[Z"},
		{"alt+é", "\x1bé"},

		// A single character sends itself.
		{"a", "a"},
		{"A", "A"},
		{"-", "-"},
		{"+", "+"},
		{"shift+a", "A"},
		{"é", "é"},
	}
	for _, tt := range tests {
		got, err := KeyBytes(tt.name)
		if err != nil {
			t.Errorf("KeyBytes(%q): %v", tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("KeyBytes(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestKeyBytesAllLetters(t *testing.T) {
	for c := byte('a'); c <= 'z'; c++ {
		for _, name := range []string{"ctrl+" + string(c), "Ctrl-" + strings.ToUpper(string(c)), "C-" + string(c)} {
			got, err := KeyBytes(name)
			if err != nil || got != string(c-'a'+1) {
				t.Errorf("KeyBytes(%q) = %q, %v; want %q", name, got, err, string(c-'a'+1))
			}
		}
	}
}

func TestKeyBytesErrors(t *testing.T) {
	tests := []struct {
		name string
		why  string // in the error besides the name, "" for none
	}{
		{"", ""},
		{"   ", ""},
		{"foo", ""},
		{"ctrl+", ""},
		{"ctrl+foo", ""},
		{"hyper+a", ""},
		{"f13", ""},
		{"ctrl+enter", "ctrl has no code for enter"},
		{"ctrl+tab", "ctrl has no code for tab"},
		{"shift+enter", "shift has no code for enter"},
		{"ctrl+shift+space", "no code for that combination"},
		{"ctrl+1", "ctrl has no code"},
		{"ctrl+é", "ctrl has no code"},
		{"shift+1", "keyboard layout"},
		{"ctrl+shift+[", "ctrl has no code"},
	}
	for _, tt := range tests {
		got, err := KeyBytes(tt.name)
		if err == nil {
			t.Errorf("KeyBytes(%q) = %q, want an error", tt.name, got)
			continue
		}
		msg := err.Error()
		for _, want := range []string{`"` + tt.name + `"`, "enter", "ctrl+c", "up", tt.why} {
			if !strings.Contains(msg, want) {
				t.Errorf("KeyBytes(%q) error %q does not say %q", tt.name, msg, want)
			}
		}
	}
}

// TestKeyNames checks that every fixed name the tool description lists is accepted,
// and that the list covers the keys the spec names.
func TestKeyNames(t *testing.T) {
	names := KeyNames()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%q listed twice", n)
		}
		seen[n] = true
		if strings.Contains(n, "<") {
			continue // a pattern
		}
		if _, err := KeyBytes(n); err != nil {
			t.Errorf("listed name %q is refused: %v", n, err)
		}
	}
	for _, want := range []string{"enter", "tab", "shift+tab", "escape", "backspace", "space", "up", "pagedown", "f1", "f12", "ctrl+a", "ctrl+z", "ctrl+@", "ctrl+space", "alt+<key>"} {
		if !seen[want] {
			t.Errorf("KeyNames does not list %q", want)
		}
	}
}
