package agenttools

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"plain text is returned as is", "hello\nworld\n", "hello\nworld\n"},
		{"tab kept", "a\tb", "a\tb"},
		{"empty", "", ""},

		// Carriage returns.
		{"progress bar", "10%\r50%\r100%", "100%"},
		{"progress bar then newline", "10%\r50%\r100%\ndone\n", "100%\ndone\n"},
		{"shorter redraw overwrites from column 0", "abcdef\rXY", "XYcdef"},
		{"CRLF is a newline", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"CR CR LF is a newline", "one\r\r\ntwo", "one\ntwo"},
		{"trailing CR keeps the line", "abc\r", "abc"},
		{"padded redraw loses the padding", "downloading 10%\rdone           \n", "done\n"},
		{"short padding leaves what it did not cover", "downloading 10%\rdone          \n", "done          %\n"},
		{"spaces of a line never redrawn stay", "a  \nb", "a  \nb"},
		{"pip-style bar", "\r|██        | 20%\r|█████     | 50%\r|██████████| 100%\r\n", "|██████████| 100%\n"},
		{"multibyte cells", "héllo\rHÉ", "HÉllo"},

		// Backspaces.
		{"backspace overwrites", "ab\bc", "ac"},
		{"backspace erase idiom", "abd\b \b", "ab"},
		{"backspace at column 0 stays", "\b\bx", "x"},
		{"backspace without a write moves only", "ab\b", "ab"},
		{"backspace over a multibyte character", "aé\bz", "az"},
		{"readline retype", "$ lsx\b \bl\n", "$ lsl\n"},

		// Other controls.
		{"bell and NUL dropped", "a\x07b\x00c", "abc"},
		{"vertical tab and form feed dropped", "a\vb\fc", "abc"},
		{"DEL dropped", "a\x7fb", "ab"},
		{"invalid UTF-8 replaced", "a\xffb", "a\uFFFDb"},

		// Escape sequences.
		{"colors", "\x1b[1;31merror\x1b[0m: bad\n", "error: bad\n"},
		{"256 and truecolor", "\x1b[38;5;208mx\x1b[48;2;1;2;3my\x1b[m", "xy"},
		{"OSC title with BEL", "\x1b]0;my title\x07prompt$ ", "prompt$ "},
		{"OSC title with ST", "\x1b]2;title\x1b\\text", "text"},
		{"OSC 133 marks", "\x1b]133;A\x07$ \x1b]133;B\x07ls\n\x1b]133;C\x07out\n\x1b]133;D;0\x07", "$ ls\nout\n"},
		{"hyperlink", "\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"cursor up and position removed", "a\x1b[2Ab\x1b[10;5Hc\x1b[Hd", "abcd"},
		{"mode switches removed", "\x1b[?25l\x1b[?1049h\x1b[?2004hx\x1b[?25h", "x"},
		{"charset designation removed", "\x1b(Bx\x1b)0y", "xy"},
		{"keypad mode removed", "\x1b=x\x1b>", "x"},
		{"sequence cut off at the end", "text\x1b[31", "text"},
		{"string cut off at the end", "text\x1b]0;tit", "text"},
		{"DCS removed", "a\x1bP1$r0m\x1b\\b", "ab"},

		// Sequences that redraw within the line.
		{"CR then erase line", "10%\r\x1b[K5%", "5%"},
		{"erase whole line then CR", "10%\x1b[2K\r5%", "5%"},
		{"erase to start keeps the rest", "abcdef\x1b[3D\x1b[1K", "    ef"},
		{"DECSEL erases like EL", "10%\r\x1b[?K5%", "5%"},
		{"CHA to column 1", "10%\x1b[1G\x1b[0K7%", "7%"},
		{"CHA default", "abc\x1b[Gx", "xbc"},
		{"HPA", "abc\x1b[2`x", "axc"},
		{"cursor back", "abc\x1b[2Dx", "axc"},
		{"cursor back past the start stops", "abc\x1b[9Dx", "xbc"},
		{"cursor forward pads", "a\x1b[3Cb", "a   b"},
		{"cursor forward huge is bounded", "a\x1b[999999Cb", "a" + strings.Repeat(" ", maxColumn-1) + "b"},
		{"erase with an unknown mode is ignored", "abc\r\x1b[5Kx", "xbc"},
		{"erase with a malformed parameter is ignored", "abc\r\x1b[2?Kx", "xbc"},
		{"private cursor move ignored", "abc\x1b[>2Dx", "abcx"},
		{"move with an intermediate ignored", "abc\x1b[2 Dx", "abcx"},
		{"erase does not cross lines", "one\ntwo\x1b[2K\rthree", "one\nthree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.raw); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestForModelKeepsWhatFits(t *testing.T) {
	raw := "\x1b[32mok\x1b[0m\r\n"
	if got := ForModel(raw, 0, 0); got != "ok\n" {
		t.Errorf("ForModel = %q, want %q", got, "ok\n")
	}
}

func TestForModelTail(t *testing.T) {
	lines := func(from, to int) string { // "lFROM\n" ... "lTO\n"
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "l%d\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name               string
		raw                string
		maxLines, maxBytes int
		want               string
	}{
		{
			name: "by lines", raw: lines(1, 10), maxLines: 4, maxBytes: 1000,
			want: "[… 7 earlier lines (21 bytes) dropped]\n" + lines(8, 10),
		},
		{
			name: "by lines, no final newline", raw: strings.TrimSuffix(lines(1, 10), "\n"), maxLines: 3, maxBytes: 1000,
			want: "[… 8 earlier lines (24 bytes) dropped]\nl9\nl10",
		},
		{
			name: "exactly at the limits is not cut", raw: lines(1, 5), maxLines: 5, maxBytes: len(lines(1, 5)),
			want: lines(1, 5),
		},
		{
			// 100 lines "lN\n", 9*3+90*4+5 = 392 bytes. The marker's room is
			// reserved at its longest, and its \n, leaving 30 bytes for lines:
			// l95..l100 take 4*5+5 = 25, l94 makes it 29, l93 would make 33.
			name: "by bytes keeps whole lines", raw: lines(1, 100), maxLines: 1000,
			maxBytes: longestMarker(100, 392) + 1 + 30,
			want:     "[… 93 earlier lines (363 bytes) dropped]\n" + lines(94, 100),
		},
		{
			name: "CR folding happens before counting", raw: "a\rb\rc\nd\r\n", maxLines: 1000, maxBytes: 1000,
			want: "c\nd\n",
		},
		{
			name: "marker only when one line is allowed", raw: lines(1, 3), maxLines: 1, maxBytes: 1000,
			want: "[… 3 earlier lines (9 bytes) dropped]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForModel(tt.raw, tt.maxLines, tt.maxBytes)
			if got != tt.want {
				t.Errorf("ForModel(%q, %d, %d) =\n%q\nwant\n%q", tt.raw, tt.maxLines, tt.maxBytes, got, tt.want)
			}
		})
	}
}

// Output let go before what is held is counted in the marker, which is there even
// when what is held fits.
func TestForModelAfterCountsWhatWentBefore(t *testing.T) {
	if got, want := ForModelAfter("a\r\nb\r\n", 10, 40), "[… 10 earlier lines (40 bytes) dropped]\na\nb\n"; got != want {
		t.Errorf("what fits: %q, want %q", got, want)
	}
	var held strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&held, "%d\n", i)
	}
	got := ForModelAfter(held.String(), 5, 50)
	first, rest, _ := strings.Cut(got, "\n")
	// 1,999 lines are kept beside the marker: 1,001 held lines go, and 5 went before.
	if keptLines := strings.Count(rest, "\n"); keptLines != ModelMaxLines-1 {
		t.Fatalf("%d lines kept, want %d", keptLines, ModelMaxLines-1)
	}
	goneBytes := len(held.String()) - len(rest) + 50
	if want := fmt.Sprintf("[… 1006 earlier lines (%d bytes) dropped]", goneBytes); first != want {
		t.Errorf("marker %q, want %q", first, want)
	}
	if ForModelAfter("x\n", 0, 0) != "x\n" {
		t.Error("with nothing gone before, ForModelAfter is ForModel")
	}
}

func TestMarker(t *testing.T) {
	tests := []struct {
		lines, bytes int
		partial      bool
		want         string
	}{
		{1234, 56789, false, "[… 1234 earlier lines (56789 bytes) dropped]"},
		{1, 2, false, "[… 1 earlier line (2 bytes) dropped]"},
		{1, 9, true, "[… 1 earlier line and the start of the next (9 bytes) dropped]"},
		{0, 9, true, "[… the start of the first line below (9 bytes) dropped]"},
	}
	for _, tt := range tests {
		if got := marker(tt.lines, tt.bytes, tt.partial); got != tt.want {
			t.Errorf("marker(%d, %d, %v) = %q, want %q", tt.lines, tt.bytes, tt.partial, got, tt.want)
		}
	}
}

func TestForModelLongLastLineKeepsItsEnd(t *testing.T) {
	// One line of 2,000 three-byte characters, and a budget that lands inside one:
	// the cut moves forward to the next character's first byte.
	long := strings.Repeat("€", 2000)
	raw := "first\n" + long
	const maxBytes = 200
	got := ForModel(raw, 100, maxBytes)
	if len(got) > maxBytes {
		t.Fatalf("len = %d, over %d", len(got), maxBytes)
	}
	mark, kept, ok := strings.Cut(got, "\n")
	if !ok {
		t.Fatalf("no marker line in %q", got)
	}
	if !utf8.ValidString(kept) || strings.Trim(kept, "€") != "" || kept == "" {
		t.Fatalf("kept %q, want a run of whole €", kept)
	}
	wantMark := fmt.Sprintf("[… 1 earlier line and the start of the next (%d bytes) dropped]", len(raw)-len(kept))
	if mark != wantMark {
		t.Errorf("marker %q, want %q", mark, wantMark)
	}

	// With no earlier line the marker says only that the start went.
	got = ForModel(long, 100, maxBytes)
	mark, kept, _ = strings.Cut(got, "\n")
	if want := fmt.Sprintf("[… the start of the first line below (%d bytes) dropped]", len(long)-len(kept)); mark != want {
		t.Errorf("marker %q, want %q", mark, want)
	}
}

func TestForModelDefaults(t *testing.T) {
	raw := strings.Repeat("x\n", ModelMaxLines+10)
	got := ForModel(raw, 0, -1)
	if n := countLines(got); n != ModelMaxLines {
		t.Errorf("lines = %d, want %d", n, ModelMaxLines)
	}
	if !strings.HasPrefix(got, "[… 11 earlier lines (22 bytes) dropped]\n") {
		t.Errorf("starts %q", got[:60])
	}

	raw = strings.Repeat(strings.Repeat("y", 99)+"\n", 1000) // 100,000 bytes
	got = ForModel(raw, 0, 0)
	if len(got) > ModelMaxBytes {
		t.Errorf("len = %d, over %d", len(got), ModelMaxBytes)
	}
	if len(got) < ModelMaxBytes-200 {
		t.Errorf("len = %d, kept much less than %d", len(got), ModelMaxBytes)
	}
}

// TestForModelAlwaysFits checks the promise on many shapes of input: the answer never
// passes either limit (unless maxBytes is below the marker), is valid UTF-8, and is a
// marker plus a tail of the cleaned text, or the cleaned text itself.
func TestForModelAlwaysFits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "€", "𝄞", "\n", "\n", "\r\n", "\r", "\b", "\x1b[31m", "\x1b[K", "line of text ", "\t"}
	for i := range 3000 {
		var b strings.Builder
		for range r.IntN(300) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		raw := b.String()
		maxLines := 1 + r.IntN(20)
		maxBytes := 1 + r.IntN(400)
		got := ForModel(raw, maxLines, maxBytes)
		clean := Clean(raw)
		if !utf8.ValidString(got) {
			t.Fatalf("#%d: invalid UTF-8 %q", i, got)
		}
		if got == clean {
			if countLines(clean) > maxLines || len(clean) > maxBytes {
				t.Fatalf("#%d: %q returned uncut over the limits %d/%d", i, clean, maxLines, maxBytes)
			}
			continue
		}
		mark, kept, _ := strings.Cut(got, "\n")
		if !strings.HasPrefix(mark, "[… ") || !strings.HasSuffix(clean, kept) {
			t.Fatalf("#%d: %q is not a marker and a tail of %q", i, got, clean)
		}
		if countLines(got) > maxLines {
			t.Fatalf("#%d: %d lines, over %d: %q", i, countLines(got), maxLines, got)
		}
		if len(got) > maxBytes && kept != "" {
			t.Fatalf("#%d: %d bytes, over %d: %q", i, len(got), maxBytes, got)
		}
	}
}

func TestLastChars(t *testing.T) {
	tests := []struct {
		s       string
		n       int
		want    string
		wantCut bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "llo", true},
		{"", 3, "", false},
		{"hello", 0, "", true},
		{"", 0, "", false},
		{"héllo wörld", 5, "wörld", true},
		{"日本語テキスト", 3, "キスト", true},
		{"日本語", 3, "日本語", false}, // 9 bytes, 3 characters: not cut
		{"a𝄞b𝄞", 2, "b𝄞", true},
		{"x\xffy", 2, "\xffy", true}, // an invalid byte is one character
	}
	for _, tt := range tests {
		got, cut := LastChars(tt.s, tt.n)
		if got != tt.want || cut != tt.wantCut {
			t.Errorf("LastChars(%q, %d) = %q, %v; want %q, %v", tt.s, tt.n, got, cut, tt.want, tt.wantCut)
		}
	}
}

func TestHostOutput(t *testing.T) {
	if got := HostOutput("\x1b[1mbold\x1b[0m\r\n50%\r100%\n"); got != "bold\n100%\n" {
		t.Errorf("HostOutput = %q", got)
	}
	raw := "\x1b[31m" + strings.Repeat("é", HostMaxChars+5) + "\x1b[0m"
	got := HostOutput(raw)
	if n := utf8.RuneCountInString(got); n != HostMaxChars {
		t.Errorf("kept %d characters, want %d", n, HostMaxChars)
	}
}

// BenchmarkForModel shapes about 1 MB of typical build output: coloured lines, a
// progress bar redrawn with CR and EL, and a long tail of plain lines, cut to the
// model's default limits.
func BenchmarkForModel(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "\x1b[1;32m   Compiling\x1b[0m crate-%d v0.%d.0 (/src/crate-%d)\r\n", i, i%10, i)
		case 1:
			for p := 0; p <= 100; p += 25 {
				fmt.Fprintf(&sb, "\r\x1b[K[%-20s] %3d%%", strings.Repeat("=", p/5), p)
			}
			sb.WriteString("\r\n")
		default:
			fmt.Fprintf(&sb, "warning: unused variable `x%d` in src/lib.rs:%d — consider _x%d\n", i, i, i)
		}
	}
	raw := sb.String()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		ForModel(raw, 0, 0)
	}
}
