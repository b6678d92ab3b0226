package persistence

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
)

// A chat's local turns are a log: turns.jsonl, JSON Lines. Its first line says what it
// is ({"version":2,"chat":...}); every other line is one LocalTurn, appended as the turn
// is kept, with one write and one fsync, so keeping a chat's n-th turn costs what the
// turn weighs and not what the chat has kept before it. A line whose id an earlier line
// has is that turn again, kept where the first one stood.
//
// Why JSON Lines and not an embedded database: the store keeps every chat in a folder
// of its own, and a chat's turns are only ever appended, read whole (when the host
// restarts, or a chat is truncated) and deleted with the chat. A file per chat that is
// only appended to needs no page cache, no compaction of its own and no lock shared
// between chats (whose turns are written by different sessions at once), and stays
// readable with a text editor and `jq`, as every other file of the store is. A
// database (bbolt, SQLite) would be one more moving part whose every commit rewrites
// pages and a free list, to serve what an append does.
//
// Crash safety: a line counts only once it ends in a newline, and it is fsynced before
// the append returns. A crash in the middle of an append leaves a last line that is
// cut short (or, on a file system that extends a file before its data lands, bytes
// that do not parse): that tail is dropped when the log is read, and rewritten away
// when the log is next opened for writing. A line that does not parse followed by one
// that does is no crash's doing, and the log is refused as corrupt.
//
// Compaction: a log is rewritten whole, atomically, with only each turn's newest line,
// when the store first opens it for writing and finds lines that a later line
// replaced, or a torn tail, or the turns.json of an older version (which it migrates);
// and when the lines replaced grow past the lines kept (and past compactMinDead), so a
// chat whose turns are kept over and over stays twice its size at most. A log of
// turns appended once each is never rewritten.
const (
	turnsLogFile = "turns.jsonl"
	// turnsLogVersion is the log's format version; turns.json was version 1.
	turnsLogVersion = 2
	// compactMinDead is how many bytes of replaced lines a log may hold before the
	// next append rewrites it.
	compactMinDead = 64 << 10
	// maxTurnLine is the longest line a log may hold: a turn's result carries at most
	// an 80,000-character preview, about 480,000 bytes escaped. A longer line is
	// refused as corrupt, not read into memory.
	maxTurnLine = 16 << 20
)

// turnLogHeader is a log's first line.
type turnLogHeader struct {
	Version int    `json:"version"`
	Chat    string `json:"chat"`
}

// turnLog is what the store knows of a chat's log while it writes to it: enough to
// append without reading the file and to know when to compact it. It is used only
// under the chat's lock held exclusively.
type turnLog struct {
	// size is the length of the file: where the next line goes.
	size int64
	// dead is the bytes of lines a later line replaced.
	dead int64
	// lines is where each kept turn's newest line is, by a hash of its id: its
	// length says when to compact, and its place lets a page of turns be read
	// without the rest of the log (turnsAtLocked). A collision misjudges when to
	// compact, and a read that finds another id's line there reads the whole log.
	lines map[uint64]lineAt
}

// lineAt is where a turn's newest line is in a log: its offset and length (newline
// included), and rank, the turn's place among the log's turns, where its first line
// stands (a turn kept again stays where it first stood). A line is at most
// maxTurnLine bytes, so its length fits 32 bits, as do a chat's turns: 16 bytes a turn.
type lineAt struct {
	off     int64
	n, rank int32
}

// keep notes a turn's line of n bytes at off, replacing the turn's earlier line.
func (l *turnLog) keep(h uint64, off, n int64) {
	at, again := l.lines[h]
	if again {
		l.dead += int64(at.n)
	} else {
		at.rank = int32(len(l.lines)) // the turns kept before it
	}
	at.off, at.n = off, int32(n)
	l.lines[h] = at
}

// turnLogScan is what reading a log found.
type turnLogScan struct {
	turns []LocalTurn
	log   turnLog
	// torn says bytes after the last whole line were dropped.
	torn bool
}

// turnWant says which of a log's turns a read decodes and returns: those whose ids
// are in ids, or, with toolCall, the turns of that tool call.
type turnWant struct {
	ids map[string]bool
	// toolCall and toolCallMember (its member as turnLine writes it) pick the turns
	// of one tool call.
	toolCall       string
	toolCallMember []byte
}

func wantIDs(ids []string) *turnWant {
	w := &turnWant{ids: make(map[string]bool, len(ids))}
	for _, id := range ids {
		w.ids[id] = true
	}
	return w
}

func wantToolCall(id string) *turnWant {
	quoted, _ := json.Marshal(id) // escaped as turnLine's json.Marshal escapes it
	return &turnWant{toolCall: id, toolCallMember: append([]byte(`"toolCallId":`), quoted...)}
}

// skips reports whether a line is surely not one w wants, read off its bytes: an id
// at its start that w does not name, or no member naming w's tool call. A line it
// cannot tell of is decoded and asked of with wants.
func (w *turnWant) skips(line []byte) bool {
	if w.toolCallMember != nil {
		// A JSON string holds no unescaped quote, so the member's bytes occur in a
		// turn's line only as the member itself, or not at all.
		return !bytes.Contains(line, w.toolCallMember)
	}
	id, ok := lineID(line)
	return ok && !w.ids[string(id)]
}

func (w *turnWant) wants(t *LocalTurn) bool {
	if w.toolCallMember != nil {
		return t.ToolCallID == w.toolCall
	}
	return w.ids[t.ID]
}

// readTurnLog reads a chat's log. A log that is not there is ErrNotFound; one whose
// header is not this chat's, or that holds a bad line before a good one, wraps
// ErrCorrupt. seed hashes the ids for the scan's turnLog. With want, only the turns
// it wants are decoded and returned (the scan's turnLog is then not the whole log's):
// a page of a long chat costs a read of its log, not a decode of it.
func readTurnLog(path, chat string, seed maphash.Seed, want *turnWant, read func(int)) (turnLogScan, error) {
	sc := turnLogScan{log: turnLog{lines: map[uint64]lineAt{}}}
	at := map[string]int{} // id -> index in turns
	header, torn, err := eachTurnLine(path, chat, read, func(line []byte, end int64) lineKind {
		if want != nil && want.skips(line) {
			sc.log.size = end
			return lineSkipped
		}
		var t LocalTurn
		if json.Unmarshal(line, &t) != nil || t.validate() != nil {
			return lineBad
		}
		sc.log.size = end
		if want != nil && !want.wants(&t) {
			return lineTurn
		}
		sc.log.keep(maphash.String(seed, t.ID), end-int64(len(line)), int64(len(line)))
		if i, ok := at[t.ID]; ok {
			sc.turns[i] = t
			return lineTurn
		}
		at[t.ID] = len(sc.turns)
		sc.turns = append(sc.turns, t)
		return lineTurn
	})
	if err != nil {
		return turnLogScan{}, err
	}
	sc.log.size = max(sc.log.size, header)
	sc.torn = torn
	return sc, nil
}

// indexTurnLog reads where each turn's newest line is in a chat's log, each line's id
// read off its start (a line is decoded only where it cannot be), as a restart reads
// the turns' refs (readTurnRefs): the first append or page after a restart costs a
// read of a long chat's log, not a decode of it. clean says the log holds no replaced
// line and no torn tail, so it needs no compacting. A log is refused as readTurnLog
// refuses it.
func indexTurnLog(path, chat string, seed maphash.Seed, read func(int)) (l turnLog, clean bool, err error) {
	l = turnLog{lines: map[uint64]lineAt{}}
	header, torn, err := eachTurnLine(path, chat, read, func(line []byte, end int64) lineKind {
		id, ok := lineID(line)
		if !ok || !bytes.HasSuffix(line, []byte("}\n")) {
			var t LocalTurn
			if json.Unmarshal(line, &t) != nil || t.validate() != nil {
				return lineBad
			}
			id = []byte(t.ID)
		}
		l.size = end
		l.keep(maphash.Bytes(seed, id), end-int64(len(line)), int64(len(line)))
		return lineTurn
	})
	if err != nil {
		return turnLog{}, false, err
	}
	l.size = max(l.size, header)
	return l, !torn && l.dead == 0, nil
}

// indexedReadMax is how many turns are read line by line at most when they are more
// than a quarter of the log's (a subscribe without a view asks for every turn).
const indexedReadMax = 1024

// turnsAtLocked reads the turns with the given ids at the places the chat's log index
// says, in the order they ran, and nothing else of the log: a page of a long chat's
// history costs what the page weighs. ok is false when the index cannot answer (a
// line found there is not the turn's, or does not decode, or the log could not be
// opened for writing): the caller then reads the log through. The caller holds the
// chat's lock exclusively.
func (s *Store) turnsAtLocked(session, chat string, ids []string) (turns []LocalTurn, ok bool) {
	l, err := s.openTurnLogLocked(session, chat)
	if err != nil {
		return nil, false
	}
	if l.size == 0 {
		return nil, true
	}
	if len(ids) > indexedReadMax && len(ids) > len(l.lines)/4 {
		// Most of the log: one read through costs fewer system calls than a read
		// per line.
		return nil, false
	}
	path := filepath.Join(s.chatDir(session, chat), turnsLogFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	ranks := make(map[string]int64, len(ids))
	for _, id := range ids {
		at, kept := l.lines[maphash.String(s.seed, id)]
		if !kept || ranks[id] != 0 {
			continue
		}
		line := make([]byte, at.n)
		n, err := f.ReadAt(line, at.off)
		if s.onRead != nil {
			s.onRead(n)
		}
		if err != nil || n != len(line) {
			return nil, false
		}
		var t LocalTurn
		if json.Unmarshal(line, &t) != nil || t.validate() != nil || t.ID != id {
			// Not the turn's line (a hash collision, or the log changed under the
			// store), or a line that does not decode, which a read through judges.
			return nil, false
		}
		ranks[id] = int64(at.rank) + 1
		turns = append(turns, t)
	}
	slices.SortFunc(turns, func(a, b LocalTurn) int { return cmp.Compare(ranks[a.ID], ranks[b.ID]) })
	return turns, true
}

// lineKind is what a reader of a log made of one of its lines.
type lineKind int

const (
	lineTurn    lineKind = iota // a turn's line, taken
	lineSkipped                 // not one the reader wants, told without decoding it
	lineBad                     // a line that does not parse
)

// countedReader tells read (when set: tests) how many bytes each read took.
type countedReader struct {
	r    io.Reader
	read func(int)
}

func (c countedReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if c.read != nil {
		c.read(n)
	}
	return n, err
}

// eachTurnLine reads a chat's log: it checks the header line, then hands each whole
// line after it to line, with the offset where it ends. A log that is not there is
// ErrNotFound; one whose header is not this chat's, or where a bad line comes before a
// turn's, wraps ErrCorrupt. header is where the header line ends; torn says bytes
// after the last line taken or skipped were dropped: a line cut short, or bad lines
// at the end, as a crash in the middle of an append leaves them.
func eachTurnLine(path, chat string, read func(int), line func(b []byte, end int64) lineKind) (header int64, torn bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, ErrNotFound
	}
	if err != nil {
		return 0, false, fmt.Errorf("persistence: read %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(countedReader{f, read}, 64<<10)
	var offset int64
	badAt := int64(-1) // where the first line that does not parse starts
	for n := 0; ; n++ {
		b, err := readLine(r, maxTurnLine)
		if errors.Is(err, errLineTooLong) {
			return 0, false, corrupt(path, "line %d is longer than %d bytes", n+1, maxTurnLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, fmt.Errorf("persistence: read %s: %w", path, err)
		}
		if len(b) == 0 || b[len(b)-1] != '\n' {
			// The end of the file: nothing, or a line cut short.
			torn = len(b) > 0 || badAt >= 0
			break
		}
		start := offset
		offset += int64(len(b))
		if n == 0 {
			var h turnLogHeader
			if json.Unmarshal(b, &h) != nil || h.Version != turnsLogVersion {
				return 0, false, corrupt(path, "not a turns log of version %d", turnsLogVersion)
			}
			if h.Chat != chat {
				return 0, false, corrupt(path, "kept for chat %q, not %q", h.Chat, chat)
			}
			header = offset
			continue
		}
		switch line(b, offset) {
		case lineBad:
			if badAt < 0 {
				badAt = start
			}
		case lineTurn:
			if badAt >= 0 {
				return 0, false, corrupt(path, "a line at byte %d does not parse, and lines after it do", badAt)
			}
		}
	}
	if header == 0 {
		// Not even a header: a log is made whole with its first line, so this one
		// was written by something else.
		return 0, false, corrupt(path, "no header line")
	}
	return header, torn, nil
}

// lineID reads the id a turn's line begins with, as turnLine writes it
// ({"id":"...",...), without decoding the line; ok is false for a line that does not
// begin so, or whose id holds an escape, which is then decoded whole.
func lineID(line []byte) (id []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"id":"`))
	if !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	return rest[:end], true
}

// lineRef reads the id and the anchor a turn's line begins with, as turnLine writes
// them ({"id":"...","anchorTurnId":"...","text":... or, for a chat's first turn,
// {"id":"...","text":...), without decoding the line: what a restart needs of a turn
// whose body it leaves on disk. ok is false for a line that does not begin so, which
// is then decoded whole.
func lineRef(line []byte) (ref TurnRef, ok bool) {
	id, ok := lineID(line)
	if !ok || !bytes.HasSuffix(line, []byte("}\n")) {
		return TurnRef{}, false
	}
	rest := line[len(`{"id":"`)+len(id)+1:]
	if bytes.HasPrefix(rest, []byte(`,"text":`)) {
		return TurnRef{ID: string(id)}, true
	}
	anchor, ok := bytes.CutPrefix(rest, []byte(`,"anchorTurnId":"`))
	if !ok {
		return TurnRef{}, false
	}
	end := bytes.IndexByte(anchor, '"')
	if end < 0 || bytes.IndexByte(anchor[:end], '\\') >= 0 {
		return TurnRef{}, false
	}
	return TurnRef{ID: string(id), AnchorTurnID: string(anchor[:end])}, true
}

// readTurnRefs reads the ids and anchors of a chat's turns from its log, in the order
// they ran (a turn kept again stands where it first did, with its newest anchor),
// reading each off its line's start where it can. The log is refused as readTurnLog
// refuses it: not this chat's, or a line that does not parse before one that does; a
// line that parses this way is not otherwise checked until it is decoded.
func readTurnRefs(path, chat string, read func(int)) ([]TurnRef, error) {
	var refs []TurnRef
	at := map[string]int{}
	_, _, err := eachTurnLine(path, chat, read, func(line []byte, _ int64) lineKind {
		ref, ok := lineRef(line)
		if !ok {
			var t LocalTurn
			if json.Unmarshal(line, &t) != nil || t.validate() != nil {
				return lineBad
			}
			ref = TurnRef{ID: t.ID, AnchorTurnID: t.AnchorTurnID}
		}
		if i, ok := at[ref.ID]; ok {
			refs[i] = ref
			return lineTurn
		}
		at[ref.ID] = len(refs)
		refs = append(refs, ref)
		return lineTurn
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads up to and including the next newline, or to the end of the input; a
// line longer than limit is errLineTooLong. A line the reader's buffer holds whole is
// the buffer's own bytes, good until the next read: the callers decode it or copy what
// they keep of it, so a long log is read without a copy of every line.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	chunk, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(chunk) > limit {
			return nil, errLineTooLong
		}
		return chunk, err
	}
	line := append([]byte(nil), chunk...)
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// encodeTurnLog is a whole log holding turns, as a compaction writes it.
func encodeTurnLog(chat string, turns []LocalTurn, seed maphash.Seed) ([]byte, turnLog, error) {
	var b bytes.Buffer
	head, err := json.Marshal(turnLogHeader{Version: turnsLogVersion, Chat: chat})
	if err != nil {
		return nil, turnLog{}, err
	}
	b.Write(head)
	b.WriteByte('\n')
	log := turnLog{lines: make(map[uint64]lineAt, len(turns))}
	for _, t := range turns {
		line, err := turnLine(t)
		if err != nil {
			return nil, turnLog{}, err
		}
		log.keep(maphash.String(seed, t.ID), int64(b.Len()), int64(len(line)))
		b.Write(line)
	}
	log.size = int64(b.Len())
	return b.Bytes(), log, nil
}

// turnLine is a turn's line in a log, newline included.
func turnLine(t LocalTurn) ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("persistence: encode turn %s: %w", t.ID, err)
	}
	return append(b, '\n'), nil
}

// openTurnLogLocked is the chat's log, ready to append to: read (once per Store) and,
// where it holds replaced lines or a torn tail, rewritten; made from the chat's
// turns.json where an older version kept its turns there. The caller holds the
// session's lock and the chat's exclusively.
func (s *Store) openTurnLogLocked(session, chat string) (*turnLog, error) {
	key := chatKey(session, chat)
	s.mu.Lock()
	l := s.logs[key]
	s.mu.Unlock()
	if l != nil {
		return l, nil
	}
	cdir := s.chatDir(session, chat)
	path := filepath.Join(cdir, turnsLogFile)
	legacy := filepath.Join(cdir, turnsFile)
	sc := turnLogScan{}
	ix, clean, err := indexTurnLog(path, chat, s.seed, s.onRead)
	if err == nil && !clean {
		// Lines replaced or a torn tail: read whole, to be compacted below.
		sc, err = readTurnLog(path, chat, s.seed, nil, s.onRead)
		ix = sc.log
	}
	sc.log, sc.torn = ix, !clean
	migrate := false
	switch {
	case errors.Is(err, ErrNotFound):
		turns, err := readLegacyTurns(legacy, chat)
		if err != nil {
			return nil, err
		}
		if turns == nil {
			// Nothing kept yet: the first append makes the log.
			l = &turnLog{lines: map[uint64]lineAt{}}
			break
		}
		sc.turns, migrate = turns, true
	case err != nil:
		return nil, err
	default:
		l = &sc.log
		if !clean {
			l = nil
		}
	}
	if l == nil {
		// Compact: only each turn's newest line, whole lines only.
		if l, err = s.rewriteTurnLogLocked(session, chat, sc.turns); err != nil {
			return nil, err
		}
	}
	if migrate || fileExists(legacy) {
		// The log holds everything turns.json did (a crash after the log was written
		// and before this removal leaves both, and the log is the one read).
		if err := os.Remove(legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("persistence: remove %s: %w", legacy, err)
		}
		if err := atomicfile.SyncDir(cdir); err != nil {
			return nil, fmt.Errorf("persistence: sync %s: %w", cdir, err)
		}
	}
	s.mu.Lock()
	if s.logs == nil {
		s.logs = map[string]*turnLog{}
	}
	s.logs[key] = l
	s.mu.Unlock()
	return l, nil
}

// rewriteTurnLogLocked replaces the chat's log with one holding turns, atomically,
// and returns what the store then knows of it. The caller holds the chat's lock
// exclusively.
func (s *Store) rewriteTurnLogLocked(session, chat string, turns []LocalTurn) (*turnLog, error) {
	data, l, err := encodeTurnLog(chat, turns, s.seed)
	if err != nil {
		return nil, err
	}
	cdir, err := s.ensureChat(session, chat)
	if err != nil {
		return nil, err
	}
	if err := s.writeAtomic(cdir, turnsLogFile, data); err != nil {
		return nil, fmt.Errorf("persistence: write %s: %w", filepath.Join(cdir, turnsLogFile), err)
	}
	return &l, nil
}

// appendTurnLocked keeps turn as the chat's newest line: one write and one fsync,
// whatever the chat kept before (the first turn makes the log, atomically, with its
// header). The caller holds the session's lock and the chat's exclusively.
func (s *Store) appendTurnLocked(session, chat string, turn LocalTurn) error {
	l, err := s.openTurnLogLocked(session, chat)
	if err != nil {
		return err
	}
	line, err := turnLine(turn)
	if err != nil {
		return err
	}
	if len(line) > maxTurnLine {
		return fmt.Errorf("%w: turn %s is %d bytes, more than a log line holds (%d)", ErrInvalid, turn.ID, len(line), maxTurnLine)
	}
	if l.size == 0 {
		fresh, err := s.rewriteTurnLogLocked(session, chat, []LocalTurn{turn})
		if err != nil {
			return err
		}
		*l = *fresh
		return nil
	}
	path := filepath.Join(s.chatDir(session, chat), turnsLogFile)
	err = s.appendLine(path, l.size, line)
	if errors.Is(err, errLogChanged) {
		// Something else wrote to the log: read it again, as a restart would, and
		// append to what it holds.
		s.forgetTurnLog(session, chat)
		if l, err = s.openTurnLogLocked(session, chat); err != nil {
			return err
		}
		if l.size == 0 {
			return s.appendTurnLocked(session, chat, turn)
		}
		err = s.appendLine(path, l.size, line)
	}
	if err != nil {
		// What the file holds past l.size is unknown now: read it again next time.
		s.forgetTurnLog(session, chat)
		return fmt.Errorf("persistence: append to %s: %w", path, err)
	}
	l.keep(maphash.String(s.seed, turn.ID), l.size, int64(len(line)))
	l.size += int64(len(line))
	if l.dead > compactMinDead && l.dead > l.size-l.dead {
		turns, err := s.readTurns(session, chat)
		if err != nil {
			return err
		}
		fresh, err := s.rewriteTurnLogLocked(session, chat, turns)
		if err != nil {
			s.forgetTurnLog(session, chat)
			return err
		}
		*l = *fresh
	}
	return nil
}

// errLogChanged: a log is not the length the store left it at.
var errLogChanged = errors.New("the log changed under the store")

// appendLine writes line at the end of the log at path, which is size bytes long, and
// fsyncs it. A log of another length was written by something else, and is left as
// it is (errLogChanged). On a failure the file is cut back to size, so no part of the
// line stays for the next append to land after.
func (s *Store) appendLine(path string, size int64, line []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		f.Close()
		if err != nil {
			return err
		}
		return errLogChanged
	}
	defer func() {
		if err != nil {
			_ = f.Truncate(size)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if s.beforeInPlace != nil {
		if err := s.beforeInPlace(path); err != nil {
			return err
		}
	}
	n, err := f.WriteAt(line, size)
	s.wrote(path, n)
	if err != nil {
		return err
	}
	return f.Sync()
}

// forgetTurnLog drops what the store knows of a chat's log, so the next write reads it
// again.
func (s *Store) forgetTurnLog(session, chat string) {
	s.mu.Lock()
	delete(s.logs, chatKey(session, chat))
	s.mu.Unlock()
}

// forgetTurnLogsOf drops what the store knows of every log of a session.
func (s *Store) forgetTurnLogsOf(session string) {
	prefix := "c/" + encodeName(session) + "/"
	s.mu.Lock()
	for k := range s.logs {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(s.logs, k)
		}
	}
	s.mu.Unlock()
}

// readLegacyTurns reads the turns.json of an older version: nil when there is none,
// an error wrapping ErrCorrupt when it does not parse (it is then left as it is).
func readLegacyTurns(path, chat string) ([]LocalTurn, error) {
	var f turnsFileData
	if err := readJSON(path, maxTurnsFile, &f); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	if f.Version != formatVersion {
		return nil, corrupt(path, "format version %d, want %d", f.Version, formatVersion)
	}
	if f.Chat != chat {
		return nil, corrupt(path, "kept for chat %q, not %q", f.Chat, chat)
	}
	for i := range f.Turns {
		if f.Turns[i].ID == "" {
			return nil, corrupt(path, "turn %d has no id", i)
		}
	}
	if f.Turns == nil {
		f.Turns = []LocalTurn{}
	}
	return f.Turns, nil
}

// lastTurnEnd is when the newest turn of a chat's log ended, read from its last whole
// line alone; zero when there is none or it does not parse.
func lastTurnEnd(path string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}
	}
	size := fi.Size()
	for chunk := int64(4 << 10); ; chunk *= 4 {
		from := max(size-chunk, 0)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return time.Time{}
		}
		// Whole lines only: drop a torn tail, then take the line before the end.
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 {
			if from == 0 {
				return time.Time{}
			}
			continue
		}
		start := bytes.LastIndexByte(buf[:end], '\n') + 1
		if start == 0 && from > 0 {
			if chunk > maxTurnLine {
				return time.Time{}
			}
			continue
		}
		var t LocalTurn
		if json.Unmarshal(buf[start:end], &t) != nil {
			return time.Time{}
		}
		return t.EndedAt
	}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
