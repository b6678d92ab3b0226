package screen

import (
	"bytes"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// tok is a token with the bytes it was read from, as the tests compare them.
type tok struct {
	Kind          Kind
	Final         byte
	Params        string
	Intermediates string
	Data          string
	End           byte
	Malformed     bool
	Overflow      bool
	Raw           string
}

func (t tok) String() string {
	return fmt.Sprintf("{%v final=%q params=%q inter=%q data=%.40q end=%q bad=%v over=%v raw=%.60q}",
		t.Kind, t.Final, t.Params, t.Intermediates, t.Data, t.End, t.Malformed, t.Overflow, t.Raw)
}

// tokens feeds chunks to one parser and returns every token with its bytes, adjacent
// runs of text merged, and what is left unfinished at the end as a token of Kind None.
func tokens(chunks []string) []tok {
	var p Parser
	var out []tok
	var raw strings.Builder  // bytes read since the last token ended
	var text strings.Builder // the run of text not yet in out
	flushText := func() {
		if text.Len() > 0 {
			out = append(out, tok{Kind: Text, Raw: text.String()})
			text.Reset()
		}
	}
	for _, c := range chunks {
		for c != "" {
			t, n := p.Next(c)
			raw.WriteString(c[:n])
			c = c[n:]
			if t.Kind == None {
				if c != "" {
					panic("Next returned None before the end of its input")
				}
				continue
			}
			if t.Kind == Text {
				text.WriteString(raw.String())
				raw.Reset()
				continue
			}
			flushText()
			out = append(out, tok{t.Kind, t.Final, string(p.Params()), string(p.Intermediates()), string(p.Data()), t.End, t.Malformed, t.Overflow, raw.String()})
			raw.Reset()
		}
	}
	flushText()
	if raw.Len() > 0 {
		out = append(out, tok{Raw: raw.String()})
	}
	return out
}

func sameTokens(a, b []tok) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func byteSplit(s string) []string {
	out := make([]string, len(s))
	for i := range len(s) {
		out[i] = s[i : i+1]
	}
	return out
}

func randomSplit(r *rand.Rand, s string) []string {
	var out []string
	for s != "" {
		n := 1 + r.Intn(min(len(s), 1+r.Intn(40)))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func TestParserTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []tok
	}{
		{"plain", []tok{{Kind: Text, Raw: "plain"}}},
		{"a\r\nb\x7f\u00e9", []tok{
			{Kind: Text, Raw: "a"}, {Kind: Control, Final: '\r', Raw: "\r"}, {Kind: Control, Final: '\n', Raw: "\n"},
			{Kind: Text, Raw: "b\x7f\u00e9"},
		}},
		{"\x1b[1;31mred\x1b[0m", []tok{
			{Kind: CSI, Final: 'm', Params: "1;31", Raw: "\x1b[1;31m"}, {Kind: Text, Raw: "red"},
			{Kind: CSI, Final: 'm', Params: "0", Raw: "\x1b[0m"},
		}},
		{"\x1b[?2004$p\x1b[ q\x1b[m", []tok{
			{Kind: CSI, Final: 'p', Params: "?2004", Intermediates: "$", Raw: "\x1b[?2004$p"},
			{Kind: CSI, Final: 'q', Intermediates: " ", Raw: "\x1b[ q"},
			{Kind: CSI, Final: 'm', Raw: "\x1b[m"},
		}},
		{"\x1b7\x1b(B\x1bc\x1b#8", []tok{
			{Kind: Escape, Final: '7', Raw: "\x1b7"},
			{Kind: Escape, Final: 'B', Intermediates: "(", Raw: "\x1b(B"},
			{Kind: Escape, Final: 'c', Raw: "\x1bc"},
			{Kind: Escape, Final: '8', Intermediates: "#", Raw: "\x1b#8"},
		}},
		{"\x1b]0;title\x07\x1b]133;A\x1b\\", []tok{
			{Kind: OSC, Data: "0;title", End: bel, Raw: "\x1b]0;title\x07"},
			{Kind: OSC, Data: "133;A", End: esc, Raw: "\x1b]133;A"},
			{Kind: Escape, Final: '\\', Raw: "\x1b\\"},
		}},
		// BEL ends an OSC only; the other strings run to ESC.
		{"\x1bPq#0\x07\x1b\\\x1b_G\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\", []tok{
			{Kind: DCS, Data: "q#0\x07", End: esc, Raw: "\x1bPq#0\x07"}, {Kind: Escape, Final: '\\', Raw: "\x1b\\"},
			{Kind: APC, Data: "G", End: esc, Raw: "\x1b_G"}, {Kind: Escape, Final: '\\', Raw: "\x1b\\"},
			{Kind: PM, Data: "pm", End: esc, Raw: "\x1b^pm"}, {Kind: Escape, Final: '\\', Raw: "\x1b\\"},
			{Kind: SOS, Data: "sos", End: esc, Raw: "\x1bXsos"}, {Kind: Escape, Final: '\\', Raw: "\x1b\\"},
		}},
		// Inside a string every byte but its end is content, controls included.
		{"\x1b]133;A\n\x18\x9c\x07", []tok{{Kind: OSC, Data: "133;A\n\x18\x9c", End: bel, Raw: "\x1b]133;A\n\x18\x9c\x07"}}},
		// An ESC ends a string that has no ST, and begins the next token.
		{"\x1b]133;A\x1b[0m", []tok{
			{Kind: OSC, Data: "133;A", End: esc, Raw: "\x1b]133;A"},
			{Kind: CSI, Final: 'm', Params: "0", Raw: "\x1b[0m"},
		}},
		// Cut short: by ESC, by a control character, by a byte above 0x7E.
		{"\x1b[12\x1b[m\x1b[?20\n04h\x1b\u00e9\x1b\x1b", []tok{
			{Kind: CSI, Params: "12", Malformed: true, Raw: "\x1b[12"},
			{Kind: CSI, Final: 'm', Raw: "\x1b[m"},
			{Kind: CSI, Params: "?20", Malformed: true, Raw: "\x1b[?20"},
			{Kind: Control, Final: '\n', Raw: "\n"},
			{Kind: Text, Raw: "04h"},
			{Kind: Escape, Malformed: true, Raw: "\x1b"},
			{Kind: Text, Raw: "\u00e9"},
			{Kind: Escape, Malformed: true, Raw: "\x1b"},
			{Raw: "\x1b"}, // not ended
		}},
		// A parameter byte after an intermediate byte: read to the final byte, malformed.
		{"\x1b[1$2pX", []tok{
			{Kind: CSI, Final: 'p', Params: "1", Intermediates: "$2", Malformed: true, Raw: "\x1b[1$2p"},
			{Kind: Text, Raw: "X"},
		}},
		// With intermediates, '[' and ']' are final bytes like any other.
		{"\x1b([\x1b(]", []tok{
			{Kind: Escape, Final: '[', Intermediates: "(", Raw: "\x1b(["},
			{Kind: Escape, Final: ']', Intermediates: "(", Raw: "\x1b(]"},
		}},
		{"\x1b]8;;http://x\x1b\\", []tok{
			{Kind: OSC, Data: "8;;http://x", End: esc, Raw: "\x1b]8;;http://x"},
			{Kind: Escape, Final: '\\', Raw: "\x1b\\"},
		}},
	}
	for _, c := range cases {
		got := tokens([]string{c.in})
		if !sameTokens(got, c.want) {
			t.Errorf("%q\n got %v\nwant %v", c.in, got, c.want)
		}
	}
}

func TestParserNextReadsNothingOnlyAtAnEnd(t *testing.T) {
	var p Parser
	if tk, n := p.Next(""); tk.Kind != None || n != 0 {
		t.Fatalf("Next(\"\") = %v, %d", tk.Kind, n)
	}
	p.Next("\x1b]0;t")
	tk, n := p.Next("\x1b\\")
	if tk.Kind != OSC || n != 0 || tk.End != esc || string(p.Data()) != "0;t" {
		t.Fatalf("a string ended by the first byte: %v, %d", tk.Kind, n)
	}
	if tk, n = p.Next("\x1b\\"); !p.IsST(tk) || n != 2 {
		t.Fatalf("ST: %v final %q, %d", tk.Kind, tk.Final, n)
	}
	p.Next("\x1b[1")
	if tk, n = p.Next("\n"); tk.Kind != CSI || !tk.Malformed || n != 0 || !p.Ground() {
		t.Fatalf("a sequence cut short by the first byte: %v, %d", tk.Kind, n)
	}
}

func TestParserOverflow(t *testing.T) {
	long := "\x1b]52;c;" + strings.Repeat("QUJD", 10000) + "\x07after"
	var p Parser
	in := long
	for {
		tk, n := p.Next(in)
		in = in[n:]
		if cap(p.buf) > 2*MaxSequence || p.n > MaxSequence {
			t.Fatalf("the parser holds %d bytes", cap(p.buf))
		}
		if tk.Kind == OSC {
			if !tk.Overflow || len(p.Data()) != MaxSequence || !bytes.HasPrefix(p.Data(), []byte("52;c;QUJD")) {
				t.Fatalf("overflowed OSC: overflow %v, %d bytes", tk.Overflow, len(p.Data()))
			}
			break
		}
	}
	if in != "after" {
		t.Fatalf("left %q, want the text after the string", in)
	}
	long = "\x1b[" + strings.Repeat("1;", MaxSequence) + "m"
	got := tokens(randomSplit(rand.New(rand.NewSource(1)), long))
	if len(got) != 1 || got[0].Kind != CSI || got[0].Final != 'm' || !got[0].Overflow || len(got[0].Params) != MaxSequence {
		t.Fatalf("long CSI: %v", got)
	}
	exact := "\x1b[" + strings.Repeat("1", MaxSequence) + "m"
	if got := tokens([]string{exact}); got[0].Overflow {
		t.Fatal("a CSI of exactly MaxSequence parameter bytes overflowed")
	}
}

func TestParserResetAndNextBytes(t *testing.T) {
	var p Parser
	p.Next("\x1b]133;A")
	if p.Ground() {
		t.Fatal("Ground inside a string")
	}
	p.Reset()
	if !p.Ground() {
		t.Fatal("not Ground after Reset")
	}
	tk, n := p.NextBytes([]byte("\x1b[?1049h!"))
	if tk.Kind != CSI || string(p.Params()) != "?1049" || tk.Final != 'h' || n != 8 {
		t.Fatalf("NextBytes: %v %q %q %d", tk.Kind, p.Params(), tk.Final, n)
	}
	if Kind(42).String() != "Kind(42)" || APC.String() != "APC" || !DCS.IsString() || CSI.IsString() {
		t.Fatal("Kind names")
	}
}

// corpus is output exercising every state of the parser.
var corpus = []string{
	"",
	"plain text with no escapes\r\n",
	"h\u00e9llo \u4e16\u754c\r\n\x1b[1;31mred\x1b[0m\x1b]0;title\x07\x1b[?2004h\x1b[?1049h",
	"\x1b]133;A\x07$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C\x07a b\r\n\x1b]133;D;0\x07",
	"\x1b]633;E;echo x\\x3b (exit 4);abc\x07\x1b]7;file://host/tmp/a%20b\x1b\\",
	"\x1bPq#0;2;0;0;0#1~~@@\x1b\\\x1b_Gf=100;AAAA\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\",
	"\x1b7\x1b8\x1b=\x1b>\x1b(B\x1b)0\x1b#8\x1bc\x1b M\x1bD",
	"\x1b[?2004$p\x1b[>0c\x1b[6n\x1b[ q\x1b[1$2p\x1b[38:5:1m",
	"\x1b[12\x1b[m\x1b[?20\n04h\x1b\u00e9\x1b\x1b\x1b[\x18x\x1b]0;a\x1ab\x07",
	"\x1b]133;A\x1b[0m broken then \x1b]133;B\x07",
	"\x1b]52;c;" + strings.Repeat("QUJD", MaxSequence/4) + "\x07",
	"\x1b[" + strings.Repeat("1;", MaxSequence/2+3) + "m",
	"trailing \x1b]133;C",
	"trailing \x1b[1;3",
	"trailing \x1b",
}

func TestParserSplitsMatchWhole(t *testing.T) {
	r := rand.New(rand.NewSource(48))
	inputs := append([]string{strings.Join(corpus, "")}, corpus...)
	for _, in := range inputs {
		whole := tokens([]string{in})
		if got := tokens(byteSplit(in)); !sameTokens(got, whole) {
			t.Errorf("byte by byte %q\n got %v\nwant %v", in, got, whole)
		}
		for range 50 {
			chunks := randomSplit(r, in)
			if got := tokens(chunks); !sameTokens(got, whole) {
				t.Errorf("split %q\n got %v\nwant %v", chunks, got, whole)
				break
			}
		}
		var raw strings.Builder
		for _, tk := range whole {
			raw.WriteString(tk.Raw)
		}
		if raw.String() != in {
			t.Errorf("the tokens of %q are not its bytes: %q", in, raw.String())
		}
	}
}

func FuzzParserSplits(f *testing.F) {
	for _, c := range corpus {
		f.Add(c, uint16(len(c)/2), uint16(7))
	}
	f.Fuzz(func(t *testing.T, in string, cut, step uint16) {
		whole := tokens([]string{in})
		var raw strings.Builder
		for _, tk := range whole {
			raw.WriteString(tk.Raw)
			if tk.Kind != Text && tk.Kind != None && !tk.Kind.IsString() && len(tk.Params)+len(tk.Intermediates) > MaxSequence {
				t.Fatalf("a token kept more than MaxSequence bytes: %v", tk)
			}
			if len(tk.Data) > MaxSequence {
				t.Fatalf("a string kept %d bytes", len(tk.Data))
			}
		}
		if raw.String() != in {
			t.Fatalf("the tokens are not the input's bytes")
		}
		at := int(cut) % (len(in) + 1)
		if got := tokens([]string{in[:at], in[at:]}); !sameTokens(got, whole) {
			t.Fatalf("halves at %d of %q\n got %v\nwant %v", at, in, got, whole)
		}
		// Cut into pieces of a fuzzed size, too.
		var chunks []string
		for s, n := in, int(step)%64+1; s != ""; s = s[min(n, len(s)):] {
			chunks = append(chunks, s[:min(n, len(s))])
		}
		if got := tokens(chunks); !sameTokens(got, whole) {
			t.Fatalf("pieces of %d of %q\n got %v\nwant %v", int(step)%64+1, in, got, whole)
		}
	})
}

// stripEscapesRegexp is how the session stripped a command's output before the
// parser did it: the reference StripEscapes keeps to on ordinary output.
var ansiSequence = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

func stripEscapesRegexp(s string) string {
	s = ansiSequence.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "")
}

func TestStripEscapesAsTheRegexpDid(t *testing.T) {
	for _, in := range []string{
		"",
		"plain",
		"a\r\nb\r\n",
		"progress 10%\rprogress 100%\r\n",
		"\x1b[1;31mred\x1b[0m and \x1b[38;5;208morange\x1b[m\r\n",
		"\x1b]0;user@host: ~\x07$ ls\r\n",
		"\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C\x07a b\r\n\x1b]133;D;0\x07",
		"\x1b]633;E;echo x\\x3b y;nonce\x07\x1b]633;P;Cwd=/tmp\x07\x1b]7;file://host/tmp\x1b\\",
		"\x1b[?2004h$ \x1b[?2004l\r\r\n",
		"\x1b[2J\x1b[H\x1b[K\x1b[3;4H\x1b[?25l\x1b[?25h\x1b[6n",
		"\x1bM\x1bD\x1bE\x1b\\tab\there bell\a",
		"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\",
		benchShapes[0].chunk[:2000],
		benchShapes[1].chunk[:2000],
		benchShapes[2].chunk[:2000],
	} {
		if got, want := StripEscapes(in), stripEscapesRegexp(in); got != want {
			t.Errorf("StripEscapes(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// Where the regexp left pieces of a sequence in the text, StripEscapes takes out the
// whole sequence, as a terminal shows none of it.
func TestStripEscapesWholeSequences(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b7saved\x1b8":                  "saved",  // DECSC, DECRC
		"\x1b(Bascii\x1b)0":                "ascii",  // character sets
		"\x1b=keypad\x1b>":                 "keypad", // DECKPAM, DECKPNM
		"\x1bcreset":                       "reset",  // RIS
		"\x1bPq#0;1~\x1b\\sixel":           "sixel",  // DCS with its content
		"\x1b_Gf=100;AAAA\x1b\\image":      "image",  // APC with its content
		"\x1b]0;cut short\x1b[0mtext":      "text",   // a string with no terminator
		"cut off at the end \x1b]0;title":  "cut off at the end ",
		"cut off at the end \x1b[1;3":      "cut off at the end ",
		"\x1b[31\nm":                       "\nm", // a CSI cut short by a control
		"\x1b]0;t\x07\r\n\x1b[1m\rx\r\r\n": "\nx\n",
	} {
		if got := StripEscapes(in); got != want {
			t.Errorf("StripEscapes(%q) = %q, want %q", in, got, want)
		}
	}
	plain := "no escapes and no carriage returns\n"
	if got := StripEscapes(plain); got != plain {
		t.Fatalf("plain text changed: %q", got)
	}
}

// Three shapes of a 64 KiB chunk of output, the size of a pseudoterminal read during
// a flood: `ls -l --color` (a few SGR sequences a line), a plain flood (a log, no ESC
// at all), and a full-screen program redrawing (cursor moves, colours and DEC private
// modes on every line).
var benchShapes = []struct{ name, chunk string }{
	{"lscolor", benchOutput(func(b *strings.Builder, i int) {
		colours := [...]string{"01;34", "00", "01;32", "01;36", "00"}
		fmt.Fprintf(b, "-rw-r--r--  1 user user %6d Jan %2d 12:%02d \x1b[%sm%s-%d.go\x1b[0m\r\n",
			i*37%100000, i%28+1, i%60, colours[i%len(colours)], "file-name", i)
	})},
	{"plain", benchOutput(func(b *strings.Builder, i int) {
		fmt.Fprintf(b, "2026-01-01T00:00:%02dZ INFO request handled path=/api/v1/items/%d status=200 dur=%dms\r\n",
			i%60, i, i%97)
	})},
	{"redraw", benchOutput(func(b *strings.Builder, i int) {
		if i%40 == 0 {
			b.WriteString("\x1b[?25l\x1b[H")
		}
		fmt.Fprintf(b, "\x1b[%d;1H\x1b[38;5;%dm%4d\x1b[0m %s\x1b[K", i%40+1, i%256, i, strings.Repeat("text ", 12))
		if i%40 == 39 {
			b.WriteString("\x1b[?25h")
		}
	})},
}

func benchOutput(line func(*strings.Builder, int)) string {
	var b strings.Builder
	for i := 0; b.Len() < 64<<10; i++ {
		line(&b, i)
	}
	return b.String()[:64<<10]
}

// BenchmarkParserTokens reads every token of a chunk, text and controls included.
func BenchmarkParserTokens(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			var p Parser
			b.ReportAllocs()
			b.SetBytes(int64(len(sh.chunk)))
			for b.Loop() {
				for s := sh.chunk; s != ""; {
					_, n := p.Next(s)
					s = s[n:]
				}
			}
		})
	}
}

// BenchmarkModesScan is what every chunk of a pseudoterminal's output costs a
// terminal to follow its modes and notice queries.
func BenchmarkModesScan(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			var m Modes
			b.ReportAllocs()
			b.SetBytes(int64(len(sh.chunk)))
			for b.Loop() {
				m.Scan(sh.chunk)
			}
		})
	}
}

func BenchmarkStripEscapes(b *testing.B) {
	for _, sh := range benchShapes {
		for _, f := range []struct {
			name  string
			strip func(string) string
		}{{"parser", StripEscapes}, {"regexp", stripEscapesRegexp}} {
			b.Run(sh.name+"/"+f.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(sh.chunk)))
				for b.Loop() {
					f.strip(sh.chunk)
				}
			})
		}
	}
}
