package persistence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// commandTurn is the n-th turn of a chat of `!` commands, anchored to the one before.
func commandTurn(n int) LocalTurn {
	key := fmt.Sprintf("cmd-%d", n)
	anchor := ""
	if n > 0 {
		anchor = fmt.Sprintf("turn-%d", n-1)
	}
	return LocalTurn{ID: fmt.Sprintf("turn-%d", n), AnchorTurnID: anchor, Text: fmt.Sprintf("!echo %d", n),
		StartedAt: t0.Add(time.Duration(n) * time.Second), EndedAt: t0.Add(time.Duration(n)*time.Second + time.Millisecond),
		ToolCallID: key, TerminalURI: "ahp-terminal:/termhost-command/c/" + key, TerminalKey: key,
		Result: json.RawMessage(fmt.Sprintf(`{"success":true,"pastTenseMessage":"Ran command","content":[{"type":"terminal","resource":"ahp-terminal:/termhost-command/c/%s","title":"Terminal","isPty":true,"result":{"exitCode":0,"preview":"%d\n","truncated":false}}]}`, key, n)),
		State:  TurnComplete}
}

// Appending a chat's n-th turn writes the turn's line and nothing else: what it
// costs does not grow with what the chat kept before it. Counted in bytes through the
// store's writer, for the turns of a growing chat, and for KeepTurn: the output it
// keeps and the turn's line, with the session's record written once.
func TestAppendingATurnWritesOnlyThatTurn(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/bytes", "ahp-chat:/bytes"
	written := map[string]int{}
	s.onWrite = func(path string, n int) { written[filepath.Base(path)] += n }
	// header is the most a turn's write may add to its line: the log's first line,
	// written with the first turn.
	const header = 128
	for n := range 300 {
		clear(written)
		turn := commandTurn(n)
		if err := s.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(turn)
		total := 0
		for _, w := range written {
			total += w
		}
		if total > len(line)+1+header || (n > 0 && total != len(line)+1) {
			t.Fatalf("turn %d: %d bytes written (%v) for a line of %d", n, total, written, len(line)+1)
		}
	}

	// KeepTurn: the output, once, and the turn; the record only when it changed.
	const other = "ahp-chat:/keep"
	for n := range 50 {
		clear(written)
		f := finishedTurn(sess, fmt.Sprintf("call-%d", n))
		f.Turn.ID = fmt.Sprintf("keep-%d", n)
		f.Record.LastEnd = t0.Add(time.Duration(n) * time.Minute)
		if err := s.KeepTurn(sess, other, f); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(terminalFile{Version: formatVersion, Key: f.Turn.TerminalKey, RetainedTerminal: *f.Terminal})
		line, _ := json.Marshal(f.Turn)
		want := len(line) + 1
		if n == 0 {
			want += written[sessionFile] + written[chatFile] + header
		}
		total := 0
		for _, w := range written {
			total += w
		}
		// The output's Saved and Session are filled in by SaveTerminal: a few bytes.
		if total > want+len(out)+64 || written[turnsLogFile] < len(line)+1 || n > 0 && (written[sessionFile] != 0 || written[turnsLogFile] != len(line)+1) {
			t.Fatalf("keeping turn %d wrote %v (%d bytes); its line is %d bytes, its output about %d", n, written, total, len(line)+1, len(out))
		}
	}
	// The record's LastEnd moved on without being rewritten: it is read off the log.
	recs, problems := s.Sessions()
	if len(problems) != 0 || len(recs) != 1 {
		t.Fatalf("Sessions = %+v, %v", recs, problems)
	}
	if want := commandTurn(299).EndedAt; !recs[0].LastEnd.Equal(want) {
		t.Fatalf("the session's LastEnd is %v, want its newest turn's end %v", recs[0].LastEnd, want)
	}
}

// A chat of 20,000 turns comes back whole after a restart (a new Store on the same
// folder), in order, and goes on taking turns. The first 19,998 are written as a
// compaction writes a log; the last two are appended.
func TestTwentyThousandTurnsComeBackAfterARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sess, chat, total = "ahp-session:/long", "ahp-chat:/long", 20_000
	if err := s.SaveSession(SessionRecord{URI: sess, Created: t0}); err != nil {
		t.Fatal(err)
	}
	turns := make([]LocalTurn, 0, total)
	for n := range total - 2 {
		turns = append(turns, commandTurn(n))
	}
	if _, err := s.rewriteTurnLogLocked(sess, chat, turns); err != nil {
		t.Fatal(err)
	}
	for n := total - 2; n < total; n++ {
		if err := s.AppendTurn(sess, chat, commandTurn(n)); err != nil {
			t.Fatal(err)
		}
	}

	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Turns(sess, chat)
	if err != nil || len(got) != total {
		t.Fatalf("after a restart: %d turns, %v; want %d", len(got), err, total)
	}
	for n, turn := range got {
		if want := commandTurn(n); turn.ID != want.ID || turn.AnchorTurnID != want.AnchorTurnID || turn.Text != want.Text || !jsonEqual(turn.Result, want.Result) {
			t.Fatalf("turn %d came back as %+v", n, turn)
		}
	}
	if _, kept := MergeTurns(nil, got); len(kept) != total {
		t.Fatalf("MergeTurns keeps %d of %d turns", len(kept), total)
	}
	refsAreTurns(t, again, sess, chat)
	// A page of them, as a chat brings back turns it let go of: those asked for, in
	// the order they ran, whatever order they are asked in; an id not kept is left out.
	page, err := again.TurnsWithIDs(sess, chat, []string{"turn-19999", "turn-7", "turn-8", "no-such-turn", "turn-9"})
	if err != nil || len(page) != 4 {
		t.Fatalf("a page of 4 kept turns: %d turns, %v", len(page), err)
	}
	for i, n := range []int{7, 8, 9, 19999} {
		if want := commandTurn(n); page[i].ID != want.ID || page[i].Text != want.Text || !jsonEqual(page[i].Result, want.Result) {
			t.Fatalf("page turn %d is %+v, want %+v", i, page[i], want)
		}
	}
	recs, _ := again.Sessions()
	if len(recs) != 1 || !recs[0].LastEnd.Equal(commandTurn(total-1).EndedAt) {
		t.Fatalf("Sessions = %+v", recs)
	}
	if err := again.AppendTurn(sess, chat, commandTurn(total)); err != nil {
		t.Fatal(err)
	}
	if got, err := again.Turns(sess, chat); err != nil || len(got) != total+1 {
		t.Fatalf("after one more turn: %d, %v", len(got), err)
	}
}

// A crash in the middle of an append leaves the log's last line cut short, or (on a
// file system that grows a file before its data lands) ending in bytes that are not a
// line at all: reading drops that tail and keeps every turn before it, and the next
// write rewrites the log without it and goes on.
func TestTornAppendIsDroppedAndTheChatGoesOn(t *testing.T) {
	for _, tail := range []struct{ name, bytes string }{
		{"cut short", ""}, // filled in below: half of a real line
		{"zeros", "\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"zeros and a newline", "\x00\x00\x00\x00\n\x00\x00"},
		{"a whole line that does not parse", `{"id":"turn-9","te` + "\n"},
	} {
		t.Run(tail.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sessions")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			const sess, chat = "ahp-session:/torn", "ahp-chat:/torn"
			for n := range 3 {
				if err := s.AppendTurn(sess, chat, commandTurn(n)); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
			whole := mustRead(t, path)
			torn := tail.bytes
			if torn == "" {
				line, _ := turnLine(commandTurn(3))
				torn = string(line[:len(line)/2])
			}
			if err := os.WriteFile(path, append(append([]byte(nil), whole...), torn...), 0o600); err != nil {
				t.Fatal(err)
			}

			again, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := again.Turns(sess, chat)
			if err != nil || len(got) != 3 || got[2].ID != "turn-2" {
				t.Fatalf("a torn log reads %d turns, %v; want the 3 before the tear", len(got), err)
			}
			refsAreTurns(t, again, sess, chat)
			if err := again.AppendTurn(sess, chat, commandTurn(3)); err != nil {
				t.Fatalf("appending after a tear: %v", err)
			}
			got, err = again.Turns(sess, chat)
			if err != nil || len(got) != 4 || got[3].ID != "turn-3" {
				t.Fatalf("after the next append: %d turns, %v", len(got), err)
			}
			line, _ := turnLine(commandTurn(3))
			if after := mustRead(t, path); string(after) != string(whole)+string(line) {
				t.Fatalf("the log after the next append holds the tear:\n%q", after)
			}
		})
	}
}

// A chat an older version kept in turns.json loads as it was, and its first write
// moves it into the log: turns.json goes, every turn stays, the new one follows. A
// turns.json that does not parse is refused and left as it is.
func TestOlderTurnsFileIsMigrated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sess, chat = "ahp-session:/old", "ahp-chat:/old"
	cdir, err := s.ensureChat(sess, chat)
	if err != nil {
		t.Fatal(err)
	}
	// What the version before the log wrote: the whole chat in one document.
	old := []LocalTurn{commandTurn(0), commandTurn(1)}
	b, _ := json.Marshal(map[string]any{"version": 1, "chat": chat, "turns": old})
	legacy := filepath.Join(cdir, turnsFile)
	if err := os.WriteFile(legacy, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Turns(sess, chat); err != nil || len(got) != 2 || got[1].ID != "turn-1" {
		t.Fatalf("an older chat reads %+v, %v", got, err)
	}
	refsAreTurns(t, s, sess, chat)
	if err := s.AppendTurn(sess, chat, commandTurn(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("turns.json after the migration: %v", err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Turns(sess, chat)
	if err != nil || len(got) != 3 || got[0].ID != "turn-0" || got[2].ID != "turn-2" {
		t.Fatalf("after the migration: %+v, %v", got, err)
	}

	// A crash after the log was written and before turns.json went: the log is read,
	// and the next write removes the stale file.
	if err := os.WriteFile(legacy, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := again.Turns(sess, chat); err != nil || len(got) != 3 {
		t.Fatalf("with a stale turns.json beside the log: %d turns, %v", len(got), err)
	}
	third, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := third.AppendTurn(sess, chat, commandTurn(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a stale turns.json stayed: %v", err)
	}

	// A corrupt turns.json is not migrated over.
	const broken = "ahp-chat:/broken"
	bdir, err := s.ensureChat(sess, broken)
	if err != nil {
		t.Fatal(err)
	}
	bad := b[:len(b)/2]
	if err := os.WriteFile(filepath.Join(bdir, turnsFile), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Turns(sess, broken); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Turns of a truncated turns.json = %v, want ErrCorrupt", err)
	}
	if err := s.AppendTurn(sess, broken, commandTurn(0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("AppendTurn onto a truncated turns.json = %v, want ErrCorrupt", err)
	}
	if string(mustRead(t, filepath.Join(bdir, turnsFile))) != string(bad) || fileExists(filepath.Join(bdir, turnsLogFile)) {
		t.Fatal("a corrupt turns.json was migrated over")
	}
}

// A turn kept again and again (each one replacing the last) makes lines nobody reads;
// once they outweigh the lines that count the log is rewritten without them, so it
// stays within twice what it keeps (and compactMinDead).
func TestReplacedTurnsAreCompactedAway(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/again", "ahp-chat:/again"
	for n := range 3 {
		if err := s.AppendTurn(sess, chat, commandTurn(n)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
	live := int64(len(mustRead(t, path)))
	again := commandTurn(1)
	line, _ := turnLine(again)
	biggest := int64(0)
	for i := range 2 * compactMinDead / len(line) {
		again.Text = fmt.Sprintf("!echo %06d", i)
		if err := s.AppendTurn(sess, chat, again); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		biggest = max(biggest, fi.Size())
	}
	if limit := 2*live + compactMinDead + int64(len(line)); biggest > limit {
		t.Fatalf("the log grew to %d bytes keeping %d", biggest, live)
	}
	got, err := s.Turns(sess, chat)
	if err != nil || len(got) != 3 || got[1].Text != again.Text || got[2].ID != "turn-2" {
		t.Fatalf("turns after replacing one: %+v, %v", got, err)
	}
	if n := strings.Count(string(mustRead(t, path)), "\n"); n > 1+3+compactMinDead/len(line)+1 {
		t.Fatalf("the log holds %d lines", n)
	}
}

// A log that something else wrote to after the store did (a person's editor, a copy
// put back) is read again before the next append, which goes after what it holds.
func TestLogChangedUnderTheStoreIsReadAgain(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/edited", "ahp-chat:/edited"
	for n := range 2 {
		if err := s.AppendTurn(sess, chat, commandTurn(n)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := turnLine(commandTurn(2))
	if _, err := f.Write(line); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(sess, chat, commandTurn(3)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Turns(sess, chat)
	if err != nil || len(got) != 4 || got[2].ID != "turn-2" || got[3].ID != "turn-3" {
		t.Fatalf("turns: %+v, %v", got, err)
	}
}

// A page of turns holds each turn as it was kept last, where it first stood, and
// nothing of a torn tail; an id written with an escape is found too.
func TestTurnsWithIDsReadsTheNewestLine(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/page", "ahp-chat:/page"
	odd := commandTurn(2)
	odd.ID = "turn-\"quoted\"-2"
	for _, turn := range []LocalTurn{commandTurn(0), commandTurn(1), odd} {
		if err := s.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
	}
	again := commandTurn(0)
	again.Text = "!echo again"
	if err := s.AppendTurn(sess, chat, again); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"turn-1","text":"!torn`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	page, err := s.TurnsWithIDs(sess, chat, []string{odd.ID, "turn-1", "turn-0"})
	if err != nil {
		t.Fatal(err)
	}
	got := idsAndTexts(page)
	want := []string{"turn-0 !echo again", "turn-1 !echo 1", odd.ID + " !echo 2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("page = %q, want %q", got, want)
	}
	refsAreTurns(t, s, sess, chat)
}

// A restart reads only the ids and anchors of a chat's turns off their lines' starts:
// what it gets is what a whole read gives, whatever the lines hold (a first turn with
// no anchor, anchors, a turn kept again with a new anchor, an id or anchor with an
// escape, which is decoded), and a log a whole read refuses is refused too.
func TestTurnRefsAreWhatAWholeReadGives(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/refs", "ahp-chat:/refs"
	escaped := commandTurn(3)
	escaped.ID = `turn-"3"`
	anchoredOnEscape := commandTurn(4)
	anchoredOnEscape.AnchorTurnID = escaped.ID
	moved := commandTurn(1)
	moved.AnchorTurnID = "turn-0-again"
	for _, turn := range []LocalTurn{commandTurn(0), commandTurn(1), commandTurn(2), escaped, anchoredOnEscape, moved} {
		if err := s.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
	}
	refs := refsAreTurns(t, s, sess, chat)
	var got []string
	for _, r := range refs {
		got = append(got, r.ID+"<"+r.AnchorTurnID)
	}
	want := []string{"turn-0<", "turn-1<turn-0-again", "turn-2<turn-1", `turn-"3"<turn-2`, `turn-4<turn-"3"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("refs = %q, want %q", got, want)
	}

	// A line that does not parse before lines that do: refused, as a whole read is.
	path := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
	whole := mustRead(t, path)
	first := bytes.IndexByte(whole, '\n') + 1
	broken := append(append(append([]byte(nil), whole[:first]...), "not a turn\n"...), whole[first:]...)
	if err := os.WriteFile(path, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TurnRefs(sess, chat); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("TurnRefs of a log with a bad line amid good ones = %v, want ErrCorrupt", err)
	}
	if refs, err := s.TurnRefs(sess, "ahp-chat:/none"); err != nil || len(refs) != 0 {
		t.Fatalf("TurnRefs of a chat with no turns = %v, %v; want none, as Turns", refs, err)
	}
}

// refsAreTurns checks that TurnRefs gives the ids and anchors Turns gives, in its
// order, and returns them.
func refsAreTurns(t *testing.T, s *Store, sess, chat string) []TurnRef {
	t.Helper()
	turns, err := s.Turns(sess, chat)
	refs, rerr := s.TurnRefs(sess, chat)
	if (err == nil) != (rerr == nil) || len(refs) != len(turns) {
		t.Fatalf("TurnRefs: %d, %v; Turns: %d, %v", len(refs), rerr, len(turns), err)
	}
	for i := range turns {
		if refs[i].ID != turns[i].ID || refs[i].AnchorTurnID != turns[i].AnchorTurnID {
			t.Fatalf("ref %d is %q after %q; the turn is %q after %q", i, refs[i].ID, refs[i].AnchorTurnID, turns[i].ID, turns[i].AnchorTurnID)
		}
	}
	return refs
}

// The turn of a tool call is found by the lines that name it: its newest line, an
// escaped id matched as written, none for a call nobody ran.
func TestTurnsOfToolCall(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/calls", "ahp-chat:/calls"
	odd := commandTurn(2)
	odd.ToolCallID = `cmd-"<2>"`
	again := commandTurn(1)
	again.Text = "!echo again"
	for _, turn := range []LocalTurn{commandTurn(0), commandTurn(1), odd, again} {
		if err := s.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
	}
	for call, want := range map[string]string{"cmd-1": "turn-1 !echo again", odd.ToolCallID: "turn-2 !echo 2", "cmd-0": "turn-0 !echo 0", "cmd-9": ""} {
		turns, err := s.TurnsOfToolCall(sess, chat, call)
		got := idsAndTexts(turns)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("TurnsOfToolCall(%q) = %q, %v; want %q", call, got, err, want)
		}
	}
}

// idsAndTexts is each turn as "id text", in order.
func idsAndTexts(turns []LocalTurn) []string {
	var out []string
	for _, turn := range turns {
		out = append(out, turn.ID+" "+turn.Text)
	}
	return out
}

// Reading a page of a long chat's turns reads those turns' lines and nothing else of
// its log, once the store has read the log through (the first read or append after
// it is opened): counted in bytes through the store's reader. The page comes back in
// the order the turns ran, a turn kept again where it first stood and as last kept,
// after appends and after a compaction, and an id the chat never kept is left out.
func TestReadingAPageReadsOnlyItsTurns(t *testing.T) {
	const sess, chat, total = "ahp-session:/pages", "ahp-chat:/pages", 3000
	s, turns := longChat(t, sess, chat, total)
	read := 0
	s.onRead = func(n int) { read += n }
	page := func(from, to int, extra ...string) ([]string, int) {
		t.Helper()
		var ids []string
		for n := to - 1; n >= from; n-- { // asked newest first: the answer is in the order they ran
			ids = append(ids, fmt.Sprintf("turn-%d", n))
		}
		read = 0
		got, err := s.TurnsWithIDs(sess, chat, append(ids, extra...))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, 0, len(got))
		for _, turn := range got {
			out = append(out, turn.ID)
		}
		return out, read
	}
	lineBytes := func(from, to int) int {
		n := 0
		for _, turn := range turns[from:to] {
			line, _ := turnLine(turn)
			n += len(line)
		}
		return n
	}
	want := func(from, to int) []string {
		var ids []string
		for n := from; n < to; n++ {
			ids = append(ids, fmt.Sprintf("turn-%d", n))
		}
		return ids
	}
	logBytes := func() int {
		fi, err := os.Stat(filepath.Join(s.chatDir(sess, chat), turnsLogFile))
		if err != nil {
			t.Fatal(err)
		}
		return int(fi.Size())
	}

	// The first read goes through the log once.
	if got, n := page(2000, 2050); !slices.Equal(got, want(2000, 2050)) || n < logBytes() {
		t.Fatalf("the first page: %d turns, %d bytes read of a %d-byte log", len(got), n, logBytes())
	}
	for _, p := range [][2]int{{1000, 1050}, {0, 50}, {2950, 3000}} {
		got, n := page(p[0], p[1], "turn-never-kept")
		if !slices.Equal(got, want(p[0], p[1])) || n > lineBytes(p[0], p[1]) {
			t.Fatalf("turns %d to %d: got %d turns, read %d bytes for %d bytes of lines (the log is %d)", p[0], p[1], len(got), n, lineBytes(p[0], p[1]), logBytes())
		}
	}

	// A turn kept again stands where it first did, as it was last kept; a new turn
	// is read from where it was appended.
	again := commandTurn(1010)
	again.Text = "!echo kept again"
	if err := s.AppendTurn(sess, chat, again); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(sess, chat, commandTurn(total)); err != nil {
		t.Fatal(err)
	}
	got, err := s.TurnsWithIDs(sess, chat, []string{fmt.Sprintf("turn-%d", total), "turn-1011", "turn-1010", "turn-1009"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].ID != "turn-1009" || got[1].ID != "turn-1010" || got[1].Text != again.Text || got[2].ID != "turn-1011" || got[3].ID != fmt.Sprintf("turn-%d", total) {
		t.Fatalf("after appends: %+v", got)
	}

	// A store opened afresh on a log with a replaced line compacts it on its first
	// read, and reads pages from the compacted log.
	s2, err := Open(s.root)
	if err != nil {
		t.Fatal(err)
	}
	s2.onRead = s.onRead
	s = s2
	if got, _ := page(1005, 1015); !slices.Equal(got, want(1005, 1015)) {
		t.Fatalf("after a reopen: %v", got)
	}
	if got, n := page(1009, 1012); !slices.Equal(got, want(1009, 1012)) || n > lineBytes(1009, 1012)+64 {
		t.Fatalf("after a compaction: %v, %d bytes read", got, n)
	}
	// Most of the chat (a subscribe without a view) is read through, in order.
	if got, _ := page(0, total+1); !slices.Equal(got, want(0, total+1)) {
		t.Fatalf("every turn: %d of %d", len(got), total+1)
	}
	// A log rewritten under the store (every line moved) is read through, not misread.
	other, err := Open(s.root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.rewriteTurnLogLocked(sess, chat, turns[1000:]); err != nil {
		t.Fatal(err)
	}
	if got, _ := page(1000, 1050); !slices.Equal(got, want(1000, 1050)) {
		t.Fatalf("a page of a log rewritten under the store: %v", got)
	}
}
