package agenttools

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/termhost/termhost/screen"
)

// Output limits.
const (
	// ModelMaxLines and ModelMaxBytes cap what one tool answer shows a model: the
	// agent PTY tools spec caps tool output at 2,000 lines / 50 KiB.
	ModelMaxLines = 2000
	ModelMaxBytes = 50 * 1024
	// HostMaxChars is the host tool family's cut: a command's output is "control
	// sequences removed and the last 60,000 characters at most".
	HostMaxChars = 60_000
	// CompletionChars is what a background completion notice carries of the output.
	CompletionChars = 2_000
)

// maxColumn bounds how far right a cursor move may take the cursor past the end of the
// line. A terminal stops the cursor at its right margin; a line here has no margin
// (we keep logical lines, not wrapped rows), so without a bound "ESC [ 99999 C" would
// pad a line with 99,999 spaces.
const maxColumn = 1000

// ForModel shapes raw terminal output (as a PTY wrote it) for a language model:
// control/escape sequences removed; carriage-return redraws folded (a line's text after
// the last bare CR overwrites from column 0, like a terminal does: "10%\r50%\r100%" ->
// "100%", "abcdef\rXY" -> "XYcdef"; CRLF is just a newline); backspaces folded
// ("ab\bc" -> "ac"); other C0 controls except \n and \t removed (see Clean for the
// whole rule); then only the tail is kept within maxLines lines and maxBytes bytes
// (never cutting a UTF-8 character), with a first line marker like
// "[… 1234 earlier lines (56789 bytes) dropped]" when anything was dropped.
//
// The limits hold for the whole answer, the marker included, so a caller can promise
// them to the model; only a maxBytes smaller than the marker itself is exceeded, by the
// marker alone. The marker counts lines and bytes of the cleaned text. When even the
// last line does not fit, its end is kept and the marker says the start of that line
// was dropped too. maxLines/maxBytes <= 0 mean ModelMaxLines/ModelMaxBytes.
func ForModel(raw string, maxLines, maxBytes int) string {
	if maxLines <= 0 {
		maxLines = ModelMaxLines
	}
	if maxBytes <= 0 {
		maxBytes = ModelMaxBytes
	}
	return tail(Clean(raw), maxLines, maxBytes, 0, 0)
}

// ForModelAfter is ForModel for output whose first earlierLines lines and
// earlierBytes bytes were let go before raw (a long command's held output keeps
// only its end): the marker counts them too, and is there whenever they are more
// than none, so the model is told how much it did not see.
func ForModelAfter(raw string, earlierLines, earlierBytes int) string {
	return tail(Clean(raw), ModelMaxLines, ModelMaxBytes, earlierLines, earlierBytes)
}

// HostOutput is what the host tool family answers with: control sequences removed
// (Clean) and the last HostMaxChars characters, with no marker: the host tools' answer
// is specified as exactly that text.
func HostOutput(raw string) string {
	out, _ := LastChars(Clean(raw), HostMaxChars)
	return out
}

// LastChars keeps the last n characters (runes) of s, and reports whether it cut. An
// invalid byte counts as one character, as utf8 decodes it. n <= 0 keeps nothing.
func LastChars(s string, n int) (string, bool) {
	if n <= 0 {
		return "", s != ""
	}
	if len(s) <= n { // a rune is at least one byte
		return s, false
	}
	i := len(s)
	for k := 0; k < n && i > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:], i > 0
}

// Clean is ForModel's cleaning without any cutting: the text a person would read off
// the terminal, line by line.
//
// Escape sequences, control sequences and control strings are read with screen's
// parser (the host's one ECMA-48 parser) and left out. Besides CR and BS, the few
// control sequences that only move the cursor or erase within the current line act on
// it first, because progress bars redraw with them as much as with CR: "\r\x1b[K5%"
// after "10%" must read "5%", not "5%%". Those are EL (CSI K, and DECSEL CSI ? K), CHA
// and HPA (CSI G, CSI `), and CUB and CUF (CSI D, CSI C). Moves to another row (CUU,
// CUP, ...) cannot be followed without a screen and are only removed.
//
// Other C0 controls but \n and \t are removed, and so is DEL, which a terminal ignores
// too. A tab stays one character (we do not know the tab stops). A line that was
// redrawn loses its trailing spaces: they are what "\b \b" and padded progress
// redraws leave where text was erased, blank cells a terminal shows as nothing.
// Invalid UTF-8 becomes U+FFFD, since the text goes to a model as a string.
//
// screen.StripEscapes is not used: it deletes every CR, so "10%\r100%" would come out
// as "10%100%" with nothing left to fold.
func Clean(raw string) string {
	if plain(raw) {
		return raw
	}
	var f folder
	f.out = make([]byte, 0, len(raw))
	var p screen.Parser
	for s := raw; s != ""; {
		tok, n := p.Next(s)
		switch tok.Kind {
		case screen.Text:
			f.text(s[:n])
		case screen.Control:
			f.control(tok.Final)
		case screen.CSI:
			if !tok.Malformed && len(p.Intermediates()) == 0 {
				f.csi(tok.Final, p.Params())
			}
		}
		s = s[n:]
	}
	f.endLine(false)
	return string(f.out)
}

// plain reports whether s is already clean: valid UTF-8 with no control but \n and \t
// and no DEL. Most command output is, and then Clean copies nothing.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}

// folder replays the cursor of one line at a time, as a terminal would move it within
// a row, and appends each finished line to out.
//
// A line is kept in one of two forms. While all its text was written at its end (the
// common case, a CRLF included: the CR only moves the cursor) it is its bytes, already
// in place at out[start:], and text is copied in whole runs. Once the cursor writes or
// erases anywhere else, the line becomes cells, one rune each, and is encoded back into
// out when it ends. Copying runs keeps Clean near memmove speed on ordinary output.
type folder struct {
	out   []byte
	start int // where the current line begins in out
	n     int // in bytes form: the runes of the line

	inCells bool
	cells   []rune // in cells form: the line

	col int // the cursor's column; may be past the line's end
	// redrawn is set once a cell of the line was overwritten or erased, which is
	// when trailing spaces stop being text and become blank cells.
	redrawn bool
}

// width is the line's length in columns.
func (f *folder) width() int {
	if f.inCells {
		return len(f.cells)
	}
	return f.n
}

// toCells turns the line into cells, for a write or an erase that is not at its end.
func (f *folder) toCells() {
	if f.inCells {
		return
	}
	f.cells = f.cells[:0]
	for _, r := range string(f.out[f.start:]) { // valid UTF-8: text() saw to it
		f.cells = append(f.cells, r)
	}
	f.out = f.out[:f.start]
	f.inCells = true
}

func (f *folder) text(s string) {
	if !f.inCells && f.col == f.n && strings.IndexByte(s, 0x7f) < 0 && utf8.ValidString(s) {
		f.out = append(f.out, s...)
		k := utf8.RuneCountInString(s)
		f.n += k
		f.col += k
		return
	}
	f.toCells()
	for _, r := range s { // invalid bytes come out as utf8.RuneError
		if r == 0x7f {
			continue
		}
		f.put(r)
	}
}

// put writes r at the cursor, in cells form.
func (f *folder) put(r rune) {
	for len(f.cells) < f.col {
		f.cells = append(f.cells, ' ')
	}
	if f.col < len(f.cells) {
		f.cells[f.col] = r
		f.redrawn = true
	} else {
		f.cells = append(f.cells, r)
	}
	f.col++
}

func (f *folder) control(c byte) {
	switch c {
	case '\n':
		f.endLine(true)
	case '\r':
		f.col = 0
	case '\b':
		if f.col > 0 {
			f.col--
		}
	case '\t':
		f.text("\t")
	}
}

// csi acts on the control sequences that move the cursor or erase within the line.
func (f *folder) csi(final byte, params []byte) {
	private := len(params) > 0 && params[0] >= '<' && params[0] <= '?'
	if private {
		if final != 'K' || params[0] != '?' { // only DECSEL erases like EL
			return
		}
		params = params[1:]
	}
	n, ok := firstParam(params)
	if !ok {
		return
	}
	switch final {
	case 'K': // EL: 0 to the end, 1 from the start, 2 the whole line
		if n > 2 || (n == 0 && f.col >= f.width()) {
			return // unknown, or nothing to erase
		}
		f.toCells()
		switch n {
		case 0:
			f.cells = f.cells[:f.col]
		case 1:
			for i := 0; i <= f.col && i < len(f.cells); i++ {
				f.cells[i] = ' '
			}
		case 2:
			f.cells = f.cells[:0]
		}
		f.redrawn = true
	case 'G', '`': // CHA, HPA: to column n (1-based, 0 means 1)
		f.col = f.clampRight(max(n, 1) - 1)
	case 'D': // CUB: n left (0 means 1)
		f.col = max(f.col-max(n, 1), 0)
	case 'C': // CUF: n right (0 means 1)
		f.col = f.clampRight(f.col + max(n, 1))
	}
}

// clampRight stops a move right at maxColumn past the line's end.
func (f *folder) clampRight(col int) int {
	return min(col, max(f.width(), f.col, maxColumn))
}

// firstParam reads a control sequence's first parameter: 0 when it is empty; false
// when it is not a number (one too large to be a column is clamped, not refused).
func firstParam(params []byte) (int, bool) {
	n := 0
	for _, c := range params {
		if c == ';' || c == ':' {
			break
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+int(c-'0'), 1<<20)
	}
	return n, true
}

func (f *folder) endLine(newline bool) {
	if f.inCells {
		line := f.cells
		if f.redrawn {
			for len(line) > 0 && line[len(line)-1] == ' ' {
				line = line[:len(line)-1]
			}
		}
		for _, r := range line {
			f.out = utf8.AppendRune(f.out, r)
		}
	}
	if newline {
		f.out = append(f.out, '\n')
	}
	f.start, f.n, f.col, f.inCells, f.redrawn = len(f.out), 0, 0, false, false
}

// countLines counts the lines of text: a last line without its \n counts too.
func countLines(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && text[len(text)-1] != '\n' {
		n++
	}
	return n
}

// tail keeps the end of text within maxLines lines and maxBytes bytes, the marker
// included, preferring whole lines.
func tail(text string, maxLines, maxBytes, earlierLines, earlierBytes int) string {
	total := countLines(text)
	if total <= maxLines && len(text) <= maxBytes && earlierLines == 0 && earlierBytes == 0 {
		return text
	}
	// Room for the marker is set aside at its longest: its counts can only be
	// smaller than the totals, so the real one is no longer.
	room := maxBytes - longestMarker(total+earlierLines, len(text)+earlierBytes) - 1 // and its \n
	keepLines := maxLines - 1

	start, partial := len(text), false
	if room > 0 && keepLines > 0 {
		i := len(text)
		if text[i-1] == '\n' {
			i-- // the last line's own \n belongs to it
		}
		for k := 1; k <= keepLines; k++ {
			s := strings.LastIndexByte(text[:i], '\n') + 1
			if len(text)-s > room {
				if k == 1 {
					// Even the last line is too long: keep its end, from a
					// character's first byte.
					start = len(text) - room
					for start < len(text) && !utf8.RuneStart(text[start]) {
						start++
					}
					partial = true
				}
				break
			}
			start = s
			if s == 0 {
				break
			}
			i = s - 1
		}
	}

	var mark string
	if partial {
		mark = marker(strings.Count(text[:start], "\n")+earlierLines, start+earlierBytes, true)
	} else {
		mark = marker(countLines(text[:start])+earlierLines, start+earlierBytes, false)
	}
	if start == len(text) {
		return mark
	}
	return mark + "\n" + text[start:]
}

// marker is the first line of a cut answer: how many whole lines and how many bytes
// went, and whether the first line kept lost its start.
func marker(lines, bytes int, partial bool) string {
	b := make([]byte, 0, 80)
	b = append(b, "[… "...)
	switch {
	case !partial:
		b = appendLines(b, lines)
		b = append(b, " ("...)
	case lines == 0:
		b = append(b, "the start of the first line below ("...)
	default:
		b = appendLines(b, lines)
		b = append(b, " and the start of the next ("...)
	}
	b = strconv.AppendInt(b, int64(bytes), 10)
	b = append(b, " bytes) dropped]"...)
	return string(b)
}

func appendLines(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " earlier line"...)
	}
	return append(b, " earlier lines"...)
}

func longestMarker(lines, bytes int) int {
	return max(len(marker(lines, bytes, false)), len(marker(lines, bytes, true)), len(marker(0, bytes, true)))
}
