package integration

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// norm merges adjacent text segments, so results of differently split feeds compare.
func norm(segs []Segment) []Segment {
	var out []Segment
	for _, s := range segs {
		if s.Event == nil {
			if s.Text == "" {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Event == nil {
				out[n-1].Text += s.Text
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

func feedAll(chunks []string) []Segment {
	var p Parser
	var all []Segment
	for _, c := range chunks {
		all = append(all, p.Feed(c)...)
	}
	if h := p.Flush(); h != "" {
		all = append(all, Segment{Text: h})
	}
	return norm(all)
}

func text(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.Text)
	}
	return b.String()
}

func events(segs []Segment) []Event {
	var out []Event
	for _, s := range segs {
		if s.Event != nil {
			out = append(out, *s.Event)
		}
	}
	return out
}

func byteSplit(s string) []string {
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
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

func ip(n int) *int { return &n }

func equalSegs(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Text != b[i].Text || (a[i].Event == nil) != (b[i].Event == nil) {
			return false
		}
		if a[i].Event != nil && !reflect.DeepEqual(*a[i].Event, *b[i].Event) {
			return false
		}
	}
	return true
}

func dump(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Event != nil {
			e := s.Event
			code := "nil"
			if e.ExitCode != nil {
				code = fmt.Sprint(*e.ExitCode)
			}
			fmt.Fprintf(&b, "[%v/%d code=%s line=%q nonce=%q cwd=%q]", e.Kind, e.Family, code, e.Line, e.Nonce, e.Cwd)
		} else {
			fmt.Fprintf(&b, "%q", s.Text)
		}
	}
	return b.String()
}

var long2000 = "\x1b]133;" + strings.Repeat("x", 2000)

// corpus is a set of outputs exercising every path of the parser.
var corpus = []string{
	"",
	"plain text with no escapes\r\n",
	"\x1b]133;A\x07$ \x1b]133;B\x07",
	"\x1b]133;A\x1b\\$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C\x07a b\r\n\x1b]133;D;0\x07",
	"\x1b]633;A\x07\x1b]633;B\x07\x1b]633;E;echo x\\x3b (exit 4);abc\x07\x1b]633;C\x07x\r\n\x1b]633;D;4\x07",
	"\x1b]633;P;Cwd=/home/u/a\\x3bb\x07\x1b]7;file://host/tmp/a%20b\x1b\\",
	"\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]1337;X=1\x07",
	"\x1b]133;A\x1b[0m broken then \x1b]133;B\x07",
	"\x1b]13\x1b]63\x1b]7x\x1b]6;\x1b\x1b]\x1b]133;D\x07\x1b]133;D;\x07\x1b]133;D;abc\x07",
	"\x1b]133;A;cl=m;aid=1\x07\x1b]133;D;130;aid=1\x07\x1b]133;Z\x07\x1b]633;F\x07\x1b]633;P;IsWindows=False\x07",
	long2000 + "\x07after \x1b]133;C\x07",
	"\x1b]133;" + strings.Repeat("y", MaxHeld-7) + "\x07",   // total MaxHeld: a mark
	"\x1b]133;" + strings.Repeat("y", MaxHeld-6) + "\x07",   // total MaxHeld+1: a mark, the longest
	"\x1b]133;" + strings.Repeat("y", MaxHeld-5) + "\x07",   // total MaxHeld+2: not one
	"\x1b]133;" + strings.Repeat("y", MaxHeld-8) + "\x1b\\", // total MaxHeld
	"\x1b]133;" + strings.Repeat("y", MaxHeld-7) + "\x1b\\", // total MaxHeld+1
	"\x1b]133;" + strings.Repeat("y", MaxHeld-6) + "\x1b\\", // total MaxHeld+2
	"trailing \x1b]133;C",
	"trailing \x1b]633;A\x1b",
	"\x1b\x1b\x1b]]133;A\x07é\x1b]7;/raw/path\x07\x1b]7;\x07",
}

func TestParserWhole(t *testing.T) {
	cases := []struct {
		in   string
		want []Segment
	}{
		{"hello", []Segment{{Text: "hello"}}},
		{
			"a\x1b]133;A\x07$ \x1b]133;B\x1b\\b",
			[]Segment{{Text: "a"}, {Event: &Event{Kind: PromptStart, Family: 133}}, {Text: "$ "}, {Event: &Event{Kind: PromptEnd, Family: 133}}, {Text: "b"}},
		},
		{
			"\x1b]133;C\x07out\r\n\x1b]133;D;4\x07\x1b]133;D\x07\x1b]133;D;x\x07",
			[]Segment{
				{Event: &Event{Kind: CommandStart, Family: 133}}, {Text: "out\r\n"},
				{Event: &Event{Kind: CommandFinished, Family: 133, ExitCode: ip(4)}},
				{Event: &Event{Kind: CommandFinished, Family: 133}},
				{Event: &Event{Kind: CommandFinished, Family: 133}},
			},
		},
		{
			"\x1b]633;E;echo x\\x3b (exit 4) \\\\ \\x0a\\q;n0nce\x1b\\",
			[]Segment{{Event: &Event{Kind: CommandLine, Family: 633, Line: "echo x; (exit 4) \\ \n\\q", Nonce: "n0nce"}}},
		},
		{
			"\x1b]633;E;ls\x07",
			[]Segment{{Event: &Event{Kind: CommandLine, Family: 633, Line: "ls"}}},
		},
		{
			"\x1b]633;P;Cwd=/tmp/x\\x3by\x07\x1b]633;P;Other=1\x07\x1b]7;file://host/tmp/a%20b\x07\x1b]7;file:///no/host\x1b\\",
			[]Segment{
				{Event: &Event{Kind: Cwd, Family: 633, Cwd: "/tmp/x;y"}},
				{Event: &Event{Kind: Cwd, Family: 7, Cwd: "/tmp/a b"}},
				{Event: &Event{Kind: Cwd, Family: 7, Cwd: "/no/host"}},
			},
		},
		{
			"\x1b]633;D;-1\x07\x1b]633;A\x07\x1b]633;B\x07\x1b]633;C\x07",
			[]Segment{
				{Event: &Event{Kind: CommandFinished, Family: 633, ExitCode: ip(-1)}},
				{Event: &Event{Kind: PromptStart, Family: 633}},
				{Event: &Event{Kind: PromptEnd, Family: 633}},
				{Event: &Event{Kind: CommandStart, Family: 633}},
			},
		},
		// Marks the parser does not read are still taken out.
		{"a\x1b]133;Q\x07b\x1b]633;F\x07c", []Segment{{Text: "a"}, {Text: "b"}, {Text: "c"}}},
		// An ESC inside a mark ends it unfinished: it was output.
		{"\x1b]133;A\x1b[0m", []Segment{{Text: "\x1b]133;A\x1b[0m"}}},
	}
	for _, c := range cases {
		var p Parser
		got := p.Feed(c.in)
		if h := p.Flush(); h != "" {
			got = append(got, Segment{Text: h})
		}
		if !equalSegs(got, c.want) {
			t.Errorf("Feed(%q)\n got %s\nwant %s", c.in, dump(got), dump(c.want))
		}
	}
}

func TestParserSplitsMatchWhole(t *testing.T) {
	r := rand.New(rand.NewSource(133))
	inputs := append([]string{strings.Join(corpus, "")}, corpus...)
	for _, in := range inputs {
		whole := feedAll([]string{in})
		if got := feedAll(byteSplit(in)); !equalSegs(got, whole) {
			t.Errorf("byte by byte %q\n got %s\nwant %s", in, dump(got), dump(whole))
		}
		for range 50 {
			chunks := randomSplit(r, in)
			if got := feedAll(chunks); !equalSegs(got, whole) {
				t.Errorf("split %q\n got %s\nwant %s", chunks, dump(got), dump(whole))
				break
			}
		}
		if got, want := text(whole), reference(in); got != want {
			t.Errorf("text of %q\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestParserTerminators(t *testing.T) {
	for _, term := range []string{"\x07", "\x1b\\"} {
		segs := feedAll([]string{"x\x1b]133;D;7" + term + "y"})
		want := []Segment{{Text: "x"}, {Event: &Event{Kind: CommandFinished, Family: 133, ExitCode: ip(7)}}, {Text: "y"}}
		if !equalSegs(segs, want) {
			t.Errorf("terminator %q: got %s", term, dump(segs))
		}
	}
}

func TestParserLongUnterminatedReleased(t *testing.T) {
	var p Parser
	var out strings.Builder
	for _, c := range randomSplit(rand.New(rand.NewSource(1)), long2000) {
		for _, s := range p.Feed(c) {
			if s.Event != nil {
				t.Fatalf("event from an unterminated mark: %s", dump([]Segment{s}))
			}
			out.WriteString(s.Text)
		}
		if p.Held() > MaxHeld {
			t.Fatalf("held %d bytes", p.Held())
		}
	}
	if out.String() != long2000 {
		t.Fatalf("released %d bytes before Flush, want all %d", out.Len(), len(long2000))
	}
	if h := p.Flush(); h != "" {
		t.Fatalf("Flush = %q after release", h)
	}

	// Whole, and then terminated: still output, and the mark after it is read.
	segs := feedAll([]string{long2000 + "\x07\x1b]133;C\x07"})
	want := []Segment{{Text: long2000 + "\x07"}, {Event: &Event{Kind: CommandStart, Family: 133}}}
	if !equalSegs(segs, want) {
		t.Fatalf("got %.200s", dump(segs))
	}
}

// A mark of MaxHeld+1 bytes is the longest read, whole or split, with either end.
func TestParserLongestMark(t *testing.T) {
	r := rand.New(rand.NewSource(1025))
	for _, end := range []string{"\x07", "\x1b\\"} {
		for total, isMark := range map[int]bool{MaxHeld: true, MaxHeld + 1: true, MaxHeld + 2: false} {
			in := "\x1b]133;D;" + strings.Repeat("9", total-8-len(end)) + end
			want := ""
			if !isMark {
				want = in
			}
			for _, chunks := range [][]string{{in}, byteSplit(in), randomSplit(r, in)} {
				if got := text(feedAll(chunks)); got != want {
					t.Errorf("%d bytes ended by %q: text %.20q..., want %.20q...", total, end, got, want)
				}
			}
		}
	}
}

func TestParserHoldsOnlyCandidates(t *testing.T) {
	var p Parser
	step := func(in, want string) {
		t.Helper()
		got := text(p.Feed(in))
		if got != want {
			t.Fatalf("Feed(%q) = %q, want %q (held %d)", in, got, want, p.Held())
		}
	}
	step("a\x1b", "a")
	step("[", "\x1b[") // not an OSC: released at once
	step("31m\x1b]", "31m")
	step("0", "\x1b]0") // OSC 0: released as soon as the 0 is seen
	step(";title\x07\x1b]1", ";title\x07")
	step("3", "")
	step("3", "")
	step("7", "\x1b]1337") // OSC 1337 is not OSC 133
	step("\x1b]7", "")
	step(";file:///x\x07", "")
	step("\x1b]6", "")
	step("3", "")
	step("0", "\x1b]630")
	if p.Held() != 0 {
		t.Fatalf("held %d", p.Held())
	}
}

func TestParserPassThrough(t *testing.T) {
	ins := []string{
		"\x1b[1;31mbold red\x1b[0m",
		"\x1b]0;my title\x07",
		"\x1b]2;title\x1b\\",
		"\x1b]8;;https://example.com\x1b\\x\x1b]8;;\x1b\\",
		"\x1bPq#0\x1b\\",
		"\x1b7\x1b8\x1b=\x1b>",
		"\x1b]1337;CurrentDir=/x\x07",
		"\x1b]52;c;YQ==\x07",
	}
	for _, in := range ins {
		segs := feedAll([]string{in})
		if len(segs) != 1 || segs[0].Text != in {
			t.Errorf("%q: got %s", in, dump(segs))
		}
		if got := feedAll(byteSplit(in)); !equalSegs(got, segs) {
			t.Errorf("%q byte by byte: got %s", in, dump(got))
		}
	}
}

func TestParserFastPathNoCopy(t *testing.T) {
	var p Parser
	in := strings.Repeat("plain output ", 100)
	segs := p.Feed(in)
	if len(segs) != 1 || segs[0].Event != nil || unsafe.StringData(segs[0].Text) != unsafe.StringData(in) || len(segs[0].Text) != len(in) {
		t.Fatalf("fast path copied or split: %d segments", len(segs))
	}
	if segs := p.Feed(""); segs != nil {
		t.Fatalf("Feed(\"\") = %v", segs)
	}
}

func TestUnescape(t *testing.T) {
	cases := map[string]string{
		``:             ``,
		`plain`:        `plain`,
		`a\x3bb`:       `a;b`,
		`a\x3Bb`:       `a;b`,
		`a\\b`:         `a\b`,
		`a\\x3b`:       `a\x3b`,
		`\x1b\x0a`:     "\x1b\n",
		`\xzz \q \`:    `\xzz \q \`,
		`trailing\x3`:  `trailing\x3`,
		`\\\\\x5c\x5C`: `\\\\`,
	}
	for in, want := range cases {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURIPath(t *testing.T) {
	cases := map[string]string{
		"file://host/tmp/a%20b":        "/tmp/a b",
		"file:///tmp/x":                "/tmp/x",
		"FILE://h/x%2":                 "/x%2",
		"file://host":                  "",
		"kitty-shell-cwd://h/a%20b":    "/a%20b",
		"/bare/path":                   "/bare/path",
		"http://host/x":                "",
		"relative":                     "",
		"file://host/100%25/%E2%82%AC": "/100%/€",
	}
	for in, want := range cases {
		if got := uriPath(in); got != want {
			t.Errorf("uriPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// reference is the parser's text output on a whole input, written independently:
// every complete OSC 133, 633 or 7 of at most MaxHeld+1 bytes, ended by BEL or ST
// with no other ESC inside, is removed; everything else stays.
func reference(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if end := refMarkEnd(s, i); end > 0 {
			i = end
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func refMarkEnd(s string, i int) int {
	var body int
	switch {
	case strings.HasPrefix(s[i:], "\x1b]133;"), strings.HasPrefix(s[i:], "\x1b]633;"):
		body = i + 6
	case strings.HasPrefix(s[i:], "\x1b]7;"):
		body = i + 4
	default:
		return 0
	}
	for k := body; k < len(s); k++ {
		end := 0
		switch {
		case s[k] == '\x07':
			end = k + 1
		case strings.HasPrefix(s[k:], "\x1b\\"):
			end = k + 2
		case s[k] == '\x1b':
			return 0
		default:
			continue
		}
		if end-i > MaxHeld+1 {
			return 0
		}
		return end
	}
	return 0
}

func FuzzParser(f *testing.F) {
	for _, c := range corpus {
		f.Add(c, uint16(len(c)/2))
	}
	f.Add("\x1b]633;E;a\\x3bb;nonce\x07", uint16(3))
	f.Add("\x1b]7;file://h/%zz\x1b\\", uint16(8))
	f.Fuzz(func(t *testing.T, in string, cut uint16) {
		at := int(cut) % (len(in) + 1)
		whole := feedAll([]string{in})
		if got, want := text(whole), reference(in); got != want {
			t.Fatalf("text of %q\n got %q\nwant %q", in, got, want)
		}
		if len(text(whole)) > len(in) {
			t.Fatalf("output longer than input")
		}
		halves := feedAll([]string{in[:at], in[at:]})
		if !equalSegs(halves, whole) {
			t.Fatalf("halves at %d of %q\n got %s\nwant %s", at, in, dump(halves), dump(whole))
		}
		for _, s := range whole {
			if s.Event != nil && s.Event.Kind == 0 {
				t.Fatalf("event with no kind")
			}
		}
	})
}

var benchPlain = strings.Repeat("total 48\r\ndrwxr-xr-x  5 user user 4096 Jan  1 00:00 \x1b[01;34mdir\x1b[0m\r\n", 64)

var benchMarks = strings.Repeat("\x1b]633;A\x07$ \x1b]633;B\x07\x1b]633;E;ls -la;0123456789abcdef\x07\x1b]633;C\x07"+
	"total 48\r\nfile\r\n\x1b]633;D;0\x07\x1b]633;P;Cwd=/home/user\x07", 32)

func BenchmarkParserPlain(b *testing.B) {
	plain := strings.ReplaceAll(benchPlain, "\x1b", "")
	b.ReportAllocs()
	b.SetBytes(int64(len(plain)))
	var p Parser
	for b.Loop() {
		p.Feed(plain)
	}
}

func BenchmarkParserColors(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchPlain)))
	var p Parser
	for b.Loop() {
		p.Feed(benchPlain)
	}
}

func BenchmarkParserMarks(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMarks)))
	var p Parser
	for b.Loop() {
		p.Feed(benchMarks)
	}
}

// BenchmarkParserFlood feeds 64 KiB chunks, the size of a pseudoterminal read during
// a flood: `ls -l --color` output, and the same with a command's marks every 4 KiB.
func BenchmarkParserFlood(b *testing.B) {
	var ls strings.Builder
	for i := 0; ls.Len() < 64<<10; i++ {
		fmt.Fprintf(&ls, "-rw-r--r--  1 user user %6d Jan %2d 12:%02d \x1b[01;34mfile-name-%d.go\x1b[0m\r\n", i*37%100000, i%28+1, i%60, i)
	}
	lscolor := ls.String()[:64<<10]
	var mk strings.Builder
	for mk.Len() < 64<<10 {
		mk.WriteString(lscolor[:4<<10])
		mk.WriteString("\x1b]633;D;0\x07\x1b]633;A\x07$ \x1b]633;B\x07\x1b]633;E;ls -l;0123456789abcdef\x07\x1b]633;C\x07")
	}
	for _, bc := range []struct{ name, in string }{{"lscolor", lscolor}, {"marks", mk.String()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			var p Parser
			for b.Loop() {
				p.Feed(bc.in)
			}
		})
	}
}
