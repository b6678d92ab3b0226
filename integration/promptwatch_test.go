package integration

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPromptLooksDrawApartAndComeNearOnOutput(t *testing.T) {
	var l PromptLooks
	var got []time.Duration
	for range 11 {
		got = append(got, l.Next())
	}
	want := []time.Duration{250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 100000, 100000}
	for i := range want {
		if got[i] != want[i]*time.Microsecond {
			t.Fatalf("gaps %v, want %v µs", got, want)
		}
	}
	if !l.Printed() || l.Next() != 250*time.Microsecond {
		t.Fatal("output did not bring the looks near again")
	}
	if l.Printed() {
		t.Fatal("looks already near were said to have drawn apart")
	}
}

func TestEchoedFindsTheTypedLinesEnd(t *testing.T) {
	for _, tc := range []struct {
		out, line string
		want      bool
	}{
		{"$ ", " head -n 1; echo after-$?", false},
		{"$  head -n 1; echo after-$?\r\n", " head -n 1; echo after-$?", true},
		{"$  for i in 1 2\r\n> do echo $i; done\r\n", " for i in 1 2\ndo echo $i; done", true},
		{"$  for i in 1 2\r\n", " for i in 1 2\ndo echo $i; done", false},
	} {
		if got := Echoed(tc.out, tc.line); got != tc.want {
			t.Errorf("Echoed(%q, %q) = %v, want %v", tc.out, tc.line, got, tc.want)
		}
	}
}

func TestOwedSentinelWaitsForTheEchoThenTypesAQuietLine(t *testing.T) {
	o := Owe("k9", "head -n 1", 1)
	if o.MayLook("$ ") {
		t.Fatal("a look before the command's line came back")
	}
	if !o.MayLook("$  head -n 1\r\n") {
		t.Fatal("no look once the command's line came back")
	}
	if got, want := o.Line(), ` echo "<<<COPILOT_SENTINEL_k9_EXIT_$?>>>"`+"\r"; got != want {
		t.Fatalf("Line = %q, want %q (a leading space keeps it out of the history)", got, want)
	}
	var none *OwedSentinel
	if none.Printed() {
		t.Fatal("no sentinel owed, yet its looks were brought near")
	}
}

// On pipes nothing echoes: the looks wait for the line to be written instead, and
// once it is, waiting looks are brought near.
func TestOwedSentinelOnPipesWaitsForTheLineToBeWritten(t *testing.T) {
	o := OweOnPipes("k9", "head -n 1", 1)
	if o.MayLook(" head -n 1\n") {
		t.Fatal("a look on pipes before the command's line was written")
	}
	o.Next()
	o.Next() // the looks have drawn apart
	if !o.Wrote() {
		t.Fatal("the looks that drew apart were not brought near once the line was written")
	}
	if !o.MayLook("") {
		t.Fatal("no look once the command's line was written")
	}
	if o.Wrote() {
		t.Fatal("the line written twice brought the looks near twice")
	}
	var none *OwedSentinel
	if none.Wrote() {
		t.Fatal("no sentinel owed, yet its looks were brought near")
	}
}

// An owed sentinel drives its own looks once started: on pipes it asks for no
// look before the line is written, never hands out its line while the command
// reads the shell's pipe, and hands it out once the shell reads again; typed, the
// line makes the shell print the command's exit code.
func TestOwedSentinelStartedLooksUntilTheShellReadsAgain(t *testing.T) {
	if !SentinelsOwed {
		t.Skip("no /proc here: sentinels are not owed")
	}
	sh := exec.Command("/bin/bash")
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = sh.Wait() })
	lines := bufio.NewReader(out)

	told := make(chan any, 4)
	o := OweOnPipes("k9", "head -n 1", sh.Process.Pid)
	o.Start("the command", func(m any) { told <- m })
	defer o.Stop()
	// next hands each message back as the holder does, until Looked gives the line
	// or looks have run out.
	next := func(looks int) (string, bool) {
		t.Helper()
		for range looks {
			select {
			case m := <-told:
				switch m := m.(type) {
				case *SentinelDue:
					if m.Key != "the command" || m.Owed != o {
						t.Fatalf("a due look names %v, %p", m.Key, m.Owed)
					}
					o.Due("")
				case *SentinelLooked:
					if line, ok := o.Looked(m); ok {
						return line, true
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the owed sentinel told nothing for 10 s")
			}
		}
		return "", false
	}
	// Before the line is written, due looks are not made: a shell blocked reading
	// an empty pipe may not have read anything yet.
	unwritten := time.After(20 * time.Millisecond) // the first gaps pass
	for waiting := true; waiting; {
		select {
		case m := <-told:
			if _, looked := m.(*SentinelLooked); looked {
				t.Fatal("a look was made on pipes before the command's line was written")
			}
			o.Due("")
		case <-unwritten:
			waiting = false
		}
	}
	if _, err := io.WriteString(in, "head -n 1\n"); err != nil {
		t.Fatal(err)
	}
	o.Wrote()
	if line, ok := next(24); ok {
		t.Fatalf("the sentinel's line %q was handed out while head reads the pipe", line)
	}
	if _, err := io.WriteString(in, "for-head\n"); err != nil {
		t.Fatal(err)
	}
	line, ok := next(1000)
	if !ok {
		t.Fatal("the shell back at reading its pipe was never seen")
	}
	if _, err := io.WriteString(in, strings.ReplaceAll(line, "\r", "\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"for-head", "<<<COPILOT_SENTINEL_k9_EXIT_0>>>"} {
		got, err := lines.ReadString('\n')
		if err != nil || strings.TrimSpace(got) != want {
			t.Fatalf("the shell printed %q (%v), want %q", got, err, want)
		}
	}
}
