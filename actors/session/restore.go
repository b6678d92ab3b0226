package session

import (
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session/turnwindow"
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
		c.window = turnwindow.New()
		refs, err := s.store.TurnRefs(s.uri, chatURI)
		if err != nil {
			s.cfg.Logger.Warn("a chat's kept turns could not be read", "chat", chatURI, "err", err)
		}
		_, kept := persistence.MergeTurnRefs(nil, refs)
		ids := make([]string, len(kept))
		for i, t := range kept {
			ids[i] = t.ID
		}
		// The newest turns come back into the state; the others stay in the store
		// until a client asks for them (history.go), and only their ids are read.
		s.holdNewest(c, c.window.Restore(ids))
		if len(ids) > 0 {
			c.lastTurn = ids[len(ids)-1]
		}
		c.state.SetTurnsCursor(c.window.Cursor())
		s.chats[chatURI] = c
		s.order = append(s.order, chatURI)
		// Nobody is subscribed yet: the action only folds.
		_, _ = s.state.Apply(messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: chatURI, Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: modified}})
		s.state.SetDefaultChat(chatURI)
	}
}

// holdNewest reads the bodies of the turns a restored chat holds (ids, in the order
// they ran) into its state. A turn whose line no longer decodes is left out, as a
// whole read would leave it out.
func (s *session) holdNewest(c *chat, ids []string) {
	turns, err := s.readKept(c, ids)
	if err != nil {
		s.cfg.Logger.Warn("a chat's newest kept turns could not be read", "chat", c.uri, "err", err)
	}
	for _, t := range turns {
		c.state.AppendTurn(keptTurn(t))
		c.window.Kept(t.ID)
	}
}
