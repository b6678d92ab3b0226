package persistence

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
)

// Errors a caller checks with errors.Is.
var (
	// ErrNotFound: nothing is kept under that name.
	ErrNotFound = errors.New("persistence: not found")
	// ErrCorrupt: a kept file does not parse or does not belong where it lies. Every
	// such error names the file.
	ErrCorrupt = errors.New("persistence: corrupt file")
	// ErrTooLarge: a terminal's output is over MaxRetainedOutput, so nothing is kept.
	ErrTooLarge = errors.New("persistence: output too large to keep")
	// ErrInvalid: an argument the store cannot keep (an empty name, a turn with no id).
	ErrInvalid = errors.New("persistence: invalid argument")
	// ErrExists: MoveChat's destination already keeps that chat.
	ErrExists = errors.New("persistence: already exists")
)

// File and folder names inside the root.
const (
	sessionFile  = "session.json"
	chatFile     = "chat.json"
	turnsFile    = "turns.json"
	chatsDir     = "chats"
	terminalsDir = "terminals"

	// formatVersion is written into every file; a file with another is refused as
	// corrupt rather than half understood.
	formatVersion = 1

	tmpSuffix   = atomicfile.TempSuffix
	trashSuffix = ".trash"
	// staleTemp is how much older than the open a temporary or prepared file must be
	// for Open's sweep to remove it, so a Store opened while another is mid-write in
	// the same root does not pull a file from under it, and nothing this store makes
	// is ever swept by it.
	staleTemp = time.Minute

	slugMax = 40 // bytes of readable slug in an encoded name
	hashHex = 32 // hex digits of SHA-256 in an encoded name (128 bits)

	// Read caps: a file larger than these is refused as corrupt rather than read into
	// memory. A terminal's JSON is at most about 6 bytes per output byte (\u00XX and
	// \ufffd escapes).
	maxTerminalFile = 8*MaxRetainedOutput + 1<<20
	maxTurnsFile    = 256 << 20
	maxSmallFile    = 1 << 20
)

// Store is the session store under one root folder. Its zero value, like a nil *Store
// and a Store opened with root "", keeps nothing.
type Store struct {
	root string // absolute; "" keeps nothing

	// locks maps a lock name (see sessionKey, chatKey, recordKey) to its RWMutex.
	locks lockMap
	// seed hashes turn ids in what the store knows of a log (turnLog.lines).
	seed maphash.Seed

	// swept is closed once Open's sweep of what a crash left is done.
	swept chan struct{}

	mu sync.Mutex // guards logs and records
	// logs is what the store knows of each chat's log it has written to, by chatKey.
	// An entry is read and changed only under its chat's lock held exclusively.
	logs map[string]*turnLog
	// records are the session records as last written or read, by recordKey.
	records map[string]SessionRecord

	// onWrite, when set (tests only), is told how many bytes each write put in a
	// file: a whole file's for an atomic write, a line's for an append.
	onWrite func(path string, n int)
	// onRead, when set (tests only), is told how many bytes each read of a chat's
	// turns log took.
	onRead func(n int)
	// beforeInPlace, when set (tests only), runs before a line is appended to a log
	// and before a prepared terminal file is written; an error it returns aborts the
	// write as a crash before it would.
	beforeInPlace func(path string) error

	// beforeRename, when set (tests only), runs after a temporary file is written and
	// synced and before it is renamed into place; an error it returns aborts the write
	// as a crash at that point would.
	beforeRename func(tmp string) error
}

// Open returns the store under root, creating the folder (mode 0700) if needed, and
// starts finishing what a crash left behind: removals of deleted sessions and chats,
// temporary files and prepared terminal files more than a minute older than the open.
// That sweep runs beside the store's use rather than before it: every read skips what
// it removes, and it looks at every kept terminal's file (20,000 take ~0.2 s here),
// which a host's start should not wait for. root "" returns a store that keeps
// nothing.
func Open(root string) (*Store, error) {
	if root == "" {
		s := &Store{swept: make(chan struct{})}
		close(s.swept)
		return s, nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", abs, err)
	}
	s := &Store{root: abs, seed: maphash.MakeSeed(), swept: make(chan struct{})}
	go s.sweep(time.Now().Add(-staleTemp))
	return s, nil
}

// Root is the folder the store keeps its sessions in, "" when it keeps nothing.
func (s *Store) Root() string {
	if s == nil {
		return ""
	}
	return s.root
}

func (s *Store) keeps() bool { return s != nil && s.root != "" }

// Keeps reports whether the store writes anything: a Store with no folder keeps
// nothing, and what is given to it cannot be read back.
func (s *Store) Keeps() bool { return s.keeps() }

// encodeName turns a caller's name (a URI, a chat, a key) into a file name that is safe
// on every file system: a readable slug and a hash of the whole name. It never contains
// a dot, a separator or anything but [a-z0-9_-], and never starts with a dash.
func encodeName(name string) string {
	sum := sha256.Sum256([]byte(name))
	var b strings.Builder
	dash := false
	for _, r := range name {
		if b.Len() >= slugMax {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	slug := strings.TrimRight(b.String(), "-")
	if slug == "" {
		slug = "x"
	}
	return slug + "_" + hex.EncodeToString(sum[:hashHex/2])
}

func checkNames(kind string, names ...string) error {
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("%w: empty %s name", ErrInvalid, kind)
		}
	}
	return nil
}

func (s *Store) sessionDir(session string) string {
	return filepath.Join(s.root, encodeName(session))
}

func (s *Store) chatDir(session, chat string) string {
	return filepath.Join(s.sessionDir(session), chatsDir, encodeName(chat))
}

// Lock names. A session's lock is held shared by every write under it and exclusively
// by DeleteSession and MoveChat; a chat's is held shared by terminal writes and
// exclusively by turn writes and DeleteChat; a record's guards session.json's
// read-modify-write. They are always taken in that order.
func sessionKey(session string) string    { return "s/" + encodeName(session) }
func chatKey(session, chat string) string { return "c/" + encodeName(session) + "/" + encodeName(chat) }
func recordKey(session string) string     { return "r/" + encodeName(session) }

// lockMap hands out one RWMutex per name, dropping it once nobody holds or waits for it.
type lockMap struct {
	mu sync.Mutex
	m  map[string]*lockEntry // guarded by mu
}

type lockEntry struct {
	rw   sync.RWMutex
	refs int // guarded by lockMap.mu
}

func (l *lockMap) acquire(name string) *lockEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[string]*lockEntry)
	}
	e := l.m[name]
	if e == nil {
		e = &lockEntry{}
		l.m[name] = e
	}
	e.refs++
	return e
}

func (l *lockMap) release(name string, e *lockEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.m, name)
	}
}

// lock takes name exclusively and returns its unlock. Callers write
// `defer s.locks.lock(name)()`: the lock is taken at the defer statement and released
// on return.
func (l *lockMap) lock(name string) func() {
	e := l.acquire(name)
	e.rw.Lock()
	return func() { e.rw.Unlock(); l.release(name, e) }
}

// rlock takes name shared and returns its unlock.
func (l *lockMap) rlock(name string) func() {
	e := l.acquire(name)
	e.rw.RLock()
	return func() { e.rw.RUnlock(); l.release(name, e) }
}

// writeAtomic puts data in dir/name with atomicfile.Write: a reader sees the old file or
// the new one, never a part. The file's mode is 0600: what a shell printed is nobody
// else's to read.
func (s *Store) writeAtomic(dir, name string, data []byte) error {
	var opts []atomicfile.Option
	if s.beforeRename != nil {
		opts = append(opts, atomicfile.BeforeRename(s.beforeRename))
	}
	path := filepath.Join(dir, name)
	if err := atomicfile.Write(path, data, 0o600, opts...); err != nil {
		return err
	}
	s.wrote(path, len(data))
	return nil
}

// wrote tells onWrite about a write.
func (s *Store) wrote(path string, n int) {
	if s.onWrite != nil {
		s.onWrite(path, n)
	}
}

// writeJSON encodes v and writes it atomically to dir/name.
func (s *Store) writeJSON(dir, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("persistence: encode %s: %w", filepath.Join(dir, name), err)
	}
	if err := s.writeAtomic(dir, name, append(b, '\n')); err != nil {
		return fmt.Errorf("persistence: write %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// ensureDir makes dir, and any parent of it below the root that is missing, fsyncing
// each new one into its parent.
func (s *Store) ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("persistence: %s is not a folder", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("persistence: %w", err)
	}
	parent := filepath.Dir(dir)
	if dir == s.root || parent == dir {
		// The root itself went away under a running store: make it again.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("persistence: %w", err)
		}
		return nil
	}
	if err := s.ensureDir(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("persistence: %w", err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("persistence: sync %s: %w", parent, err)
	}
	return nil
}

// readJSON reads path (at most limit bytes) into v. A missing file is ErrNotFound; one
// that is too large or does not parse is ErrCorrupt.
func readJSON(path string, limit int64, v any) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("persistence: read %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return fmt.Errorf("persistence: read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrCorrupt, path, limit)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

func corrupt(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, args...))
}

// removeDir deletes dir atomically: it is renamed to a hidden trash name beside it,
// which is the moment it is gone, and then removed. A missing dir is not an error.
func removeDir(dir string) error {
	parent := filepath.Dir(dir)
	trash := filepath.Join(parent, "."+filepath.Base(dir)+"."+randomSuffix()+trashSuffix)
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("persistence: remove %s: %w", dir, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("persistence: sync %s: %w", parent, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		// Gone as far as any reader is concerned; Open retries the removal.
		return fmt.Errorf("persistence: remove %s: %w", trash, err)
	}
	return nil
}

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hidden reports whether a folder entry is the store's own temporary or trash entry
// (or anything else starting with a dot), which every listing skips.
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// sweep finishes what a crash left: trash folders are removed, and temporary files
// and prepared terminal files never kept that were last written before cutoff. It is
// best effort; what it cannot remove every read ignores. swept is closed when it is
// done.
func (s *Store) sweep(cutoff time.Time) {
	defer close(s.swept)
	sweepDir(s.root, cutoff)
	sessions, _ := os.ReadDir(s.root)
	for _, se := range sessions {
		if !se.IsDir() || hidden(se.Name()) {
			continue
		}
		sdir := filepath.Join(s.root, se.Name())
		sweepDir(sdir, cutoff)
		cdir := filepath.Join(sdir, chatsDir)
		sweepDir(cdir, cutoff)
		chats, _ := os.ReadDir(cdir)
		for _, ce := range chats {
			if !ce.IsDir() || hidden(ce.Name()) {
				continue
			}
			chat := filepath.Join(cdir, ce.Name())
			sweepDir(chat, cutoff)
			sweepDir(filepath.Join(chat, terminalsDir), cutoff)
			sweepPrepared(filepath.Join(chat, terminalsDir), cutoff)
		}
	}
}

// sweepPrepared removes terminal files PrepareTerminal made that were never kept (a
// crash before the command's turn was), last written before cutoff.
func sweepPrepared(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if hidden(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 && fi.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func sweepDir(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !hidden(name) {
			continue
		}
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, trashSuffix):
			os.RemoveAll(p)
		case strings.HasSuffix(name, tmpSuffix) && e.Type().IsRegular():
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				os.Remove(p)
			}
		}
	}
}
