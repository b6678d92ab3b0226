package session

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// A chat's history in memory grows with what its clients are shown, not with every
// turn it ever ran: a chat that comes back after a restart holds only its newest
// kept turns, and a chat nobody watches lets go of all but its newest once its last
// subscriber leaves. The turns it let go of stay in the store, and come back into the
// chat's state, for every subscriber at once, with chat/turnsLoaded: when a client
// asks (fetchTurns with the state's turnsNextCursor), when a subscribe asks for more
// than it holds (view.turns), and when a subscribe asks for all (no view: "the server
// MUST return all retained turns").
//
// Only turns the store keeps are let go of: a `!` command's turn once it is on disk.
// An agent's turns live in its transcript and a wake's nowhere, so a chat lets go of
// its oldest kept turns up to the first one of those.
const (
	// heldTurns is how many of its newest turns a chat holds when nobody asks for
	// more: the turns a client opening it sees first.
	heldTurns = 50
	// turnsPage is how many older turns a fetchTurns brings in.
	turnsPage = 50
)

// FetchTurns asks a chat to bring in the page of turns before those it holds, as
// fetchTurns does; the answer is a *Result once chat/turnsLoaded went to the chat's
// subscribers. Cursor is the state's turnsNextCursor, "" when the client has none
// (the host then brings in its next page, if any).
type FetchTurns struct {
	Chat   string
	Cursor string
	Who    auth.Principal
}

// history is what a chat knows of the turns its state does not hold.
type history struct {
	// older are the ids of the kept turns the state let go of, oldest first: the
	// turns before the state's first.
	older []string
	// ids are every turn's the chat has had, held, let go of or running: a
	// turnStarted naming one is refused, and the reducer asks them (hadTurn)
	// rather than looking through every turn held, so a turn's fold costs the same
	// however long the chat.
	ids map[string]bool
	// kept are the ids of the turns held that the store keeps: those the chat may
	// let go of.
	kept map[string]bool
	// epoch counts the times the chat let turns go: a cursor names the epoch it
	// was given in and how many older turns there were then. Whatever it names,
	// it asks for the page before the turns the chat holds now, so a cursor a
	// client kept across a reconnect, or one another client's fetch overtook,
	// still pages in what it lacks (the reducer leaves out a turn it holds).
	epoch int
}

func (h *history) init() {
	h.kept = map[string]bool{}
	h.ids = map[string]bool{}
}

// hadTurn reports whether the chat has had a turn with the id: the reducer's question
// (messages.ReduceChatKnowing).
func (h *history) hadTurn(id string) bool { return h.ids[id] }

// cursor is the turnsNextCursor of the state: "" when it holds every turn.
func (h *history) cursor() string {
	if len(h.older) == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", h.epoch, len(h.older))
}

// validCursor reports whether cursor is of the form this chat gives: one that does
// not parse, or names an epoch yet to come, was not given by it.
func (h *history) validCursor(cursor string) bool {
	epoch, count, ok := strings.Cut(cursor, ".")
	e, err1 := strconv.Atoi(epoch)
	n, err2 := strconv.Atoi(count)
	return ok && err1 == nil && err2 == nil && e >= 0 && e <= h.epoch && n > 0
}

// letGo takes the chat's oldest turns out of its state, up to heldTurns left and up
// to the first one the store does not keep, when nobody is shown the chat.
func (s *session) letGo(c *chat) {
	if len(c.subs) > 0 {
		return
	}
	ids := c.state.TurnIDs()
	n := 0
	for n < len(ids)-heldTurns && c.kept[ids[n]] {
		delete(c.kept, ids[n])
		n++
	}
	if n == 0 {
		return
	}
	c.older = append(c.older, ids[:n]...)
	c.epoch++
	c.state.DropOldestTurns(n, c.cursor())
}

// bringIn brings the n turns before those the chat holds back into its state, and
// tells its subscribers with chat/turnsLoaded; with always, the action goes out even
// when there was nothing to bring in, so a client's stale cursor is cleared.
func (s *session) bringIn(c *chat, n int, always bool) error {
	n = min(n, len(c.older))
	if n <= 0 && !always {
		return nil
	}
	ids := c.older[len(c.older)-n:]
	kept, err := s.readKept(c, ids)
	if err != nil {
		return err
	}
	turns := make([]messages.Turn, 0, len(kept))
	for _, t := range kept {
		turns = append(turns, keptTurn(t))
		c.kept[t.ID] = true
	}
	c.older = c.older[:len(c.older)-n]
	raw, err := c.state.Apply(messages.ChatTurnsLoadedAction{Turns: turns, TurnsNextCursor: c.cursor()})
	if err != nil {
		return err
	}
	// Paging in history changes nothing of the chat's: its date stays.
	s.publishAt(c, raw, nil, c.state.ModifiedAt())
	return nil
}

// readKept reads the kept turns with the given ids from the store, in the order ids
// has them (the chat's, which MergeTurns gave, not necessarily the log's). An id whose
// line is gone or no longer decodes is left out.
func (s *session) readKept(c *chat, ids []string) ([]persistence.LocalTurn, error) {
	turns, err := s.store.TurnsWithIDs(s.uri, c.uri, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]persistence.LocalTurn, len(turns))
	for _, t := range turns {
		byID[t.ID] = t
	}
	inOrder := turns[:0]
	for _, id := range ids {
		if t, ok := byID[id]; ok {
			inOrder = append(inOrder, t)
		}
	}
	return inOrder, nil
}

// bringInFor brings in what a subscribe's view asks for before its snapshot: every
// turn without one (turns nil), else enough for turns completed turns.
func (s *session) bringInFor(c *chat, turns *int) {
	n := len(c.older)
	if turns != nil {
		n = *turns - c.state.TurnCount()
	}
	if err := s.bringIn(c, n, false); err != nil {
		s.cfg.Logger.Warn("a chat's older turns could not be read; its snapshot holds its newest", "chat", c.uri, "err", err)
	}
}

// fetchTurns answers a client's fetchTurns.
func (s *session) fetchTurns(ctx actor.Context, m *FetchTurns) {
	c := s.chats[m.Chat]
	if c == nil {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		return
	}
	if m.Cursor != "" && !c.validCursor(m.Cursor) {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: cursor %q is not one this chat gave (take turnsNextCursor from its state)", m.Cursor)})
		return
	}
	if err := s.bringIn(c, turnsPage, m.Cursor != ""); err != nil {
		s.cfg.Logger.Warn("a chat's older turns could not be read", "chat", c.uri, "err", err)
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeInternalError, "Internal error: the chat's older turns could not be read")})
		return
	}
	ctx.Respond(&Result{})
}

// keptTurn is a kept `!` command's turn as the chat's state holds it: the completed
// command it was, its tool call holding the result it ended with.
func keptTurn(t persistence.LocalTurn) messages.Turn {
	var result messages.ToolCallResult
	_ = json.Unmarshal(t.Result, &result)
	cmd, _ := commandOf(t.Text)
	return messages.Turn{
		ID: t.ID, StartedAt: isoTime(t.StartedAt), Duration: t.EndedAt.Sub(t.StartedAt).Milliseconds(),
		Message: messages.UserMessage(t.Text), State: t.State,
		ToolCall: messages.CompletedToolCall{ToolCallID: t.ToolCallID, ToolName: commandToolName, DisplayName: commandDisplayName,
			Intention: cmd, InvocationMessage: cmd, ToolInput: cmd, Confirmed: messages.ConfirmedNotNeeded, ToolCallResult: result},
	}
}

// olderTerminal is the terminal block naming uri in the tool call toolCallID of a
// turn the chat let go of, read back from the store.
func (s *session) olderTerminal(c *chat, toolCallID, uri string) (messages.TerminalContent, bool) {
	if len(c.older) == 0 {
		return messages.TerminalContent{}, false
	}
	turns, err := s.store.TurnsOfToolCall(s.uri, c.uri, toolCallID)
	if err != nil {
		return messages.TerminalContent{}, false
	}
	for i := len(turns) - 1; i >= 0; i-- {
		// Held turns were looked through already; a turn the chat never had (one
		// MergeTurns dropped) names nothing.
		if t := turns[i]; t.ToolCallID == toolCallID && c.hadTurn(t.ID) {
			st := messages.NewChatState(c.uri, "", "")
			st.AppendTurn(keptTurn(t))
			return st.TerminalContent(toolCallID, uri)
		}
	}
	return messages.TerminalContent{}, false
}
