package integration

import (
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
