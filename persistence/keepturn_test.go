package persistence

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func finishedTurn(sess, key string) FinishedTurn {
	return FinishedTurn{
		Terminal: &RetainedTerminal{URI: "ahp-terminal:/t", Title: "Terminal", Output: "ran\r\n", ExitCode: intp(0), IsPty: true},
		Record:   &SessionRecord{URI: sess, Title: "echo ran", FirstStart: t0, LastEnd: t0.Add(1e9)},
		Turn: LocalTurn{ID: "turn-" + key, Text: "!echo ran", StartedAt: t0, EndedAt: t0.Add(1e9), ToolCallID: key,
			TerminalURI: "ahp-terminal:/t", TerminalKey: key, Result: json.RawMessage(`{"success":true}`), State: TurnComplete},
	}
}

// renamedFile names the file a temporary file of writeAtomic becomes:
// ".<name>.<random>.tmp" -> "<name>".
func renamedFile(tmp string) string {
	base := strings.TrimPrefix(filepath.Base(tmp), ".")
	base = strings.TrimSuffix(base, tmpSuffix)
	return base[:strings.LastIndex(base, ".")]
}

// KeepTurn puts the terminal's output in place, whole, before the session's record,
// and both before the turn that names the output: at the moment the turn lands in the
// chat's log - the log made (renamed into place) with the first turn, a line appended
// for every later one - a crash cannot have lost what the turn names.
func TestKeepTurnWritesTheOutputBeforeTheTurn(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/order", "ahp-chat:/order"
	var order []string
	landing := "" // the key of the turn being kept
	landed := 0
	check := func() {
		landed++
		kept, err := s.LoadTerminal(sess, chat, landing)
		if err != nil || kept.Output != "ran\r\n" {
			t.Errorf("when the turn of %s lands, its terminal reads %q, %v", landing, kept.Output, err)
		}
		if _, err := s.readRecord(sess); err != nil {
			t.Errorf("when the turn of %s lands, the session's record reads %v", landing, err)
		}
	}
	s.beforeRename = func(tmp string) error {
		name := renamedFile(tmp)
		order = append(order, name)
		if name == turnsLogFile {
			check()
		}
		return nil
	}
	s.beforeInPlace = func(path string) error {
		order = append(order, "append "+filepath.Base(path))
		check()
		return nil
	}
	for _, key := range []string{"call-1", "call-2"} {
		landing = key
		if err := s.KeepTurn(sess, chat, finishedTurn(sess, key)); err != nil {
			t.Fatal(err)
		}
	}
	if landed != 2 {
		t.Fatalf("%d turns landed in the log; writes: %v", landed, order)
	}
	at := func(name string) int {
		for i, n := range order {
			if n == name {
				return i
			}
		}
		t.Fatalf("%s was never written; writes: %v", name, order)
		return -1
	}
	first, second := encodeName("call-1")+".json", encodeName("call-2")+".json"
	if !(at(first) < at(sessionFile) && at(sessionFile) < at(turnsLogFile) && at(turnsLogFile) < at(second) && at(second) < at("append "+turnsLogFile)) {
		t.Fatalf("writes in the order %v; want the terminal, then session.json, then the turn, for each turn", order)
	}
	// The record said nothing new with the second turn: it was written once.
	if n := strings.Count(strings.Join(order, " "), sessionFile); n != 1 {
		t.Fatalf("session.json written %d times; writes: %v", n, order)
	}
	turns, err := s.Turns(sess, chat)
	if err != nil || len(turns) != 2 || turns[0].TerminalKey != "call-1" || turns[1].TerminalKey != "call-2" {
		t.Fatalf("turns kept: %+v, %v", turns, err)
	}
}

// A second turn is appended after the first, each with its output.
func TestKeepTurnKeepsTurnsInOrder(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/two", "ahp-chat:/two"
	first, second := finishedTurn(sess, "call-1"), finishedTurn(sess, "call-2")
	second.Turn.AnchorTurnID = first.Turn.ID
	second.Terminal.Output = "second\r\n"
	for _, f := range []FinishedTurn{first, second} {
		if err := s.KeepTurn(sess, chat, f); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := s.Turns(sess, chat)
	if err != nil || len(turns) != 2 || turns[0].ID != first.Turn.ID || turns[1].ID != second.Turn.ID {
		t.Fatalf("turns kept: %+v, %v", turns, err)
	}
	for _, turn := range turns {
		if _, err := s.LoadTerminal(sess, chat, turn.TerminalKey); err != nil {
			t.Errorf("turn %s names output that is not kept: %v", turn.ID, err)
		}
	}
}

// An output that is not kept does not lose the turn, and the turn then names no
// output, so nothing it names is missing.
func TestKeepTurnWithoutItsOutput(t *testing.T) {
	const sess, chat = "ahp-session:/lost", "ahp-chat:/lost"
	for _, tc := range []struct {
		name    string
		prepare func(s *Store, f *FinishedTurn) error // returns the error KeepTurn must wrap
	}{
		{"too large", func(s *Store, f *FinishedTurn) error {
			f.Terminal.Output = strings.Repeat("x", MaxRetainedOutput+1)
			return ErrTooLarge
		}},
		{"write failed", func(s *Store, f *FinishedTurn) error {
			failed := errors.New("disk full")
			s.beforeRename = func(tmp string) error {
				if filepath.Base(filepath.Dir(tmp)) == terminalsDir {
					return failed
				}
				return nil
			}
			return failed
		}},
		{"none given", func(s *Store, f *FinishedTurn) error {
			f.Terminal = nil
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			f := finishedTurn(sess, "call-1")
			want := tc.prepare(s, &f)
			err := s.KeepTurn(sess, chat, f)
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Fatalf("KeepTurn = %v, want %v", err, want)
			}
			turns, err := s.Turns(sess, chat)
			if err != nil || len(turns) != 1 || turns[0].ID != f.Turn.ID {
				t.Fatalf("the turn was not kept: %+v, %v", turns, err)
			}
			if turns[0].TerminalKey != "" {
				t.Fatalf("the turn names output %q that was not kept", turns[0].TerminalKey)
			}
			if _, err := s.LoadTerminal(sess, chat, "call-1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("LoadTerminal = %v, want ErrNotFound", err)
			}
			if recs, _ := s.Sessions(); len(recs) != 1 || recs[0].Title != "echo ran" {
				t.Fatalf("the session's record: %+v", recs)
			}
		})
	}
}

// A record that cannot be written stops the turn: a turn whose session is not listed
// after a restart would never be seen.
func TestKeepTurnStopsWhenTheRecordFails(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/norecord", "ahp-chat:/norecord"
	failed := errors.New("disk full")
	s.beforeRename = func(tmp string) error {
		if renamedFile(tmp) == sessionFile {
			return failed
		}
		return nil
	}
	if err := s.KeepTurn(sess, chat, finishedTurn(sess, "call-1")); !errors.Is(err, failed) {
		t.Fatalf("KeepTurn = %v, want the record's error", err)
	}
	if turns, err := s.Turns(sess, chat); err != nil || len(turns) != 0 {
		t.Fatalf("a turn was kept without its record: %+v, %v", turns, err)
	}
	if _, err := os.Stat(filepath.Join(s.chatDir(sess, chat), turnsLogFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("turns.jsonl: %v", err)
	}

	bad := finishedTurn("ahp-session:/other", "call-1")
	if err := s.KeepTurn(sess, chat, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("KeepTurn with another session's record = %v, want ErrInvalid", err)
	}
}

// A terminal's file prepared before there is anything to keep reads as nothing kept,
// and keeping the terminal then writes into it: one write, no rename. A key that
// keeps something is left alone by both PrepareTerminal and DiscardPrepared; a
// failed write leaves the file empty; an output that is not kept takes its prepared
// file with it; and Open sweeps a prepared file a crash left.
func TestPreparedTerminal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sess, chat = "ahp-session:/prep", "ahp-chat:/prep"
	renamed := 0
	s.beforeRename = func(tmp string) error {
		if filepath.Base(filepath.Dir(tmp)) == terminalsDir {
			renamed++
		}
		return nil
	}
	if err := s.PrepareTerminal(sess, chat, "call-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTerminal(sess, chat, "call-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a prepared terminal reads %v, want ErrNotFound", err)
	}
	f := finishedTurn(sess, "call-1")
	if err := s.KeepTurn(sess, chat, f); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadTerminal(sess, chat, "call-1"); err != nil || got.Output != f.Terminal.Output {
		t.Fatalf("the prepared terminal kept %+v, %v", got, err)
	}
	if renamed != 0 {
		t.Fatalf("keeping a prepared terminal renamed %d files into place", renamed)
	}
	// A kept key is left alone.
	if err := s.PrepareTerminal(sess, chat, "call-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardPrepared(sess, chat, "call-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadTerminal(sess, chat, "call-1"); err != nil || got.Output != f.Terminal.Output {
		t.Fatalf("a kept terminal after Prepare and Discard: %+v, %v", got, err)
	}

	// A write that fails leaves the file as prepared, and the turn without its output.
	if err := s.PrepareTerminal(sess, chat, "call-2"); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("disk full")
	s.beforeInPlace = func(path string) error {
		if filepath.Base(filepath.Dir(path)) == terminalsDir {
			return failed
		}
		return nil
	}
	second := finishedTurn(sess, "call-2")
	second.Turn.ID = "turn-call-2"
	if err := s.KeepTurn(sess, chat, second); !errors.Is(err, failed) {
		t.Fatalf("KeepTurn = %v, want the write's error", err)
	}
	s.beforeInPlace = nil
	if _, err := s.LoadTerminal(sess, chat, "call-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after a failed write the terminal reads %v", err)
	}
	if fileExists(terminalPath(s, sess, chat, "call-2")) {
		t.Fatal("the prepared file of an output not kept stayed")
	}
	turns, err := s.Turns(sess, chat)
	if err != nil || len(turns) != 2 || turns[1].TerminalKey != "" {
		t.Fatalf("turns: %+v, %v", turns, err)
	}

	// Too large: nothing kept, and the prepared file goes.
	if err := s.PrepareTerminal(sess, chat, "call-3"); err != nil {
		t.Fatal(err)
	}
	third := finishedTurn(sess, "call-3")
	third.Turn.ID = "turn-call-3"
	third.Terminal.Output = strings.Repeat("x", MaxRetainedOutput+1)
	if err := s.KeepTurn(sess, chat, third); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("KeepTurn = %v, want ErrTooLarge", err)
	}
	if fileExists(terminalPath(s, sess, chat, "call-3")) {
		t.Fatal("the prepared file of a too large output stayed")
	}

	// A crash before the turn was kept: the empty file is swept once a minute old.
	if err := s.PrepareTerminal(sess, chat, "call-4"); err != nil {
		t.Fatal(err)
	}
	path := terminalPath(s, sess, chat, "call-4")
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	<-again.swept
	if fileExists(path) {
		t.Fatal("Open left a stale prepared file")
	}
	if _, err := s.LoadTerminal(sess, chat, "call-1"); err != nil {
		t.Fatalf("Open swept a kept terminal: %v", err)
	}
}
