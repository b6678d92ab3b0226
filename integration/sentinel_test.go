package integration

import (
	"os/exec"
	"strings"
	"testing"
)

func TestSentinelCodeReadsOnlyItsOwnID(t *testing.T) {
	out := "old <<<COPILOT_SENTINEL_aa_EXIT_3>>>\r\nnew <<<COPILOT_SENTINEL_bb_EXIT_42>>>\r\n"
	if code, ok := SentinelCode(out, "bb"); !ok || code != 42 {
		t.Fatalf("SentinelCode(bb) = %d, %v; want 42, true", code, ok)
	}
	if _, ok := SentinelCode(out, "cc"); ok {
		t.Fatal("a sentinel id that was never printed was found")
	}
}

func TestSentinelEchoPrintsWhatSentinelCodeReads(t *testing.T) {
	echo := SentinelEcho("zz")
	// What the shell prints for `echo "<<<..._EXIT_$?>>>"` after a command that exited 7.
	printed := "<<<" + SentinelPrefix + "zz_EXIT_7>>>"
	if code, ok := SentinelCode(printed, "zz"); !ok || code != 7 {
		t.Fatalf("echo %q printed %q, read %d, %v", echo, printed, code, ok)
	}
}

func TestWithoutSentinelDropsItsLines(t *testing.T) {
	text := "a\n" + SentinelEcho("id1") + "\nb\n<<<" + SentinelPrefix + "id1_EXIT_0>>>\n"
	if got := WithoutSentinel(text, "id1"); got != "a\nb\n" {
		t.Fatalf("WithoutSentinel = %q", got)
	}
}

func TestSentinelCodeSinceFindsASentinelSplitAcrossReads(t *testing.T) {
	first := "lots of output\r\n<<<" + SentinelPrefix + "ab"
	out := first + "_EXIT_5>>>\r\n"
	if code, ok := SentinelCodeSince(out, len(first), "ab"); !ok || code != 5 {
		t.Fatalf("SentinelCodeSince = %d, %v; want 5, true", code, ok)
	}
	if _, ok := SentinelCodeSince(out+"more", len(out)+4, "zz"); ok {
		t.Fatal("found a sentinel that is not there")
	}
}

// The line a shell without marks is given prints the seed's sentinel, VS Code's own
// text, which clients read in the terminal: <<<COPILOT_SENTINEL_<id>_EXIT_<code>>>>.
func TestSentinelEchoPrintsTheSeedsSentinel(t *testing.T) {
	out, err := exec.Command("/bin/sh", "-c", "false; "+SentinelEcho("k7")).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "<<<COPILOT_SENTINEL_k7_EXIT_1>>>"; got != want {
		t.Fatalf("sh printed %q, want %q", got, want)
	}
	if code, ok := SentinelCode(string(out), "k7"); !ok || code != 1 {
		t.Fatalf("SentinelCode = %d, %v; want 1, true", code, ok)
	}
}

func TestWithoutSentinelsDropsEveryIDsLines(t *testing.T) {
	log := "$ one\r\n1\r\n$  echo \"<<<" + SentinelPrefix + "aa_EXIT_$?>>>\"\r\n<<<" + SentinelPrefix + "aa_EXIT_0>>>\r\n$ two\r\n2\r\n<<<" + SentinelPrefix + "bb_EXIT_3>>>\r\n$ "
	want := "$ one\r\n1\r\n$ two\r\n2\r\n$ "
	if got := WithoutSentinels(log); got != want {
		t.Fatalf("WithoutSentinels =\n%q\nwant\n%q", got, want)
	}
	if plain := "no sentinel here\n"; WithoutSentinels(plain) != plain {
		t.Fatal("a text without sentinels changed")
	}
}
