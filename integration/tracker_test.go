package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

const testNonce = "0123456789abcdef0123456789abcdef"

// fakeClock advances by step at every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func newTestTracker() (*Tracker, *fakeClock) {
	clock := &fakeClock{t: time.UnixMilli(1767225600000), step: 10 * time.Millisecond}
	n := 0
	return NewTracker(testNonce, clock.now, func() string { n++; return fmt.Sprintf("c%d", n) }), clock
}

func js(as []messages.Action) string {
	b, _ := json.Marshal(as)
	return string(b)
}

func ofType(as []messages.Action, typ string) []messages.Action {
	var out []messages.Action
	for _, a := range as {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

func TestTrackerCommandFromTypedInput(t *testing.T) {
	tr, _ := newTestTracker()
	var all []messages.Action
	out := func(s string) { all = append(all, tr.Output(s)...) }

	out("\x1b]133;A\x07$ ")
	tr.Input("echo x; (exit 4)\r")
	out("\x1b]133;B\x07")
	out("echo x; (exit 4)\r\n\x1b]133;C\x07")
	out("x\r\n")
	out("\x1b]133;D;4\x07\x1b]133;A\x07$ ")

	want := `[` +
		`{"type":"terminal/commandDetectionAvailable"},` +
		`{"type":"terminal/data","data":"$ "},` +
		`{"type":"terminal/data","data":"echo x; (exit 4)\r\n"},` +
		`{"type":"terminal/commandExecuted","commandId":"c1","commandLine":"echo x; (exit 4)","timestamp":1767225600010},` +
		`{"type":"terminal/data","data":"x\r\n"},` +
		`{"type":"terminal/commandFinished","exitCode":4,"commandId":"c1","durationMs":10},` +
		`{"type":"terminal/data","data":"$ "}]`
	if got := js(all); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !tr.Detected() {
		t.Fatal("Detected() = false")
	}
}

func TestTrackerTypedAfterPromptEnd(t *testing.T) {
	tr, _ := newTestTracker()
	tr.Output("\x1b]133;A\x07$ \x1b]133;B\x07")
	tr.Input("ls -l\x7fa\x1b[D\x1b[C \r")
	as := ofType(tr.Output("\x1b]133;C\x07"), messages.TerminalCommandExecuted)
	if len(as) != 1 || *as[0].CommandLine != "ls -a" {
		t.Fatalf("got %s", js(as))
	}
	// Input typed to the running command is not the next command's line.
	tr.Input("y\r")
	tr.Output("\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07")
	tr.Input("\x1b[200~pwd\x1b[201~\r")
	as = ofType(tr.Output("\x1b]133;C\x07"), messages.TerminalCommandExecuted)
	if len(as) != 1 || *as[0].CommandLine != "pwd" || as[0].CommandID != "c2" {
		t.Fatalf("got %s", js(as))
	}
}

func TestLineReader(t *testing.T) {
	cases := map[string]string{
		"echo x; (exit 4)\r":    "echo x; (exit 4)",
		"  ls  \n":              "ls",
		"abc\bd\r":              "abd",
		"héé\x7f\r":             "hé",
		"junk\x15ls\r":          "ls",
		"rm -rf foo\x17bar\r":   "rm -rf bar",
		"a\x1bOAb\x1b]0;t\x07c": "abc",
		"first\rsecond\r":       "first",
		"unsubmitted":           "unsubmitted",
		"\x1bx\x1b\x1b[1;5Dz\r": "z",
		"tab\tbed\r":            "tabbed",
	}
	for in, want := range cases {
		var r lineReader
		r.feed(in)
		if got := r.line(); got != want {
			t.Errorf("line(%q) = %q, want %q", in, got, want)
		}
	}
	// The same, one character at a time.
	for in, want := range cases {
		var r lineReader
		for _, c := range in {
			r.feed(string(c))
		}
		if got := r.line(); got != want {
			t.Errorf("split line(%q) = %q, want %q", in, got, want)
		}
	}
	var r lineReader
	r.feed(strings.Repeat("x", 2*maxLine))
	if len(r.line()) != maxLine {
		t.Errorf("line kept %d characters", len(r.line()))
	}
}

func TestTracker633WithNonce(t *testing.T) {
	tr, _ := newTestTracker()
	tr.Output("\x1b]633;A\x07$ \x1b]633;B\x07")
	tr.Input("typed line\r")
	got := tr.Output("\x1b]633;E;echo a\\x3bb \\\\ c;" + testNonce + "\x07\x1b]633;C\x07")
	ex := ofType(got, messages.TerminalCommandExecuted)
	if len(ex) != 1 || *ex[0].CommandLine != `echo a;b \ c` {
		t.Fatalf("got %s", js(got))
	}
	got = tr.Output("\x1b]633;D\x07")
	fin := ofType(got, messages.TerminalCommandFinished)
	if len(fin) != 1 || fin[0].ExitCode != nil || fin[0].CommandID != "c1" || fin[0].DurationMs == nil {
		t.Fatalf("D with no code: %s", js(got))
	}
}

func TestTrackerFakeNonceIgnored(t *testing.T) {
	for _, fake := range []string{"\x1b]633;E;rm -rf /;fake\x07", "\x1b]633;E;rm -rf /\x07", "\x1b]633;E;rm -rf /;" + testNonce + "x\x07"} {
		tr, _ := newTestTracker()
		tr.Output("\x1b]633;A\x07$ \x1b]633;B\x07")
		tr.Input("ls\r")
		got := tr.Output(fake + "\x1b]633;C\x07")
		ex := ofType(got, messages.TerminalCommandExecuted)
		if len(ex) != 1 || *ex[0].CommandLine != "ls" {
			t.Fatalf("%q: got %s", fake, js(got))
		}
		if len(ofType(got, messages.TerminalData)) != 0 {
			t.Fatalf("%q: the mark leaked into the output: %s", fake, js(got))
		}
	}
	// A tracker with no nonce accepts no E at all.
	tr := NewTracker("", nil, nil)
	tr.Input("ls\r")
	got := tr.Output("\x1b]633;E;rm;\x07\x1b]633;C\x07")
	if ex := ofType(got, messages.TerminalCommandExecuted); len(ex) != 1 || *ex[0].CommandLine != "ls" || ex[0].CommandID == "" {
		t.Fatalf("got %s", js(got))
	}
	// A fake E alone does not announce detection either.
	tr = NewTracker(testNonce, nil, nil)
	if got := tr.Output("a\x1b]633;E;x;bad\x07b"); js(got) != `[{"type":"terminal/data","data":"ab"}]` || tr.Detected() {
		t.Fatalf("got %s", js(got))
	}
}

func Test633After133StopsReading133(t *testing.T) {
	tr, _ := newTestTracker()
	var all []messages.Action
	out := func(s string) { all = append(all, tr.Output(s)...) }
	out("\x1b]133;A\x07$ \x1b]133;B\x07")
	tr.Input("one\r")
	out("\x1b]133;C\x07")
	out("1\r\n\x1b]133;D;0\x07")
	// Now a prompt that writes both.
	out("\x1b]633;A\x07\x1b]133;A\x07$ \x1b]133;B\x07\x1b]633;B\x07")
	tr.Input("two\r")
	out("\x1b]633;C\x07\x1b]133;C\x07")
	out("2\r\n")
	out("\x1b]133;D;1\x07\x1b]633;D;0\x07\x1b]133;A\x07")

	if n := len(ofType(all, messages.TerminalCommandDetectionAvailable)); n != 1 {
		t.Fatalf("detection announced %d times", n)
	}
	ex := ofType(all, messages.TerminalCommandExecuted)
	fin := ofType(all, messages.TerminalCommandFinished)
	if len(ex) != 2 || len(fin) != 2 {
		t.Fatalf("executed %d, finished %d: %s", len(ex), len(fin), js(all))
	}
	if *ex[0].CommandLine != "one" || *ex[1].CommandLine != "two" || *fin[1].ExitCode != 0 || fin[1].CommandID != ex[1].CommandID {
		t.Fatalf("got %s", js(all))
	}
	var data strings.Builder
	for _, a := range ofType(all, messages.TerminalData) {
		data.WriteString(*a.Data)
	}
	if data.String() != "$ 1\r\n$ 2\r\n" {
		t.Fatalf("data %q", data.String())
	}
}

func TestTrackerCwd(t *testing.T) {
	tr, _ := newTestTracker()
	got := tr.Output("\x1b]7;file://host/tmp/a%20b\x07x\x1b]7;file://other/tmp/a%20b\x07y\x1b]633;P;Cwd=/tmp/c#d?\x07")
	want := `[{"type":"terminal/cwdChanged","cwd":"file:///tmp/a%20b"},` +
		`{"type":"terminal/data","data":"xy"},` +
		`{"type":"terminal/commandDetectionAvailable"},` +
		`{"type":"terminal/cwdChanged","cwd":"file:///tmp/c%23d%3F"}]`
	if js(got) != want {
		t.Fatalf("got  %s\nwant %s", js(got), want)
	}
}

func TestTrackerOSC7AloneIsNotDetection(t *testing.T) {
	tr, _ := newTestTracker()
	tr.Output("\x1b]7;file:///tmp\x07$ ")
	if tr.Detected() {
		t.Fatal("OSC 7 announced command detection")
	}
}

func TestTrackerEdges(t *testing.T) {
	tr, _ := newTestTracker()
	// No mark: the output is passed through as one data action, not copied.
	in := "plain"
	got := tr.Output(in)
	if len(got) != 1 || *got[0].Data != in {
		t.Fatalf("got %s", js(got))
	}
	if got := tr.Output(""); len(got) != 0 {
		t.Fatalf("empty output made %s", js(got))
	}
	// D with no command running: detection only.
	got = tr.Output("\x1b]133;D;0\x07")
	if js(got) != `[{"type":"terminal/commandDetectionAvailable"}]` {
		t.Fatalf("got %s", js(got))
	}
	// C while another runs finishes that one first, with no code.
	got = tr.Output("\x1b]133;C\x07\x1b]133;C\x07")
	if len(got) != 3 || got[1].Type != messages.TerminalCommandFinished || got[1].ExitCode != nil || got[1].CommandID != "c1" || got[2].CommandID != "c2" {
		t.Fatalf("got %s", js(got))
	}
	// A mark held at exit goes out as data.
	got = tr.Output("out\x1b]133;")
	if js(got) != `[{"type":"terminal/data","data":"out"}]` {
		t.Fatalf("got %s", js(got))
	}
	if got := tr.Flush(); js(got) != `[{"type":"terminal/data","data":"\u001b]133;"}]` {
		t.Fatalf("Flush: %s", js(got))
	}
	if got := tr.Flush(); got != nil {
		t.Fatalf("second Flush: %s", js(got))
	}
}

func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(NewNonce(), nil, nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			tr.Input("ls\r")
		}
	})
	wg.Go(func() {
		for range 200 {
			tr.Output("\x1b]133;A\x07$ \x1b]133;B\x07\x1b]133;C\x07x\x1b]133;D;0\x07")
			tr.Detected()
		}
	})
	wg.Wait()
}

func TestNewNonce(t *testing.T) {
	a, b := NewNonce(), NewNonce()
	if len(a) != 32 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("nonces %q %q", a, b)
	}
	if NonceEnv != "VSCODE_NONCE" {
		t.Fatal(NonceEnv)
	}
}
