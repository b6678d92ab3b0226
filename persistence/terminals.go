package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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

// SaveTerminal keeps t under the session's chat and key, replacing what was kept there.
// An output over MaxRetainedOutput is refused with ErrTooLarge and nothing is written
// (what was kept under the key before stays).
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
	return s.writeJSON(tdir, encodeName(key)+".json", terminalFile{Version: formatVersion, Key: key, RetainedTerminal: t})
}

// LoadTerminal reads what SaveTerminal kept under the session's chat and key. Nothing
// kept is ErrNotFound; a file that does not parse, is of another format version, names
// another key or holds an output over MaxRetainedOutput is an error wrapping ErrCorrupt.
func (s *Store) LoadTerminal(session, chat, key string) (RetainedTerminal, error) {
	if !s.keeps() || session == "" || chat == "" || key == "" {
		return RetainedTerminal{}, ErrNotFound
	}
	path := filepath.Join(s.chatDir(session, chat), terminalsDir, encodeName(key)+".json")
	var f terminalFile
	if err := readJSON(path, maxTerminalFile, &f); err != nil {
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
	if err := syncDir(tdir); err != nil {
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
