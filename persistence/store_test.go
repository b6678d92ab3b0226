package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func intp(n int) *int { return &n }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sampleTerminal() RetainedTerminal {
	return RetainedTerminal{
		URI:        "ahp-terminal:/chat-1/call-1",
		Title:      "Terminal",
		Output:     "ran\r\n\x1b[1mbold\x1b[0m ünïcødé ✓\n",
		ExitCode:   intp(3),
		IsPty:      true,
		Truncated:  true,
		Session:    "ahp-session:/s1",
		Chat:       "ahp-chat:/c1",
		ToolCallID: "call-1",
		Saved:      t0,
	}
}

func terminalPath(s *Store, session, chat, key string) string {
	return filepath.Join(s.chatDir(session, chat), terminalsDir, encodeName(key)+".json")
}

func TestTerminalRoundTrip(t *testing.T) {
	s := openTemp(t)
	want := sampleTerminal()
	if err := s.SaveTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-1", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.URI != want.URI || got.Title != want.Title || got.Output != want.Output ||
		got.ExitCode == nil || *got.ExitCode != 3 || !got.IsPty || !got.Truncated ||
		got.Session != want.Session || got.Chat != want.Chat || got.ToolCallID != want.ToolCallID ||
		!got.Saved.Equal(want.Saved) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}

	// No exit code stays nil; empty Session, Chat and Saved are filled in.
	before := time.Now()
	if err := s.SaveTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-2", RetainedTerminal{URI: "ahp-terminal:/x"}); err != nil {
		t.Fatal(err)
	}
	got, err = s.LoadTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-2")
	if err != nil {
		t.Fatal(err)
	}
	if got.ExitCode != nil || got.Session != "ahp-session:/s1" || got.Chat != "ahp-chat:/c1" || got.Saved.Before(before.Add(-time.Second)) {
		t.Fatalf("defaults not filled: %+v", got)
	}

	// Saving again replaces.
	want.Output = "second"
	if err := s.SaveTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-1", want); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.LoadTerminal("ahp-session:/s1", "ahp-chat:/c1", "call-1"); got.Output != "second" {
		t.Fatalf("output after second save = %q", got.Output)
	}

	for _, k := range [][3]string{
		{"ahp-session:/s1", "ahp-chat:/c1", "call-3"},
		{"ahp-session:/s1", "ahp-chat:/c2", "call-1"},
		{"ahp-session:/s2", "ahp-chat:/c1", "call-1"},
		{"", "ahp-chat:/c1", "call-1"},
	} {
		if _, err := s.LoadTerminal(k[0], k[1], k[2]); !errors.Is(err, ErrNotFound) {
			t.Errorf("LoadTerminal%q = %v, want ErrNotFound", k, err)
		}
	}
	if err := s.SaveTerminal("ahp-session:/s1", "", "k", want); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty chat: %v, want ErrInvalid", err)
	}

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(terminalPath(s, "ahp-session:/s1", "ahp-chat:/c1", "call-1"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("terminal file mode %v, want 0600", fi.Mode().Perm())
		}
	}
}

func TestTooLargeOutputIsNotKept(t *testing.T) {
	s := openTemp(t)
	big := RetainedTerminal{URI: "ahp-terminal:/big", Output: strings.Repeat("x", MaxRetainedOutput+1)}
	if err := s.SaveTerminal("ahp-session:/s", "c", "big", big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("SaveTerminal over the cap = %v, want ErrTooLarge", err)
	}
	if entries, _ := os.ReadDir(s.Root()); len(entries) != 0 {
		t.Fatalf("something was kept: %v", entries)
	}
	if _, err := s.LoadTerminal("ahp-session:/s", "c", "big"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadTerminal = %v, want ErrNotFound", err)
	}

	// Exactly the cap is kept.
	big.Output = big.Output[:MaxRetainedOutput]
	if err := s.SaveTerminal("ahp-session:/s", "c", "big", big); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadTerminal("ahp-session:/s", "c", "big")
	if err != nil || len(got.Output) != MaxRetainedOutput {
		t.Fatalf("LoadTerminal at the cap: %d bytes, %v", len(got.Output), err)
	}

	// A file someone wrote with an output over the cap is refused on reading.
	path := terminalPath(s, "ahp-session:/s", "c", "big")
	b, _ := json.Marshal(terminalFile{Version: formatVersion, Key: "big", RetainedTerminal: RetainedTerminal{Output: big.Output + "y"}})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTerminal("ahp-session:/s", "c", "big"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("LoadTerminal of an oversized file = %v, want ErrCorrupt", err)
	}
}

// A crash mid-write can leave only what a crash leaves: the old file and a temporary
// one. A file written by hand in place of the real one (as a non-atomic writer's crash
// would leave it) is refused as corrupt, never half read.
func TestCorruptTerminalFileIsRefused(t *testing.T) {
	s := openTemp(t)
	const sess, chat, key = "ahp-session:/s", "ahp-chat:/c", "call-1"
	if err := s.SaveTerminal(sess, chat, key, sampleTerminal()); err != nil {
		t.Fatal(err)
	}
	path := terminalPath(s, sess, chat, key)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := json.Marshal(terminalFile{Version: formatVersion, Key: "call-2"})
	for name, content := range map[string][]byte{
		"truncated":     good[:len(good)/2],
		"cut at last":   good[:len(good)-2],
		"zeros":         make([]byte, 512),
		"no version":    []byte(`{"key":"call-1","output":"x"}`),
		"next version":  []byte(`{"version":2,"key":"call-1","output":"x"}`),
		"wrong types":   []byte(`{"version":1,"key":"call-1","output":42}`),
		"another key":   otherKey,
		"trailing junk": append(slices.Clone(good), "}{"...),
		"not json":      []byte("\x00\xff\xfe garbage"),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := s.LoadTerminal(sess, chat, key)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("LoadTerminal = %+v, %v; want ErrCorrupt", got, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if got != (RetainedTerminal{}) {
				t.Errorf("a partial value came back: %+v", got)
			}
		})
	}
}

func TestLeftoverTempFileIsIgnoredAndSwept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const sess, chat, key = "ahp-session:/s", "ahp-chat:/c", "call-1"
	want := sampleTerminal()
	if err := s.SaveTerminal(sess, chat, key, want); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSession(SessionRecord{URI: sess, Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(sess, chat, LocalTurn{ID: "t1", State: TurnComplete}); err != nil {
		t.Fatal(err)
	}
	// What a crash between write and rename leaves: half-written temporary files beside
	// the real ones, at every level, and a half-deleted chat.
	tdir := filepath.Join(s.chatDir(sess, chat), terminalsDir)
	leftovers := []string{
		filepath.Join(tdir, "."+encodeName(key)+".json.123"+tmpSuffix),
		filepath.Join(s.chatDir(sess, chat), "."+turnsFile+".456"+tmpSuffix),
		filepath.Join(s.sessionDir(sess), "."+sessionFile+".789"+tmpSuffix),
		filepath.Join(s.Root(), ".x.1"+tmpSuffix),
	}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte(`{"version":1,"ke`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	trash := filepath.Join(s.sessionDir(sess), chatsDir, ".gone.1"+trashSuffix)
	if err := os.MkdirAll(filepath.Join(trash, terminalsDir), 0o700); err != nil {
		t.Fatal(err)
	}

	check := func(s *Store) {
		t.Helper()
		got, err := s.LoadTerminal(sess, chat, key)
		if err != nil || got.Output != want.Output {
			t.Fatalf("LoadTerminal with a leftover = %q, %v", got.Output, err)
		}
		turns, err := s.Turns(sess, chat)
		if err != nil || len(turns) != 1 {
			t.Fatalf("Turns with a leftover = %v, %v", turns, err)
		}
		recs, problems := s.Sessions()
		if len(problems) != 0 || len(recs) != 1 || !slices.Equal(recs[0].Chats, []string{chat}) {
			t.Fatalf("Sessions with leftovers = %+v, %v", recs, problems)
		}
	}
	check(s)

	// Reopening leaves a fresh temporary file (another writer may own it) ...
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	check(s2) // while its sweep may run, as a host's first reads do
	<-s2.swept
	for _, p := range leftovers {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a fresh temporary file was removed: %v", err)
		}
	}
	if _, err := os.Stat(trash); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("trash survived Open: %v", err)
	}
	// ... and removes a stale one.
	old := time.Now().Add(-2 * staleTemp)
	for _, p := range leftovers {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	s3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	check(s3)
	<-s3.swept
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale temporary file %s survived Open: %v", p, err)
		}
	}
}

// A write that fails between writing its temporary file and renaming it (the moment a
// crash would hit) leaves the old file whole and no temporary file behind.
func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	s := openTemp(t)
	const sess, chat, key = "ahp-session:/s", "ahp-chat:/c", "call-1"
	first := sampleTerminal()
	if err := s.SaveTerminal(sess, chat, key, first); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(sess, chat, LocalTurn{ID: "t1", State: TurnComplete}); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	var sawTemp string
	s.beforeRename = func(tmp string) error {
		b, err := os.ReadFile(tmp)
		if err != nil || !json.Valid(b) {
			t.Errorf("temporary file not complete before rename: %v", err)
		}
		sawTemp = tmp
		return crash
	}
	// An append to the log fails before it writes, as a crash would stop it.
	s.beforeInPlace = func(string) error { return crash }
	second := first
	second.Output = "second"
	if err := s.SaveTerminal(sess, chat, key, second); !errors.Is(err, crash) {
		t.Fatalf("SaveTerminal = %v, want the crash", err)
	}
	if err := s.AppendTurn(sess, chat, LocalTurn{ID: "t2", State: TurnComplete}); !errors.Is(err, crash) {
		t.Fatalf("AppendTurn = %v, want the crash", err)
	}
	s.beforeInPlace = nil
	if sawTemp == "" || filepath.Dir(sawTemp) != filepath.Join(s.chatDir(sess, chat), terminalsDir) {
		t.Fatalf("temporary file %q is not in the file's own folder", sawTemp)
	}
	s.beforeRename = nil
	got, err := s.LoadTerminal(sess, chat, key)
	if err != nil || got.Output != first.Output {
		t.Fatalf("after a failed write: %q, %v; want the old output", got.Output, err)
	}
	if turns, err := s.Turns(sess, chat); err != nil || len(turns) != 1 {
		t.Fatalf("turns after a failed write: %v, %v", turns, err)
	}
	filepath.WalkDir(s.Root(), func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, tmpSuffix) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// Readers racing a writer see the old file or the new one, whole, every time.
func TestReadersNeverSeeAPartialFile(t *testing.T) {
	s := openTemp(t)
	const sess, chat, key = "ahp-session:/s", "ahp-chat:/c", "k"
	outputs := []string{strings.Repeat("a", 300<<10), strings.Repeat("b", 10)}
	if err := s.SaveTerminal(sess, chat, key, RetainedTerminal{Output: outputs[0]}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.LoadTerminal(sess, chat, key)
				if err != nil || (got.Output != outputs[0] && got.Output != outputs[1]) {
					t.Errorf("a reader saw %d bytes, %v", len(got.Output), err)
					return
				}
			}
		}()
	}
	for i := range 40 {
		if err := s.SaveTerminal(sess, chat, key, RetainedTerminal{Output: outputs[i%2]}); err != nil {
			t.Error(err)
			break
		}
	}
	close(done)
	wg.Wait()
}

func TestNamesStayInsideTheRoot(t *testing.T) {
	outer := t.TempDir()
	s, err := Open(filepath.Join(outer, "state", "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	evil := []string{
		"ahp-session:/../../x",
		"..",
		".",
		"../../../../etc/passwd",
		"/etc/passwd",
		`..\..\windows\system32`,
		`C:\x`,
		"a/b/../../..",
		"nul\x00byte",
		"CON",
		".hidden",
		"ahp-session:/" + strings.Repeat("../", 200) + "x",
		"ünïcødé/..",
		"\n\t ",
	}
	for i, name := range evil {
		chat, key := evil[(i+1)%len(evil)], evil[(i+2)%len(evil)]
		if err := s.SaveSession(SessionRecord{URI: name, Created: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatalf("SaveSession(%q): %v", name, err)
		}
		if err := s.SaveTerminal(name, chat, key, RetainedTerminal{Output: name}); err != nil {
			t.Fatalf("SaveTerminal(%q, %q, %q): %v", name, chat, key, err)
		}
		if err := s.AppendTurn(name, chat, LocalTurn{ID: key, Text: "!" + name, State: TurnComplete}); err != nil {
			t.Fatalf("AppendTurn(%q, %q): %v", name, chat, err)
		}
		got, err := s.LoadTerminal(name, chat, key)
		if err != nil || got.Output != name {
			t.Fatalf("LoadTerminal(%q, %q, %q) = %q, %v", name, chat, key, got.Output, err)
		}
	}

	// Nothing outside the root, and every name inside it is an encoded one.
	root := s.Root()
	enc := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*_[0-9a-f]{32}(\.json)?$`)
	err = filepath.WalkDir(outer, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == outer || p == filepath.Dir(root) || p == root {
			return nil
		}
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Errorf("outside the root: %s", p)
			return nil
		}
		switch name := d.Name(); name {
		case sessionFile, chatFile, turnsFile, turnsLogFile, chatsDir, terminalsDir:
		default:
			if !enc.MatchString(name) {
				t.Errorf("unsafe name in the store: %q", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The names come back as given.
	recs, problems := s.Sessions()
	if len(problems) != 0 || len(recs) != len(evil) {
		t.Fatalf("Sessions = %d records, problems %v", len(recs), problems)
	}
	for i, r := range recs {
		if r.URI != evil[i] || !slices.Equal(r.Chats, []string{evil[(i+1)%len(evil)]}) {
			t.Errorf("record %d = %q chats %q", i, r.URI, r.Chats)
		}
	}

	// Deleting by an evil name removes only its own folder.
	for _, name := range evil {
		if err := s.DeleteSession(name); err != nil {
			t.Fatal(err)
		}
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Fatalf("root after deleting everything: %v, %v", entries, err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("root itself went: %v", err)
	}
}

func TestEncodeName(t *testing.T) {
	for name, want := range map[string]string{
		"ahp-session:/abc-123":   "ahp-session-abc-123_",
		"ahp-session:/../../x":   "ahp-session-x_",
		"..":                     "x_",
		"":                       "x_",
		"ABC":                    "abc_",
		strings.Repeat("a", 100): strings.Repeat("a", slugMax) + "_",
	} {
		got := encodeName(name)
		if !strings.HasPrefix(got, want) || len(got) != len(want)+hashHex {
			t.Errorf("encodeName(%q) = %q, want %q + %d hex digits", name, got, want, hashHex)
		}
	}
	if encodeName("ABC") == encodeName("abc") {
		t.Error("names differing only in case share a folder")
	}
}

func TestSessionsAfterReopening(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := SessionRecord{
		URI: "ahp-session:/a", Title: TitleFromCommand("!echo ran"), WorkingDirectories: []string{"/w/one", "/w/two"},
		Created: t0, FirstStart: t0.Add(time.Second), LastEnd: t0.Add(time.Minute),
		Chats: []string{"ignored"},
	}
	b := SessionRecord{URI: "ahp-session:/b", Title: "named", Renamed: true, Created: t0.Add(-time.Hour)}
	for _, r := range []SessionRecord{a, b} {
		if err := s.SaveSession(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendTurn(a.URI, "ahp-chat:/2", LocalTurn{ID: "t1", Text: "!echo ran", State: TurnComplete, StartedAt: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTerminal(a.URI, "ahp-chat:/1", "k", RetainedTerminal{Output: "x"}); err != nil {
		t.Fatal(err)
	}
	// Only terminals, never a record: not listed.
	if err := s.SaveTerminal("ahp-session:/unrecorded", "ahp-chat:/1", "k", RetainedTerminal{Output: "x"}); err != nil {
		t.Fatal(err)
	}
	// A corrupt record is reported and skipped; the others still list.
	if err := s.SaveSession(SessionRecord{URI: "ahp-session:/broken"}); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(s.sessionDir("ahp-session:/broken"), sessionFile)
	if err := os.WriteFile(broken, []byte(`{"version":1,"uri":"ahp-sess`), 0o600); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	recs, problems := s2.Sessions()
	if len(problems) != 1 || !errors.Is(problems[0], ErrCorrupt) || !strings.Contains(problems[0].Error(), broken) {
		t.Fatalf("problems = %v, want one ErrCorrupt naming %s", problems, broken)
	}
	if len(recs) != 2 || recs[0].URI != b.URI || recs[1].URI != a.URI {
		t.Fatalf("Sessions = %+v, want b then a", recs)
	}
	got := recs[1]
	if got.Title != "!echo ran" || got.Renamed || !slices.Equal(got.WorkingDirectories, a.WorkingDirectories) ||
		!got.Created.Equal(a.Created) || !got.FirstStart.Equal(a.FirstStart) || !got.LastEnd.Equal(a.LastEnd) ||
		!slices.Equal(got.Chats, []string{"ahp-chat:/1", "ahp-chat:/2"}) {
		t.Fatalf("record a = %+v", got)
	}
	if !recs[0].Renamed || recs[0].Title != "named" || recs[0].Chats != nil {
		t.Fatalf("record b = %+v", recs[0])
	}
	turns, err := s2.Turns(a.URI, "ahp-chat:/2")
	if err != nil || len(turns) != 1 || turns[0].Text != "!echo ran" || !turns[0].StartedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("Turns after reopening = %+v, %v", turns, err)
	}

	// A record copied into another session's folder is refused, not listed twice.
	if err := os.WriteFile(broken, mustRead(t, filepath.Join(s.sessionDir(a.URI), sessionFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	if recs, problems := s2.Sessions(); len(recs) != 2 || len(problems) != 1 || !errors.Is(problems[0], ErrCorrupt) {
		t.Fatalf("misplaced record: %d records, problems %v", len(recs), problems)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUpdateSession(t *testing.T) {
	s := openTemp(t)
	const uri = "ahp-session:/u"
	for i := range 3 {
		err := s.UpdateSession(uri, func(r *SessionRecord) error {
			if r.URI != uri {
				t.Errorf("fn got URI %q", r.URI)
			}
			if r.Title == "" && !r.Renamed {
				r.Title = TitleFromCommand(fmt.Sprintf("!cmd %d", i))
			}
			if r.FirstStart.IsZero() {
				r.FirstStart = t0
			}
			r.LastEnd = t0.Add(time.Duration(i) * time.Minute)
			r.URI = "ahp-session:/elsewhere" // cannot move it
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("no")
	if err := s.UpdateSession(uri, func(r *SessionRecord) error { r.Title = "lost"; return stop }); !errors.Is(err, stop) {
		t.Fatalf("UpdateSession = %v, want fn's error", err)
	}
	recs, problems := s.Sessions()
	if len(problems) != 0 || len(recs) != 1 {
		t.Fatalf("Sessions = %+v, %v", recs, problems)
	}
	if r := recs[0]; r.URI != uri || r.Title != "!cmd 0" || !r.FirstStart.Equal(t0) || !r.LastEnd.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("record = %+v", r)
	}

	// A corrupt record is not overwritten by an update.
	path := filepath.Join(s.sessionDir(uri), sessionFile)
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateSession(uri, func(*SessionRecord) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("UpdateSession over a corrupt record = %v, want ErrCorrupt", err)
	}
	if string(mustRead(t, path)) != "{" {
		t.Fatal("the corrupt record was overwritten")
	}
	// SaveSession replaces it.
	if err := s.SaveSession(SessionRecord{URI: uri, Title: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if recs, _ := s.Sessions(); len(recs) != 1 || recs[0].Title != "fresh" {
		t.Fatalf("after SaveSession: %+v", recs)
	}
}

func TestDeleteSessionAndChat(t *testing.T) {
	s := openTemp(t)
	const sess, other = "ahp-session:/s", "ahp-session:/other"
	for _, u := range []string{sess, other} {
		if err := s.SaveSession(SessionRecord{URI: u}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"c1", "c2"} {
			if err := s.SaveTerminal(u, c, "k", RetainedTerminal{Output: "o"}); err != nil {
				t.Fatal(err)
			}
			if err := s.AppendTurn(u, c, LocalTurn{ID: "t", State: TurnComplete}); err != nil {
				t.Fatal(err)
			}
		}
	}

	if err := s.DeleteChat(sess, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTerminal(sess, "c1", "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("terminal of a deleted chat: %v", err)
	}
	if turns, err := s.Turns(sess, "c1"); err != nil || len(turns) != 0 {
		t.Errorf("turns of a deleted chat: %v, %v", turns, err)
	}
	if _, err := os.Stat(s.chatDir(sess, "c1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("chat folder survived: %v", err)
	}
	if _, err := s.LoadTerminal(sess, "c2", "k"); err != nil {
		t.Errorf("the other chat lost its terminal: %v", err)
	}
	recs, _ := s.Sessions()
	chats := map[string][]string{}
	for _, r := range recs {
		chats[r.URI] = r.Chats
	}
	if !slices.Equal(chats[sess], []string{"c2"}) || !slices.Equal(chats[other], []string{"c1", "c2"}) {
		t.Errorf("chats after DeleteChat = %v", chats)
	}

	if err := s.DeleteSession(sess); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.sessionDir(sess)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("session folder survived: %v", err)
	}
	if _, err := s.LoadTerminal(sess, "c2", "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("terminal of a deleted session: %v", err)
	}
	if turns, _ := s.Turns(sess, "c2"); len(turns) != 0 {
		t.Errorf("turns of a deleted session: %v", turns)
	}
	recs, problems := s.Sessions()
	if len(problems) != 0 || len(recs) != 1 || recs[0].URI != other || len(recs[0].Chats) != 2 {
		t.Fatalf("Sessions after DeleteSession = %+v, %v", recs, problems)
	}
	// No trash left behind, and deleting again is fine.
	if entries, _ := os.ReadDir(s.Root()); len(entries) != 1 {
		t.Errorf("root holds %v", entries)
	}
	if err := s.DeleteSession(sess); err != nil {
		t.Error(err)
	}
	if err := s.DeleteChat(sess, "c1"); err != nil {
		t.Error(err)
	}
}

func TestMoveChat(t *testing.T) {
	s := openTemp(t)
	if err := s.SaveTerminal("from", "c", "k", RetainedTerminal{Output: "o"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn("from", "c", LocalTurn{ID: "t", State: TurnComplete}); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveChat("c", "from", "to"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTerminal("from", "c", "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the old session still keeps it: %v", err)
	}
	if got, err := s.LoadTerminal("to", "c", "k"); err != nil || got.Output != "o" || got.Session != "from" {
		t.Errorf("moved terminal = %+v, %v", got, err)
	}
	if turns, err := s.Turns("to", "c"); err != nil || len(turns) != 1 {
		t.Errorf("moved turns = %v, %v", turns, err)
	}
	if err := s.MoveChat("c", "from", "to"); err != nil {
		t.Errorf("moving nothing: %v", err)
	}
	if err := s.SaveTerminal("from", "c", "k", RetainedTerminal{}); err != nil {
		t.Fatal(err)
	}
	if err := s.MoveChat("c", "from", "to"); !errors.Is(err, ErrExists) {
		t.Errorf("moving onto a kept chat = %v, want ErrExists", err)
	}
}

func TestLocalTurns(t *testing.T) {
	s := openTemp(t)
	const sess, chat = "ahp-session:/s", "ahp-chat:/c"
	result := json.RawMessage(`{"success":false,"pastTenseMessage":"Command exited with code 1","content":[{"type":"terminal","resource":"ahp-terminal:/t","title":"Terminal","isPty":true,"result":{"exitCode":1,"preview":"no","truncated":false}}]}`)
	want := []LocalTurn{
		{ID: "l1", AnchorTurnID: "", Text: "!echo ran", StartedAt: t0, EndedAt: t0.Add(time.Second), ToolCallID: "call-1",
			TerminalURI: "ahp-terminal:/t", TerminalKey: "call-1", Result: result, State: TurnComplete},
		{ID: "l2", AnchorTurnID: "a1", Text: "!false", StartedAt: t0.Add(time.Minute), State: TurnError},
		{ID: "l3", AnchorTurnID: "a1", Text: "!sleep 9", State: TurnCancelled},
	}
	for _, turn := range want {
		if err := s.AppendTurn(sess, chat, turn); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Turns(sess, chat)
	if err != nil || len(got) != 3 {
		t.Fatalf("Turns = %v, %v", got, err)
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.ID != w.ID || g.AnchorTurnID != w.AnchorTurnID || g.Text != w.Text || !g.StartedAt.Equal(w.StartedAt) ||
			!g.EndedAt.Equal(w.EndedAt) || g.ToolCallID != w.ToolCallID || g.TerminalURI != w.TerminalURI ||
			g.TerminalKey != w.TerminalKey || g.State != w.State || !jsonEqual(g.Result, w.Result) {
			t.Errorf("turn %d:\n got %+v\nwant %+v", i, g, w)
		}
	}

	// Appending a kept id replaces it in place.
	re := want[1]
	re.Text = "!false again"
	if err := s.AppendTurn(sess, chat, re); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Turns(sess, chat); len(got) != 3 || got[1].Text != "!false again" {
		t.Fatalf("after re-append: %+v", got)
	}

	for _, bad := range []LocalTurn{
		{State: TurnComplete},
		{ID: "x", State: "running"},
		{ID: "x", State: TurnComplete, Result: json.RawMessage(`{"cut`)},
	} {
		if err := s.AppendTurn(sess, chat, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("AppendTurn(%+v) = %v, want ErrInvalid", bad, err)
		}
	}

	// A line that does not parse before lines that do is no crash's doing: the log is
	// refused on reading and not written to by an append.
	path := filepath.Join(s.chatDir(sess, chat), turnsLogFile)
	good := mustRead(t, path)
	lines := strings.SplitAfter(string(good), "\n")
	bad := lines[0] + lines[1][:len(lines[1])/2] + "\n" + strings.Join(lines[2:], "")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reopened.Turns(sess, chat); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Turns of a log with a bad line = %v, want ErrCorrupt", err)
	}
	if err := reopened.AppendTurn(sess, chat, LocalTurn{ID: "l4", State: TurnComplete}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("AppendTurn onto a log with a bad line = %v, want ErrCorrupt", err)
	}
	if string(mustRead(t, path)) != bad {
		t.Fatal("a corrupt log was written to")
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	s = reopened

	// RemoveTurns takes the turns' kept terminals with them.
	if err := s.SaveTerminal(sess, chat, "call-1", RetainedTerminal{Output: "o"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTerminal(sess, chat, "other", RetainedTerminal{Output: "o"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveTurns(sess, chat, "l1", "l3", "never"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Turns(sess, chat); len(got) != 1 || got[0].ID != "l2" {
		t.Fatalf("after RemoveTurns: %+v", got)
	}
	if _, err := s.LoadTerminal(sess, chat, "call-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a removed turn's terminal is still kept: %v", err)
	}
	if _, err := s.LoadTerminal(sess, chat, "other"); err != nil {
		t.Errorf("an unrelated terminal went: %v", err)
	}
	if err := s.DeleteTerminal(sess, chat, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadTerminal(sess, chat, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteTerminal left it: %v", err)
	}
	if turns, err := s.Turns(sess, "no-such-chat"); err != nil || turns != nil {
		t.Errorf("Turns of a chat with none = %v, %v", turns, err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

func TestTitleFromCommand(t *testing.T) {
	long := strings.Repeat("x", 300)
	wide := strings.Repeat("é✓", 150) // 300 runes, 750 bytes
	for in, want := range map[string]string{
		"!echo ran":                        "!echo ran",
		"  !echo ran  \n":                  "!echo ran",
		"!echo one\necho two\n":            "!echo one",
		"!echo one\r\necho two":            "!echo one",
		"!echo one\recho two":              "!echo one",
		"\n \n\t!after blanks\nnext":       "!after blanks",
		long:                               strings.Repeat("x", 200),
		"!" + long:                         "!" + strings.Repeat("x", 199),
		wide:                               strings.Repeat("é✓", 100),
		strings.Repeat("a", 199) + " tail": strings.Repeat("a", 199),
		"日本語のコマンド\n二行目":                    "日本語のコマンド",
		"bad \xff byte":                    "bad \uFFFD byte",
		"":                                 "",
		"\n\n":                             "",
		"🙂" + strings.Repeat("🙂", 250) + "\n": strings.Repeat("🙂", 200),
	} {
		got := TitleFromCommand(in)
		if got != want {
			t.Errorf("TitleFromCommand(%.40q) = %.60q (%d runes), want %.60q", in, got, len([]rune(got)), want)
		}
	}
}

func TestConcurrentSaves(t *testing.T) {
	s := openTemp(t)
	const sess = "ahp-session:/busy"
	const workers, per = 8, 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chat := fmt.Sprintf("chat-%d", w%2)
			for i := range per {
				key := fmt.Sprintf("w%d-k%d", w, i)
				if err := s.SaveTerminal(sess, chat, key, RetainedTerminal{Output: key}); err != nil {
					t.Error(err)
				}
				if err := s.AppendTurn(sess, chat, LocalTurn{ID: key, TerminalKey: key, State: TurnComplete}); err != nil {
					t.Error(err)
				}
				if err := s.UpdateSession(sess, func(r *SessionRecord) error {
					r.WorkingDirectories = append(r.WorkingDirectories, key)
					return nil
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	// Another session deleted and written meanwhile does not disturb this one.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range per {
			if err := s.SaveTerminal("ahp-session:/other", "c", "k", RetainedTerminal{Output: "x"}); err != nil {
				t.Error(err)
			}
			if err := s.DeleteSession("ahp-session:/other"); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()

	for w := range workers {
		chat := fmt.Sprintf("chat-%d", w%2)
		for i := range per {
			key := fmt.Sprintf("w%d-k%d", w, i)
			got, err := s.LoadTerminal(sess, chat, key)
			if err != nil || got.Output != key {
				t.Errorf("LoadTerminal(%s) = %q, %v", key, got.Output, err)
			}
		}
	}
	for c := range 2 {
		turns, err := s.Turns(sess, fmt.Sprintf("chat-%d", c))
		if err != nil || len(turns) != workers/2*per {
			t.Errorf("chat-%d keeps %d turns (%v), want %d: an append was lost", c, len(turns), err, workers/2*per)
		}
	}
	recs, problems := s.Sessions()
	if len(problems) != 0 || len(recs) != 1 || len(recs[0].WorkingDirectories) != workers*per {
		t.Fatalf("Sessions = %+v, %v; want one record with %d directories", recs, problems, workers*per)
	}
}

func TestKeepsNothing(t *testing.T) {
	empty, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Store{"root \"\"": empty, "nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			if s.Root() != "" {
				t.Errorf("Root = %q", s.Root())
			}
			if err := s.SaveTerminal("s", "c", "k", RetainedTerminal{Output: "x"}); err != nil {
				t.Error(err)
			}
			if _, err := s.LoadTerminal("s", "c", "k"); !errors.Is(err, ErrNotFound) {
				t.Errorf("LoadTerminal = %v", err)
			}
			if err := s.SaveTerminal("s", "c", "k", RetainedTerminal{Output: strings.Repeat("x", MaxRetainedOutput+1)}); !errors.Is(err, ErrTooLarge) {
				t.Errorf("an oversized output = %v, want ErrTooLarge still", err)
			}
			if err := s.AppendTurn("s", "c", LocalTurn{ID: "t", State: TurnComplete}); err != nil {
				t.Error(err)
			}
			if turns, err := s.Turns("s", "c"); turns != nil || err != nil {
				t.Errorf("Turns = %v, %v", turns, err)
			}
			if err := s.SaveSession(SessionRecord{URI: "s"}); err != nil {
				t.Error(err)
			}
			called := false
			if err := s.UpdateSession("s", func(*SessionRecord) error { called = true; return nil }); err != nil || called {
				t.Errorf("UpdateSession = %v, fn called %v", err, called)
			}
			if recs, problems := s.Sessions(); recs != nil || problems != nil {
				t.Errorf("Sessions = %v, %v", recs, problems)
			}
			for _, err := range []error{
				s.DeleteSession("s"), s.DeleteChat("s", "c"), s.DeleteTerminal("s", "c", "k"),
				s.RemoveTurns("s", "c", "t"), s.MoveChat("c", "s", "t"),
			} {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}
