package agenttools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The bytes are what xterm sends in its default modes (normal cursor keys, VT220-style
// function keys), which is what a shell and most programs under TERM=xterm-256color
// expect. A program that switches to application cursor keys (DECCKM) also reads the
// normal form, as readline and vim do.

// simpleKeys are the named keys that send one fixed sequence and, with alt, that
// sequence after ESC (xterm's metaSendsEscape, what readline's M- bindings read).
var simpleKeys = map[string]string{
	"enter":     "\r", // a terminal's Enter is CR; the tty's ICRNL makes it \n
	"return":    "\r",
	"tab":       "\t",
	"escape":    "\x1b",
	"esc":       "\x1b",
	"backspace": "\x7f", // xterm's default backarrowKey: DEL, the tty's VERASE
	"space":     " ",
}

// specialKey is a cursor, editing or function key. Unmodified it sends plain; with
// shift, alt or ctrl it sends xterm's modified form "ESC [ num ; m final", where
// m = 1 + shift(1) + alt(2) + ctrl(4) (xterm ctlseqs, "PC-Style Function Keys").
type specialKey struct {
	plain string
	num   string
	final byte
}

var specialKeys = map[string]specialKey{
	"up":       {"\x1b[A", "1", 'A'},
	"down":     {"\x1b[B", "1", 'B'},
	"right":    {"\x1b[C", "1", 'C'},
	"left":     {"\x1b[D", "1", 'D'},
	"home":     {"\x1b[H", "1", 'H'},
	"end":      {"\x1b[F", "1", 'F'},
	"insert":   {"\x1b[2~", "2", '~'},
	"delete":   {"\x1b[3~", "3", '~'},
	"pageup":   {"\x1b[5~", "5", '~'},
	"pagedown": {"\x1b[6~", "6", '~'},
	"f1":       {"\x1bOP", "1", 'P'}, // F1–F4 are SS3 unmodified, CSI 1;m modified
	"f2":       {"\x1bOQ", "1", 'Q'},
	"f3":       {"\x1bOR", "1", 'R'},
	"f4":       {"\x1bOS", "1", 'S'},
	"f5":       {"\x1b[15~", "15", '~'},
	"f6":       {"\x1b[17~", "17", '~'}, // 16 and 22 are skipped, as on a VT220
	"f7":       {"\x1b[18~", "18", '~'},
	"f8":       {"\x1b[19~", "19", '~'},
	"f9":       {"\x1b[20~", "20", '~'},
	"f10":      {"\x1b[21~", "21", '~'},
	"f11":      {"\x1b[23~", "23", '~'},
	"f12":      {"\x1b[24~", "24", '~'},
}

// keyAliases are other spellings of a named key, looked up after case folding and
// after '_' and ' ' are taken out ("Page_Up", "page up").
var keyAliases = map[string]string{
	"ret":  "enter",
	"cr":   "enter",
	"del":  "delete",
	"ins":  "insert",
	"pgup": "pageup",
	"pgdn": "pagedown",
	"bs":   "backspace",
	"spc":  "space",
	// KeyboardEvent.key's names, which an agent that knows the web may write.
	"arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right",
}

// ctrlChars are the control characters ctrl makes of the characters that are not
// letters: ctrl keeps a character's low five bits (ctrl+@ is NUL, ctrl+[ is ESC), and
// ctrl+? is DEL, as xterm and the VT100 send them.
var ctrlChars = map[rune]string{
	'@': "\x00", ' ': "\x00",
	'[': "\x1b", '\\': "\x1c", ']': "\x1d", '^': "\x1e", '_': "\x1f",
	'?': "\x7f",
}

// modifierNames are the accepted spellings of the modifiers, Emacs's C- and M- among
// them.
var modifierNames = map[string]int{
	"ctrl": modCtrl, "control": modCtrl, "c": modCtrl,
	"alt": modAlt, "meta": modAlt, "m": modAlt, "option": modAlt, "opt": modAlt,
	"shift": modShift,
}

const (
	modShift = 1 << iota
	modAlt
	modCtrl
)

// KeyBytes turns a key name into the bytes a terminal sends for it. Names are
// case-insensitive, '-' and '+' both accepted as separators ("ctrl+c", "Ctrl-C",
// "C-c"); modifiers (ctrl, alt, shift) come first, in any order.
//
//   - enter/return "\r", tab "\t", shift+tab "\x1b[Z", escape/esc "\x1b", backspace
//     "\x7f", space " ";
//   - up/down/right/left "\x1b[A/B/C/D", home "\x1b[H", end "\x1b[F", pageup
//     "\x1b[5~", pagedown "\x1b[6~", delete "\x1b[3~", insert "\x1b[2~", f1..f12 as
//     xterm sends them; with shift, alt or ctrl these take xterm's modified form
//     (ctrl+left "\x1b[1;5D", shift+f5 "\x1b[15;2~");
//   - ctrl+a..ctrl+z (0x01..0x1a, shift ignored), ctrl+[ ctrl+\ ctrl+] ctrl+^ ctrl+_
//     (0x1b..0x1f), ctrl+@/ctrl+space (0x00), ctrl+? (0x7f), ctrl+backspace (0x08);
//   - a single character sends itself, with shift a letter is upper case;
//   - alt+<key> sends "\x1b" then what the key sends without alt ("alt+x" "\x1bx",
//     "alt+ctrl+c" "\x1b\x03", "alt+backspace" "\x1b\x7f"). A single character keeps
//     its case: "alt+X" is "\x1bX".
//
// An unknown name, or a combination no terminal has a code for (ctrl+enter,
// shift+1), is an error naming it and listing a few known ones.
func KeyBytes(name string) (string, error) {
	rest := strings.TrimSpace(name)
	mods := 0
	for {
		i := strings.IndexAny(rest, "+-")
		if i <= 0 || i == len(rest)-1 {
			break
		}
		m, ok := modifierNames[strings.ToLower(rest[:i])]
		if !ok {
			break
		}
		mods |= m
		rest = rest[i+1:]
	}
	if rest == "" {
		return "", keyError(name, "")
	}
	alt := mods&modAlt != 0

	if r, size := utf8.DecodeRuneInString(rest); size == len(rest) && r != utf8.RuneError {
		b, err := charKey(name, r, mods&^modAlt)
		if err != nil {
			return "", err
		}
		if alt {
			b = "\x1b" + b
		}
		return b, nil
	}

	key := strings.NewReplacer("_", "", " ", "").Replace(strings.ToLower(rest))
	if a, ok := keyAliases[key]; ok {
		key = a
	}
	if k, ok := specialKeys[key]; ok {
		if mods == 0 {
			return k.plain, nil
		}
		return "\x1b[" + k.num + ";" + strconv.Itoa(1+mods) + string(k.final), nil
	}
	b, ok := simpleKeys[key]
	if !ok {
		return "", keyError(name, "")
	}
	switch mods &^ modAlt {
	case 0:
	case modShift:
		if key != "tab" {
			return "", keyError(name, "shift has no code for "+key)
		}
		b = "\x1b[Z" // CBT, back tab
	case modCtrl:
		switch key {
		case "space":
			b = "\x00"
		case "backspace":
			b = "\b" // what xterm and most terminals send for ctrl+backspace
		default:
			return "", keyError(name, "ctrl has no code for "+key)
		}
	default:
		return "", keyError(name, "no code for that combination")
	}
	if alt {
		b = "\x1b" + b
	}
	return b, nil
}

// charKey is what a single character sends with shift and ctrl (not alt).
func charKey(name string, r rune, mods int) (string, error) {
	lower := r | 0x20 // ASCII letters only; checked below
	isLetter := r < utf8.RuneSelf && lower >= 'a' && lower <= 'z'
	switch {
	case mods == 0:
		return string(r), nil
	case mods&modCtrl != 0:
		if isLetter { // shift changes nothing: ctrl+A and ctrl+a are both SOH
			return string(byte(lower - 'a' + 1)), nil
		}
		if b, ok := ctrlChars[r]; ok && mods == modCtrl {
			return b, nil
		}
		return "", keyError(name, fmt.Sprintf("ctrl has no code for %q", r))
	default: // shift
		if isLetter {
			return string(byte(lower - 0x20)), nil
		}
		return "", keyError(name, fmt.Sprintf("shift+%q depends on the keyboard layout; send the character itself", r))
	}
}

// knownExamples is what an error offers: the commonest names an agent needs.
const knownExamples = "enter, tab, escape, backspace, up, down, left, right, pageup, f1, ctrl+c, ctrl+d, alt+x"

func keyError(name, why string) error {
	if why != "" {
		return fmt.Errorf("unknown key %q (%s): known keys include %s; see the list of key names", name, why, knownExamples)
	}
	return fmt.Errorf("unknown key %q: known keys include %s; see the list of key names", name, knownExamples)
}

// KeyNames lists the accepted names, for a tool's description: every fixed name in
// its preferred spelling, then the patterns of the modifier combinations ("alt+<key>").
// Aliases (return, esc, del, pgup, C-c, ...) are accepted but not listed.
func KeyNames() []string {
	names := []string{
		"enter", "tab", "shift+tab", "escape", "backspace", "space",
		"up", "down", "right", "left", "home", "end", "pageup", "pagedown", "delete", "insert",
	}
	for i := 1; i <= 12; i++ {
		names = append(names, "f"+strconv.Itoa(i))
	}
	for c := 'a'; c <= 'z'; c++ {
		names = append(names, "ctrl+"+string(c))
	}
	names = append(names,
		"ctrl+[", `ctrl+\`, "ctrl+]", "ctrl+^", "ctrl+_", "ctrl+@", "ctrl+space", "ctrl+?", "ctrl+backspace",
		"alt+<key>",
		"shift|alt|ctrl+<up, down, right, left, home, end, pageup, pagedown, delete, insert or f1..f12>",
	)
	return names
}
