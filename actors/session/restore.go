package session

import (
	"encoding/json"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// restore rebuilds the chats and their local turns from the store after a restart.
// Each turn comes back as the completed `!` command it was, its tool call holding the
// result it ended with.
func (s *session) restore() {
	for _, chatURI := range s.record.Chats {
		modified := isoTime(s.record.LastEnd)
		c := &chat{uri: chatURI, state: messages.NewChatState(chatURI, "Chat", modified), subs: map[delivery.Subscriber]bool{}, runs: map[string]*commandRun{}}
		c.agentChat.init()
		turns, err := s.store.Turns(s.uri, chatURI)
		if err != nil {
			s.cfg.Logger.Warn("a chat's kept turns could not be read", "chat", chatURI, "err", err)
		}
		_, kept := persistence.MergeTurns(nil, turns)
		for _, t := range kept {
			var result messages.ToolCallResult
			_ = json.Unmarshal(t.Result, &result)
			cmd, _ := commandOf(t.Text)
			c.state.AppendTurn(messages.Turn{
				ID: t.ID, StartedAt: isoTime(t.StartedAt), Duration: t.EndedAt.Sub(t.StartedAt).Milliseconds(),
				Message: messages.UserMessage(t.Text), State: t.State,
				ToolCall: messages.CompletedToolCall{ToolCallID: t.ToolCallID, ToolName: commandToolName, DisplayName: commandDisplayName,
					Intention: cmd, InvocationMessage: cmd, ToolInput: cmd, Confirmed: messages.ConfirmedNotNeeded, ToolCallResult: result},
			})
			c.lastTurn = t.ID
		}
		s.chats[chatURI] = c
		s.order = append(s.order, chatURI)
		// Nobody is subscribed yet: the action only folds.
		_, _ = s.state.Apply(messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: chatURI, Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: modified}})
		s.state.SetDefaultChat(chatURI)
	}
}
