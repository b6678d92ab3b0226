package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
)

// SessionRecord is what the store keeps of a session itself, so that a session whose
// turns are all `!` commands - which no backend has a transcript of - is listed after a
// restart, dated from its first command's start to its last one's end and titled after
// its first command unless somebody named it (seed 000, "Who opens one").
type SessionRecord struct {
	URI string `json:"uri"`
	// Title is the session's title; Renamed says somebody named it, so a command does
	// not retitle it (TitleFromCommand seeds one that nobody named).
	Title   string `json:"title,omitempty"`
	Renamed bool   `json:"renamed,omitempty"`
	// WorkingDirectories are the session's folders; a `!` command's shell opens in the
	// first.
	WorkingDirectories []string `json:"workingDirectories,omitempty"`
	// Created is when the session was made; FirstStart when its first command started
	// and LastEnd when its last one ended.
	Created    time.Time `json:"created,omitzero"`
	FirstStart time.Time `json:"firstStart,omitzero"`
	LastEnd    time.Time `json:"lastEnd,omitzero"`
	// Agent is the name of the agent the session was made with ("" for none), and
	// AgentSessionID the agent's own id for its conversation, for the agent to resume
	// it after the host restarts.
	Agent          string `json:"agent,omitempty"`
	AgentSessionID string `json:"agentSessionId,omitempty"`
	// Creator is the user who made the session, "" when unknown.
	Creator string `json:"creator,omitempty"`
	// Chats are the session's chats that keep something (local turns or terminals),
	// sorted. They are read from the chat folders, never stored: SaveSession ignores them.
	Chats []string `json:"-"`
}

type sessionFileData struct {
	Version int `json:"version"`
	SessionRecord
}

// SaveSession keeps r as its session's record, replacing the one kept (r.Chats is not
// stored; see SessionRecord).
func (s *Store) SaveSession(r SessionRecord) error {
	if err := checkNames("session", r.URI); err != nil {
		return err
	}
	if !s.keeps() {
		return nil
	}
	defer s.locks.rlock(sessionKey(r.URI))()
	defer s.locks.lock(recordKey(r.URI))()
	return s.writeRecordLocked(r)
}

// UpdateSession changes the session's record in one step with respect to every other
// SaveSession and UpdateSession: fn gets the record kept (or one with only URI set when
// none is), and what it leaves is kept unless it returns an error, which UpdateSession
// returns. A record that does not parse is not overwritten: the error wraps ErrCorrupt
// (SaveSession replaces it). On a store that keeps nothing fn is not called.
func (s *Store) UpdateSession(uri string, fn func(r *SessionRecord) error) error {
	if err := checkNames("session", uri); err != nil {
		return err
	}
	if !s.keeps() {
		return nil
	}
	defer s.locks.rlock(sessionKey(uri))()
	defer s.locks.lock(recordKey(uri))()
	r, err := s.readRecord(uri)
	if errors.Is(err, ErrNotFound) {
		r, err = SessionRecord{URI: uri}, nil
	}
	if err != nil {
		return err
	}
	if err := fn(&r); err != nil {
		return err
	}
	r.URI = uri
	return s.writeRecordLocked(r)
}

// keepRecord keeps r as SaveSession does, unless the record kept already says all r
// does but a later LastEnd: a command's turn dates the session's end, and that date
// is read off the chats' logs (Sessions), not rewritten with every turn.
func (s *Store) keepRecord(r SessionRecord) error {
	if err := checkNames("session", r.URI); err != nil {
		return err
	}
	if !s.keeps() {
		return nil
	}
	defer s.locks.rlock(sessionKey(r.URI))()
	defer s.locks.lock(recordKey(r.URI))()
	key := recordKey(r.URI)
	s.mu.Lock()
	kept, known := s.records[key]
	s.mu.Unlock()
	if !known {
		if rec, err := s.readRecord(r.URI); err == nil {
			kept, known = rec, true
			s.rememberRecord(rec)
		}
	}
	if known && sameRecordBut(kept, r) && !r.LastEnd.Before(kept.LastEnd) {
		return nil
	}
	return s.writeRecordLocked(r)
}

// sameRecordBut reports whether a and b differ at most in LastEnd (and Chats, which
// is never kept).
func sameRecordBut(a, b SessionRecord) bool {
	return a.URI == b.URI && a.Title == b.Title && a.Renamed == b.Renamed && slices.Equal(a.WorkingDirectories, b.WorkingDirectories) &&
		a.Created.Equal(b.Created) && a.FirstStart.Equal(b.FirstStart) &&
		a.Agent == b.Agent && a.AgentSessionID == b.AgentSessionID && a.Creator == b.Creator
}

// rememberRecord notes r as the record kept on disk; the caller holds its record lock.
func (s *Store) rememberRecord(r SessionRecord) {
	r.Chats = nil
	s.mu.Lock()
	if s.records == nil {
		s.records = map[string]SessionRecord{}
	}
	s.records[recordKey(r.URI)] = r
	s.mu.Unlock()
}

func (s *Store) writeRecordLocked(r SessionRecord) error {
	dir := s.sessionDir(r.URI)
	if err := s.ensureDir(dir); err != nil {
		return err
	}
	r.Chats = nil
	if err := s.writeJSON(dir, sessionFile, sessionFileData{Version: formatVersion, SessionRecord: r}); err != nil {
		// What the file holds now is not known for sure.
		s.mu.Lock()
		delete(s.records, recordKey(r.URI))
		s.mu.Unlock()
		return err
	}
	s.rememberRecord(r)
	return nil
}

// Sessions lists every kept session, oldest Created first (then by URI), each with its
// chats, and its LastEnd the later of the record's and its chats' newest turn's end. A session or chat whose file cannot be read is left out and its error - one
// wrapping ErrCorrupt where the file does not parse - is in problems, for the caller to
// log; the rest are listed all the same. A session folder with no record (one holding
// only terminals or turns the host never recorded a session for) is not listed.
func (s *Store) Sessions() (records []SessionRecord, problems []error) {
	if !s.keeps() {
		return nil, nil
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("persistence: list %s: %w", s.root, err)}
	}
	for _, e := range entries {
		if !e.IsDir() || hidden(e.Name()) {
			continue
		}
		dir := filepath.Join(s.root, e.Name())
		path := filepath.Join(dir, sessionFile)
		r, err := readRecordFile(path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err == nil && encodeName(r.URI) != e.Name() {
			err = corrupt(path, "session %q does not belong in this folder", r.URI)
		}
		if err != nil {
			problems = append(problems, err)
			continue
		}
		chats, errs := s.chats(dir)
		r.Chats = chats
		problems = append(problems, errs...)
		// The session ended when its newest turn did: KeepTurn does not rewrite the
		// record for that.
		for _, c := range chats {
			if end := lastTurnEnd(filepath.Join(s.chatDir(r.URI, c), turnsLogFile)); end.After(r.LastEnd) {
				r.LastEnd = end
			}
		}
		records = append(records, r)
	}
	slices.SortFunc(records, func(a, b SessionRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.URI, b.URI)
	})
	return records, problems
}

func (s *Store) readRecord(uri string) (SessionRecord, error) {
	path := filepath.Join(s.sessionDir(uri), sessionFile)
	r, err := readRecordFile(path)
	if err == nil && r.URI != uri {
		err = corrupt(path, "kept for session %q, not %q", r.URI, uri)
	}
	return r, err
}

func readRecordFile(path string) (SessionRecord, error) {
	var f sessionFileData
	if err := readJSON(path, maxSmallFile, &f); err != nil {
		return SessionRecord{}, err
	}
	if f.Version != formatVersion {
		return SessionRecord{}, corrupt(path, "format version %d, want %d", f.Version, formatVersion)
	}
	if f.URI == "" {
		return SessionRecord{}, corrupt(path, "no session uri")
	}
	f.Chats = nil
	return f.SessionRecord, nil
}

// chats lists the chats kept in a session folder, sorted, and the errors of those that
// cannot be read. A chat folder without chat.json (a crash before anything was kept in
// it) is skipped.
func (s *Store) chats(sessionDir string) (chats []string, problems []error) {
	cdir := filepath.Join(sessionDir, chatsDir)
	entries, err := os.ReadDir(cdir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{fmt.Errorf("persistence: list %s: %w", cdir, err)}
	}
	for _, e := range entries {
		if !e.IsDir() || hidden(e.Name()) {
			continue
		}
		path := filepath.Join(cdir, e.Name(), chatFile)
		var f chatFileData
		err := readJSON(path, maxSmallFile, &f)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
		case f.Version != formatVersion:
			err = corrupt(path, "format version %d, want %d", f.Version, formatVersion)
		case f.Chat == "" || encodeName(f.Chat) != e.Name():
			err = corrupt(path, "chat %q does not belong in this folder", f.Chat)
		}
		if err != nil {
			problems = append(problems, err)
			continue
		}
		chats = append(chats, f.Chat)
	}
	slices.Sort(chats)
	return chats, problems
}

// DeleteSession removes the session's folder and everything kept in it: what is kept
// goes with its session. It waits for writes under the session in progress; nothing
// kept is not an error.
func (s *Store) DeleteSession(uri string) error {
	if !s.keeps() || uri == "" {
		return nil
	}
	defer s.locks.lock(sessionKey(uri))()
	s.forgetTurnLogsOf(uri)
	s.mu.Lock()
	delete(s.records, recordKey(uri))
	s.mu.Unlock()
	return removeDir(s.sessionDir(uri))
}

// DeleteChat removes the chat's folder, its local turns and its kept terminals with it,
// as when a client disposes the chat. Nothing kept is not an error.
func (s *Store) DeleteChat(session, chat string) error {
	if !s.keeps() || session == "" || chat == "" {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.lock(chatKey(session, chat))()
	s.forgetTurnLog(session, chat)
	return removeDir(s.chatDir(session, chat))
}

// MoveChat moves what the chat keeps from one session to another, as a chat that moves
// takes it to the session it moved to (seed 000, "A terminal a tool result names"). The
// move is one rename. The kept terminals' Session still names the session they were
// kept in. Nothing kept is not an error; a destination that keeps the chat already is
// ErrExists.
func (s *Store) MoveChat(chat, from, to string) error {
	if err := checkNames("session or chat", chat, from, to); err != nil {
		return err
	}
	if !s.keeps() || from == to {
		return nil
	}
	// Both sessions exclusively, in one order, so two opposite moves cannot deadlock.
	first, second := sessionKey(from), sessionKey(to)
	if second < first {
		first, second = second, first
	}
	defer s.locks.lock(first)()
	defer s.locks.lock(second)()

	s.forgetTurnLog(from, chat)
	s.forgetTurnLog(to, chat)
	src, dst := s.chatDir(from, chat), s.chatDir(to, chat)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%w: session %s already keeps chat %s", ErrExists, to, chat)
	}
	if err := s.ensureDir(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("persistence: move chat %s: %w", chat, err)
	}
	for _, dir := range []string{filepath.Dir(dst), filepath.Dir(src)} {
		if err := atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("persistence: sync %s: %w", dir, err)
		}
	}
	return nil
}
