package session

import (
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/session/commandcall"
	"github.com/termhost/termhost/actors/session/turnwindow"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// A chat's history in memory grows with what its clients are shown (turnwindow keeps
// the account). The turns a chat let go of stay in the store, and come back into the
// chat's state, for every subscriber at once, with chat/turnsLoaded: when a client
// asks (fetchTurns with the state's turnsNextCursor), when a subscribe asks for more
// than it holds (view.turns), and when a subscribe asks for all (no view: "the server
// MUST return all retained turns").

// FetchTurns asks a chat to bring in the page of turns before those it holds, as
// fetchTurns does; the answer is a *Result once chat/turnsLoaded went to the chat's
// subscribers. Cursor is the state's turnsNextCursor, "" when the client has none
// (the host then brings in its next page, if any).
type FetchTurns struct {
	Chat   string
	Cursor string
	Who    auth.Principal
}

// ShowTurns asks a chat to hold at least Turns of its newest completed turns (every
// turn it keeps when Turns is nil), as a subscribe with that view would, and to tell
// its subscribers with chat/turnsLoaded when it brings any in. The answer is a *Result,
// sent after that action went to the subscribers. Another node's proxy of the chat
// asks it for a subscriber there whose view wants more than the proxy holds.
type ShowTurns struct {
	Chat  string
	Turns *int
}

// letGo takes the chat's oldest kept turns out of its state, as its window says,
// when nobody is shown the chat.
func (s *session) letGo(c *chat) {
	if len(c.subs) > 0 {
		return
	}
	if n := c.window.LetGo(c.state.TurnIDs()); n > 0 {
		c.state.DropOldestTurns(n, c.window.Cursor())
	}
}

// bringIn brings the n turns before those the chat holds back into its state, and
// tells its subscribers with chat/turnsLoaded; with always, the action goes out even
// when there was nothing to bring in, so a client's stale cursor is cleared.
func (s *session) bringIn(c *chat, n int, always bool) error {
	ids := c.window.Before(n)
	if len(ids) == 0 && !always {
		return nil
	}
	kept, err := s.readKept(c, ids)
	if err != nil {
		return err
	}
	turns := make([]messages.Turn, 0, len(kept))
	keptIDs := make([]string, 0, len(kept))
	for _, t := range kept {
		turns = append(turns, keptTurn(t))
		keptIDs = append(keptIDs, t.ID)
	}
	c.window.BroughtIn(len(ids), keptIDs)
	raw, err := c.state.Apply(messages.ChatTurnsLoadedAction{Turns: turns, TurnsNextCursor: c.window.Cursor()})
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
	n := c.window.Older()
	if turns != nil {
		n = *turns - c.state.TurnCount()
	}
	if err := s.bringIn(c, n, false); err != nil {
		s.cfg.Logger.Warn("a chat's older turns could not be read; its snapshot holds its newest", "chat", c.uri, "err", err)
	}
}

// showTurns answers ShowTurns.
func (s *session) showTurns(ctx actor.Context, m *ShowTurns) {
	c := s.chats[m.Chat]
	if c == nil {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		return
	}
	s.bringInFor(c, m.Turns)
	ctx.Respond(&Result{})
}

// fetchTurns answers a client's fetchTurns.
func (s *session) fetchTurns(ctx actor.Context, m *FetchTurns) {
	c := s.chats[m.Chat]
	if c == nil {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		return
	}
	if m.Cursor != "" && !c.window.ValidCursor(m.Cursor) {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: cursor %q is not one this chat gave (take turnsNextCursor from its state)", m.Cursor)})
		return
	}
	if err := s.bringIn(c, turnwindow.Page, m.Cursor != ""); err != nil {
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
	cmd, _ := commandcall.Parse(t.Text)
	return messages.Turn{
		ID: t.ID, StartedAt: isoTime(t.StartedAt), Duration: t.EndedAt.Sub(t.StartedAt).Milliseconds(),
		Message: messages.UserMessage(t.Text), State: t.State,
		ToolCall: messages.CompletedToolCall{ToolCallID: t.ToolCallID, ToolName: commandcall.ToolName, DisplayName: commandcall.DisplayName,
			Intention: cmd, InvocationMessage: cmd, ToolInput: cmd, Confirmed: messages.ConfirmedNotNeeded, ToolCallResult: result},
	}
}

// olderTerminal is the terminal block naming uri in the tool call toolCallID of a
// turn the chat let go of, read back from the store.
func (s *session) olderTerminal(c *chat, toolCallID, uri string) (messages.TerminalContent, bool) {
	if c.window.Older() == 0 {
		return messages.TerminalContent{}, false
	}
	turns, err := s.store.TurnsOfToolCall(s.uri, c.uri, toolCallID)
	if err != nil {
		return messages.TerminalContent{}, false
	}
	for i := len(turns) - 1; i >= 0; i-- {
		// Held turns were looked through already; a turn the chat never had (one
		// MergeTurns dropped) names nothing.
		if t := turns[i]; t.ToolCallID == toolCallID && c.window.Had(t.ID) {
			st := messages.NewChatState(c.uri, "", "")
			st.AppendTurn(keptTurn(t))
			return st.TerminalContent(toolCallID, uri)
		}
	}
	return messages.TerminalContent{}, false
}
