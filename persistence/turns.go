package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/termhost/termhost/persistence/turnorder"
)

// Local turn end states: how a turn ended, as ChatState.turns[].state says it
// (PROTOCOL.md section 8).
const (
	TurnComplete  = "complete"
	TurnCancelled = "cancelled"
	TurnError     = "error"
)

// LocalTurn is a `!` command's turn, kept because no agent's transcript holds it: the
// host ran it, so the host keeps it, anchored to the turn before it (seed 000, "Who
// opens one").
type LocalTurn struct {
	// ID is the turn's id (chat/turnStarted's turnId).
	ID string `json:"id"`
	// AnchorTurnID is the turn it followed, by the id the backend's transcript gives that
	// turn (or another local turn's ID); "" when it was the chat's first.
	AnchorTurnID string `json:"anchorTurnId,omitempty"`
	// Text is the message text as sent, e.g. "!echo ran".
	Text string `json:"text"`
	// StartedAt and EndedAt bound the turn.
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// ToolCallID is the command's tool call.
	ToolCallID string `json:"toolCallId,omitempty"`
	// TerminalURI and TerminalKey name the terminal the call ran in and the key its
	// output is kept under (SaveTerminal), so the terminal opens rebuilt after a restart.
	TerminalURI string `json:"terminalUri,omitempty"`
	TerminalKey string `json:"terminalKey,omitempty"`
	// Result is the completed tool call's ToolCallResult as the host sent it.
	Result json.RawMessage `json:"result,omitempty"`
	// State is how the turn ended: TurnComplete, TurnCancelled or TurnError.
	State string `json:"state"`
}

func (t *LocalTurn) validate() error {
	if t.ID == "" {
		return fmt.Errorf("%w: a local turn needs an id", ErrInvalid)
	}
	switch t.State {
	case TurnComplete, TurnCancelled, TurnError:
	default:
		return fmt.Errorf("%w: local turn %s ends in state %q", ErrInvalid, t.ID, t.State)
	}
	if len(t.Result) > 0 && !json.Valid(t.Result) {
		return fmt.Errorf("%w: local turn %s has a result that is not JSON", ErrInvalid, t.ID)
	}
	return nil
}

// turnsFileData is a chat's turns.json, where versions before the log kept its turns
// (readLegacyTurns); the first write to the chat migrates it into turns.jsonl.
type turnsFileData struct {
	Version int         `json:"version"`
	Chat    string      `json:"chat"`
	Turns   []LocalTurn `json:"turns"`
}

// AppendTurn keeps turn as the chat's latest local turn: one line appended to the
// chat's log and fsynced, whatever the chat kept before (see turnlog.go). A turn with
// the ID of one already kept replaces it where it stands, so keeping a turn twice is
// harmless. A log (or an older version's turns.json) that does not parse is not
// written to: the error wraps ErrCorrupt, and DeleteChat is the way to start the
// chat's local turns afresh. A torn last line, as a crash during an append leaves, is
// not corrupt: it is dropped.
func (s *Store) AppendTurn(session, chat string, turn LocalTurn) error {
	if err := checkNames("session or chat", session, chat); err != nil {
		return err
	}
	if err := turn.validate(); err != nil {
		return err
	}
	if !s.keeps() {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.lock(chatKey(session, chat))()
	return s.appendTurnLocked(session, chat, turn)
}

// A FinishedTurn is what is kept when a `!` command's turn ends: what its terminal
// printed, the session's record as it now stands, and the turn itself.
type FinishedTurn struct {
	// Terminal is what the turn's terminal printed, kept under Turn.TerminalKey; nil
	// when there is nothing to keep.
	Terminal *RetainedTerminal
	// Record is the session's record with its dates and title; nil leaves it as kept.
	// It is written only when it says more than the record kept does: a LastEnd that
	// moved on alone is not written, as Sessions reads it off the chats' logs.
	Record *SessionRecord
	// Turn is the local turn, appended as AppendTurn does.
	Turn LocalTurn
}

// KeepTurn keeps a finished turn in the one order a crash cannot make wrong: the
// terminal's output first, then the session's record (when it changed), then the turn
// that names the output, each written, fsynced and its folder fsynced before the next
// begins; the turn is one line appended to the chat's log. A crash
// (a SIGKILL, a power cut) at any moment therefore leaves at worst output or a record
// that no turn names yet, never a turn naming output that was never written, which a
// subscribe would refuse when the call's preview is cut short (seed 000, "A terminal a
// tool result names").
//
// A terminal that is not kept - none given, its output over MaxRetainedOutput, or its
// write failed - does not stop the turn: the turn is kept without a TerminalKey, so it
// names nothing that is not there, and a subscribe to its terminal is answered from the
// call's preview. The errors are joined in what KeepTurn returns; a record that could not be
// written stops the turn, as a turn without its session's record is never listed.
func (s *Store) KeepTurn(session, chat string, f FinishedTurn) error {
	if err := checkNames("session or chat", session, chat); err != nil {
		return err
	}
	if err := f.Turn.validate(); err != nil {
		return err
	}
	if f.Record != nil && f.Record.URI != session {
		return fmt.Errorf("%w: record of session %q kept with a turn of %q", ErrInvalid, f.Record.URI, session)
	}
	var errs []error
	key := f.Turn.TerminalKey
	if f.Terminal != nil && key != "" {
		if err := s.SaveTerminal(session, chat, key, *f.Terminal); err != nil {
			errs = append(errs, err)
			f.Turn.TerminalKey = ""
		}
	} else {
		f.Turn.TerminalKey = ""
	}
	if key != "" && f.Turn.TerminalKey == "" {
		// A file prepared for the output that is not kept goes with it.
		if err := s.DiscardPrepared(session, chat, key); err != nil {
			errs = append(errs, err)
		}
	}
	if f.Record != nil {
		if err := s.keepRecord(*f.Record); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	if err := s.AppendTurn(session, chat, f.Turn); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Turns returns the chat's local turns in the order they ran; none is an empty result,
// not an error. It reads the chat's whole log (or an older version's turns.json),
// without a lock: a line being appended meanwhile is a torn tail, and not read. A log
// that does not parse is an error wrapping ErrCorrupt.
func (s *Store) Turns(session, chat string) ([]LocalTurn, error) {
	if !s.keeps() || session == "" || chat == "" {
		return nil, nil
	}
	return s.readTurns(session, chat)
}

// RemoveTurns drops the chat's local turns with the given ids, and the terminals kept
// under their TerminalKey with them, as when a truncation drops those turns or
// MergeTurns found their anchor gone. Ids not kept are ignored. The chat's log is
// rewritten without them (a truncation is rare; an append never rewrites it).
func (s *Store) RemoveTurns(session, chat string, ids ...string) error {
	if !s.keeps() || session == "" || chat == "" || len(ids) == 0 {
		return nil
	}
	defer s.locks.rlock(sessionKey(session))()
	defer s.locks.lock(chatKey(session, chat))()
	// Opening the log for writing migrates an older turns.json first.
	l, err := s.openTurnLogLocked(session, chat)
	if err != nil {
		return err
	}
	turns, err := s.readTurns(session, chat)
	if err != nil {
		return err
	}
	var gone []LocalTurn
	turns = slices.DeleteFunc(turns, func(t LocalTurn) bool {
		if slices.Contains(ids, t.ID) {
			gone = append(gone, t)
			return true
		}
		return false
	})
	if len(gone) == 0 {
		return nil
	}
	// The turns go first: a crash between the two leaves a terminal no turn names,
	// never a turn whose terminal is missing.
	fresh, err := s.rewriteTurnLogLocked(session, chat, turns)
	if err != nil {
		s.forgetTurnLog(session, chat)
		return err
	}
	*l = *fresh
	var errs []error
	for _, t := range gone {
		if t.TerminalKey != "" {
			errs = append(errs, s.removeTerminalLocked(session, chat, t.TerminalKey))
		}
	}
	return errors.Join(errs...)
}

// TurnsWithIDs returns the chat's local turns whose ids are given, in the order they
// ran, as Turns does; ids it does not keep are left out. Only those turns' lines are
// read, at the places the store's index of the log says (made by one read of the log,
// the first time the store reads or appends to it): a page of a long chat's history
// costs what the page weighs, however long the chat. It is how a chat brings back the
// turns it let go of (fetchTurns).
func (s *Store) TurnsWithIDs(session, chat string, ids []string) ([]LocalTurn, error) {
	if !s.keeps() || session == "" || chat == "" || len(ids) == 0 {
		return nil, nil
	}
	if err := checkNames("session or chat", session, chat); err != nil {
		return nil, err
	}
	unlock := s.locks.rlock(sessionKey(session))
	defer unlock()
	unlockChat := s.locks.lock(chatKey(session, chat))
	defer unlockChat()
	if turns, ok := s.turnsAtLocked(session, chat, ids); ok {
		return turns, nil
	}
	return s.readTurnsOf(session, chat, wantIDs(ids))
}

// TurnsOfToolCall returns the chat's local turns whose tool call is toolCallID, in the
// order they ran (a `!` command's turn is its call's only one), decoding only the lines
// that name it: how a chat finds the terminal of a turn it let go of.
func (s *Store) TurnsOfToolCall(session, chat, toolCallID string) ([]LocalTurn, error) {
	if !s.keeps() || session == "" || chat == "" || toolCallID == "" {
		return nil, nil
	}
	return s.readTurnsOf(session, chat, wantToolCall(toolCallID))
}

// TurnRef is what ordering a chat's turns needs of a local turn: its id and the turn
// it is anchored to (turnorder.Ref).
type TurnRef = turnorder.Ref

// TurnRefs is what a restart needs of a chat's local turns when it holds only its
// newest: each turn's ref, in the order they ran, as Turns would give them. A line is
// decoded only where its ref cannot be read off its start, so a chat of 20,000 turns
// comes back without decoding 20,000 results; TurnsWithIDs then reads the bodies it
// holds.
func (s *Store) TurnRefs(session, chat string) ([]TurnRef, error) {
	if !s.keeps() || session == "" || chat == "" {
		return nil, nil
	}
	cdir := s.chatDir(session, chat)
	refs, err := readTurnRefs(filepath.Join(cdir, turnsLogFile), chat, s.onRead)
	if errors.Is(err, ErrNotFound) {
		// An older version's turns.json: read whole, as it is small or migrated soon.
		turns, err := readLegacyTurns(filepath.Join(cdir, turnsFile), chat)
		refs = make([]TurnRef, len(turns))
		for i, t := range turns {
			refs[i] = TurnRef{ID: t.ID, AnchorTurnID: t.AnchorTurnID}
		}
		return refs, err
	}
	return refs, err
}

// readTurns reads the chat's local turns from its log, or from the turns.json of an
// older version where there is no log yet.
func (s *Store) readTurns(session, chat string) ([]LocalTurn, error) {
	return s.readTurnsOf(session, chat, nil)
}

// readTurnsOf is readTurns of the turns want names (all of them for nil).
func (s *Store) readTurnsOf(session, chat string, want *turnWant) ([]LocalTurn, error) {
	cdir := s.chatDir(session, chat)
	sc, err := readTurnLog(filepath.Join(cdir, turnsLogFile), chat, s.seed, want, s.onRead)
	if errors.Is(err, ErrNotFound) {
		turns, err := readLegacyTurns(filepath.Join(cdir, turnsFile), chat)
		if want != nil {
			turns = slices.DeleteFunc(turns, func(t LocalTurn) bool { return !want.wants(&t) })
		}
		return turns, err
	}
	return sc.turns, err
}

// MergeTurns puts a chat's local turns back among the turns of its live state or
// transcript, as package turnorder says where each goes. transcript is the chat's turn
// ids in order; local is its local turns in the order they ran (as Turns returns
// them). order is every turn id in order; keptTurns is the local turns that stayed, in
// the order they ran. A local turn in neither was dropped, and RemoveTurns may forget
// it.
func MergeTurns(transcript []string, local []LocalTurn) (order []string, keptTurns []LocalTurn) {
	refs := make([]TurnRef, len(local))
	for i, t := range local {
		refs[i] = TurnRef{ID: t.ID, AnchorTurnID: t.AnchorTurnID}
	}
	order, keep := turnorder.Merge(transcript, refs)
	return order, kept(local, keep)
}

// MergeTurnRefs is MergeTurns of the turns' refs (TurnRefs), for a restart that reads
// the bodies of only the turns it holds.
func MergeTurnRefs(transcript []string, local []TurnRef) (order []string, keptRefs []TurnRef) {
	order, keep := turnorder.Merge(transcript, local)
	return order, kept(local, keep)
}

// kept is the elements of all that keep says to keep, in order.
func kept[T any](all []T, keep []bool) []T {
	var out []T
	for i, e := range all {
		if keep[i] {
			out = append(out, e)
		}
	}
	return out
}
