package persistence

import (
	"fmt"
	"testing"
)

// The writes of a `!` turn, each on its own and together, on the machine's own disk
// (t.TempDir): what a turn's "kept" step costs. Each is mostly fsyncs; the figures
// show how many a step waits for, not how fast Go is.

// BenchmarkAppendTurn is a turn's line appended to a chat's log and fsynced, in a chat
// that already holds b.N turns by the end: the cost does not grow with it.
func BenchmarkAppendTurn(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const sess, chat = "ahp-session:/bench", "ahp-chat:/bench"
	if err := s.AppendTurn(sess, chat, commandTurn(0)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for n := 1; b.Loop(); n++ {
		if err := s.AppendTurn(sess, chat, commandTurn(n)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveTerminal is a command's output (a line of it) kept as a new file: a
// temporary file written and fsynced, renamed, and its folder fsynced.
func BenchmarkSaveTerminal(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const sess, chat = "ahp-session:/bench", "ahp-chat:/bench"
	t := sampleTerminal()
	for n := 0; b.Loop(); n++ {
		if err := s.SaveTerminal(sess, chat, fmt.Sprintf("call-%d", n), t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeepTurn is all a turn keeps: its output, then (unchanged after the first
// turn, so not written) the session's record, then its line.
func BenchmarkKeepTurn(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const sess, chat = "ahp-session:/bench", "ahp-chat:/bench"
	for n := 0; b.Loop(); n++ {
		f := finishedTurn(sess, fmt.Sprintf("call-%d", n))
		f.Turn.ID = fmt.Sprintf("turn-%d", n)
		if err := s.KeepTurn(sess, chat, f); err != nil {
			b.Fatal(err)
		}
	}
}
