package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
)

// MaxRetainedOutput is the largest output, in bytes, that a retained terminal keeps: an
// output over 10 MB is not kept (seed 000, "A terminal a tool result names").
const MaxRetainedOutput = 10 << 20

// RetainedTerminal is what is kept of a terminal a tool result names, enough to answer a
// subscribe with an exited state when no live terminal does.
type RetainedTerminal struct {
	// URI is the terminal's channel URI, e.g. ahp-terminal:/....
	URI string `json:"uri"`
	// Title is the terminal's title when it was kept (a `!` command's is "Terminal").
	Title string `json:"title,omitempty"`
	// Output is what the terminal printed: its scrollback, capped as the terminal caps
	// it, VT sequences included where IsPty. At most MaxRetainedOutput bytes. Bytes that
	// are not UTF-8 are kept as U+FFFD, as JSON holds only text.
	Output string `json:"output"`
	// ExitCode is how the command or shell ended, nil when unknown.
	ExitCode *int `json:"exitCode,omitempty"`
	// IsPty says a pseudoterminal wrote Output, so it may hold VT sequences.
	IsPty bool `json:"isPty"`
	// Truncated says Output lost its beginning to the scrollback cap.
	Truncated bool `json:"truncated,omitempty"`
	// Session, Chat and ToolCallID name who it was kept for. SaveTerminal fills Session
	// and Chat from its arguments where they are empty. Session is the session it was
	// kept in; after MoveChat the chat lives in another.
	Session    string `json:"session"`
	Chat       string `json:"chat"`
	ToolCallID string `json:"toolCallId,omitempty"`
	// Saved is when it was kept; SaveTerminal sets it to now when zero.
	Saved time.Time `json:"saved"`
}

// terminalFile is a retained terminal on disk.
type terminalFile struct {
	Version int    `json:"version"`
	Key     string `json:"key"`
	RetainedTerminal
}

// SaveTerminal keeps t under the session's chat and key, replacing what was kept there
// atomically, or writing into the file PrepareTerminal made for it. An output over
// MaxRetainedOutput is refused with ErrTooLarge and nothing is written (what was kept
// under the key before stays).
func (s *Store) SaveTerminal(session, chat, key string, t RetainedTerminal) error {
	if err := checkNames("session, chat or key", session, chat, key); err != nil {
		return err
	}
	if len(t.Output) > MaxRetainedOutput {
		return fmt.Errorf("%w: %d bytes for %s (at most %d)", ErrTooLarge, len(t.Output), key, MaxRetainedOutput)
	}
	if !s.keeps() {
		return nil
	}
	if t.Session == "" {
		t.Session = session
	}
	if t.Chat == "" {
		t.Chat = chat
	}
	if t.Saved.IsZero() {
		t.Saved = time.Now().UTC()
	}
	data, err := json.Marshal(terminalFile{Version: formatVersion, Key: key, RetainedTerminal: t})
	if err != nil {
		return fmt.Errorf("persistence: encode the terminal of %s: %w", key, err)
	}
	data = append(data, '\n')
	defer s.locks.rlock(sessionKey(session))()
	path := s.terminalPath(session, chat, key)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		// Prepared (PrepareTerminal): its name is on disk already, so one write and
		// one fsync keep it. The chat's lock is taken whole, so no other write of the
		// key goes on in the same file meanwhile.
		defer s.locks.lock(chatKey(session, chat))()
		return s.writePrepared(path, data)
	}
	defer s.locks.rlock(chatKey(session, chat))()
	cdir, err := s.ensureChat(session, chat)
	if err != nil {
		return err
	}
	tdir := filepath.Join(cdir, terminalsDir)
	if err := s.ensureDir(tdir); err != nil {
		return err
	}
	if err := s.writeAtomic(tdir, filepath.Base(path), data); err != nil {
		return fmt.Errorf("persistence: write %s: %w", path, err)
	}
	return nil
}

// PrepareTerminal makes the file a terminal will be kept in, under the session's
// chat and key, before there is anything to keep: an empty file, its name durable
// in its folder (with the chat's folder and chat.json, if this is the chat's first). Keeping
// the terminal then writes into it and fsyncs it, one write and one fsync, where a
// new file takes a second fsync, of its folder. A `!` command prepares its terminal's
// file when it starts, so that the wait is off the path between the command's end and
// its turn's completion.
//
// A prepared file reads as nothing kept (ErrNotFound) until the terminal is kept; a
// key that keeps something already is left as it is. A crash before the terminal is
// kept leaves the empty file, which no turn names and which Open removes once it is
// a minute old; DiscardPrepared removes one that will not be kept.
func (s *Store) PrepareTerminal(session, chat, key string) error {
	if err := checkNames("session, chat or key", session, chat, key); err != nil {
		return err
	}
	if !s.keeps() {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.rlock(chatKey(session, chat))()
	cdir, err := s.ensureChat(session, chat)
	if err != nil {
		return err
	}
	tdir := filepath.Join(cdir, terminalsDir)
	if err := s.ensureDir(tdir); err != nil {
		return err
	}
	path := s.terminalPath(session, chat, key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	// The folder's fsync makes the name durable. The empty file itself is not
	// fsynced here: keeping the terminal writes it and fsyncs it (inode and data)
	// before any turn names it, and until then a crash may lose it or leave it
	// empty, both of which read as nothing kept. (On ext4 the folder's fsync
	// commits the file's creation with it.)
	err = f.Close()
	if err == nil {
		err = atomicfile.SyncDir(tdir)
	}
	if err != nil {
		return fmt.Errorf("persistence: prepare %s: %w", path, err)
	}
	return nil
}

// DiscardPrepared removes the file PrepareTerminal made for the key while it is still
// empty: the terminal will not be kept (it never started, or its output is too
// large). A file that keeps something is left alone.
func (s *Store) DiscardPrepared(session, chat, key string) error {
	if !s.keeps() || session == "" || chat == "" || key == "" {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.lock(chatKey(session, chat))()
	path := s.terminalPath(session, chat, key)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		return nil
	}
	return s.removeTerminalLocked(session, chat, key)
}

// writePrepared writes data into a prepared (empty) terminal file and fsyncs it. On a
// failure the file is emptied again, so it reads as nothing kept.
func (s *Store) writePrepared(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("persistence: write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Truncate(0)
			err = fmt.Errorf("persistence: write %s: %w", path, err)
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("persistence: write %s: %w", path, cerr)
		}
	}()
	if s.beforeInPlace != nil {
		if err := s.beforeInPlace(path); err != nil {
			return err
		}
	}
	n, err := f.WriteAt(data, 0)
	s.wrote(path, n)
	if err != nil {
		return err
	}
	return f.Sync()
}

func (s *Store) terminalPath(session, chat, key string) string {
	return filepath.Join(s.chatDir(session, chat), terminalsDir, encodeName(key)+".json")
}

// LoadTerminal reads what SaveTerminal kept under the session's chat and key. Nothing
// kept (a prepared file included) is ErrNotFound; a file that does not parse, is of another format version, names
// another key or holds an output over MaxRetainedOutput is an error wrapping ErrCorrupt.
func (s *Store) LoadTerminal(session, chat, key string) (RetainedTerminal, error) {
	if !s.keeps() || session == "" || chat == "" || key == "" {
		return RetainedTerminal{}, ErrNotFound
	}
	path := s.terminalPath(session, chat, key)
	var f terminalFile
	if err := readJSON(path, maxTerminalFile, &f); err != nil {
		if fi, serr := os.Stat(path); serr == nil && fi.Size() == 0 {
			// Prepared, and not kept (yet).
			return RetainedTerminal{}, ErrNotFound
		}
		return RetainedTerminal{}, err
	}
	switch {
	case f.Version != formatVersion:
		return RetainedTerminal{}, corrupt(path, "format version %d, want %d", f.Version, formatVersion)
	case f.Key != key:
		return RetainedTerminal{}, corrupt(path, "kept for key %q, not %q", f.Key, key)
	case len(f.Output) > MaxRetainedOutput:
		return RetainedTerminal{}, corrupt(path, "output of %d bytes is over the cap", len(f.Output))
	}
	return f.RetainedTerminal, nil
}

// DeleteTerminal removes what is kept under the session's chat and key, as when the turn
// whose tool call named it is truncated away. Nothing kept is not an error.
func (s *Store) DeleteTerminal(session, chat, key string) error {
	if !s.keeps() || session == "" || chat == "" || key == "" {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.rlock(chatKey(session, chat))()
	return s.removeTerminalLocked(session, chat, key)
}

// removeTerminalLocked removes a kept terminal; the caller holds the chat's lock.
func (s *Store) removeTerminalLocked(session, chat, key string) error {
	tdir := filepath.Join(s.chatDir(session, chat), terminalsDir)
	err := os.Remove(filepath.Join(tdir, encodeName(key)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	if err := atomicfile.SyncDir(tdir); err != nil {
		return fmt.Errorf("persistence: sync %s: %w", tdir, err)
	}
	return nil
}

// chatFileData is chat.json: which chat a folder holds, since its name is a hash.
type chatFileData struct {
	Version int    `json:"version"`
	Chat    string `json:"chat"`
}

// ensureChat makes the chat's folder and its chat.json, before anything is kept in it,
// so a chat folder with content always says which chat it is. The caller holds the
// session's lock and the chat's (either kind).
func (s *Store) ensureChat(session, chat string) (string, error) {
	cdir := s.chatDir(session, chat)
	if _, err := os.Stat(filepath.Join(cdir, chatFile)); err == nil {
		return cdir, nil
	}
	if err := s.ensureDir(cdir); err != nil {
		return "", err
	}
	if err := s.writeJSON(cdir, chatFile, chatFileData{Version: formatVersion, Chat: chat}); err != nil {
		return "", err
	}
	return cdir, nil
}
