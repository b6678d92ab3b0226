// Package turnwindow keeps a chat's account of which of its turns its state holds: the
// id of every turn the chat has had, the kept turns it let go of (oldest first), and
// the cursor that pages them back in (turnsNextCursor). It reads and writes nothing:
// the session reads the turns' bodies from the store and folds them into the chat.
//
// A chat's state grows with what its clients are shown, not with every turn it ran. It
// holds its newest Held turns once nobody is shown it, and lets go of older ones only
// when the store keeps them whole (a `!` command's turn once it is on disk): an agent's
// turns live in its transcript and a wake's nowhere, so a chat lets go of its oldest
// kept turns up to the first of those.
package turnwindow

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

const (
	// Held is how many of its newest turns a chat holds when nobody asks for more:
	// the turns a client opening it sees first.
	Held = 50
	// Page is how many older turns a fetchTurns brings in.
	Page = 50
)

// Window is one chat's account. The zero value is not ready: use New.
type Window struct {
	// older are the ids of the kept turns the state let go of, oldest first: the
	// turns before the state's first.
	older []string
	// had are every turn's ids the chat has had, held, let go of or running.
	had map[string]bool
	// kept are the ids of the held turns the store keeps whole: those the chat may
	// let go of.
	kept map[string]bool
	// epoch counts the times the chat let turns go: a cursor names the epoch it was
	// given in and how many older turns there were then. Whatever it names, it asks
	// for the page before the turns the chat holds now, so a cursor a client kept
	// across a reconnect, or one another client's fetch overtook, still pages in what
	// it lacks (the reducer leaves out a turn it holds).
	epoch int
}

// New is the account of a chat that has had no turns.
func New() *Window {
	return &Window{had: map[string]bool{}, kept: map[string]bool{}}
}

// Had reports whether the chat has had a turn with the id: a turnStarted naming one
// is refused, and the reducer asks this (messages.ReduceChatKnowing) rather than
// looking through every turn held, so a turn's fold costs the same however long the
// chat.
func (w *Window) Had(id string) bool { return w.had[id] }

// Started records a turn the chat started.
func (w *Window) Started(id string) { w.had[id] = true }

// Kept records that the store keeps a held turn whole, so the chat may let it go.
func (w *Window) Kept(id string) {
	w.had[id] = true
	w.kept[id] = true
}

// Restore takes the ids of a restarted chat's kept turns, in the order they ran: all
// but the newest Held are let go of, and those newest are returned for the chat to
// read and hold (Kept each it read).
func (w *Window) Restore(ids []string) (hold []string) {
	for _, id := range ids {
		w.had[id] = true
	}
	split := max(len(ids)-Held, 0)
	w.older = append(w.older, ids[:split]...)
	return ids[split:]
}

// Cursor is the state's turnsNextCursor: "" when it holds every turn.
func (w *Window) Cursor() string {
	if len(w.older) == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", w.epoch, len(w.older))
}

// ValidCursor reports whether cursor is of the form this chat gives: one that does
// not parse, or names an epoch yet to come, was not given by it.
func (w *Window) ValidCursor(cursor string) bool {
	epoch, count, ok := strings.Cut(cursor, ".")
	e, err1 := strconv.Atoi(epoch)
	n, err2 := strconv.Atoi(count)
	return ok && err1 == nil && err2 == nil && e >= 0 && e <= w.epoch && n > 0
}

// LetGo takes held, the ids of the turns the state holds oldest first, and lets go
// of its oldest up to Held left and up to the first one the store does not keep. It
// returns how many: the chat drops that many of its oldest turns and sets Cursor.
func (w *Window) LetGo(held []string) int {
	n := 0
	for n < len(held)-Held && w.kept[held[n]] {
		delete(w.kept, held[n])
		n++
	}
	if n > 0 {
		w.older = append(w.older, held[:n]...)
		w.epoch++
	}
	return n
}

// Older is how many turns the chat let go of and holds no more.
func (w *Window) Older() int { return len(w.older) }

// Before is the ids of the n turns just before those the state holds (at most
// Older), oldest first: the ones a page brings in.
func (w *Window) Before(n int) []string {
	n = min(max(n, 0), len(w.older))
	return slices.Clone(w.older[len(w.older)-n:])
}

// BroughtIn records that the n turns just before those held are held again (of
// which kept, the ones the store still had, may be let go of again).
func (w *Window) BroughtIn(n int, kept []string) {
	n = min(max(n, 0), len(w.older))
	w.older = w.older[:len(w.older)-n]
	for _, id := range kept {
		w.kept[id] = true
	}
}
