package session

import (
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
		c.history.init()
		refs, err := s.store.TurnRefs(s.uri, chatURI)
		if err != nil {
			s.cfg.Logger.Warn("a chat's kept turns could not be read", "chat", chatURI, "err", err)
		}
		_, kept := persistence.MergeTurnRefs(nil, refs)
		// The newest turns come back into the state; the others stay in the store
		// until a client asks for them (history.go), and only their ids are read.
		held := max(len(kept)-heldTurns, 0)
		for _, t := range kept {
			c.ids[t.ID] = true
		}
		for _, t := range kept[:held] {
			c.older = append(c.older, t.ID)
		}
		s.holdNewest(c, kept[held:])
		if len(kept) > 0 {
			c.lastTurn = kept[len(kept)-1].ID
		}
		c.state.SetTurnsCursor(c.cursor())
		s.chats[chatURI] = c
		s.order = append(s.order, chatURI)
		// Nobody is subscribed yet: the action only folds.
		_, _ = s.state.Apply(messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: chatURI, Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: modified}})
		s.state.SetDefaultChat(chatURI)
	}
}

// holdNewest reads the bodies of the turns a restored chat holds (refs, in the order
// they ran) into its state. A turn whose line no longer decodes is left out, as a
// whole read would leave it out.
func (s *session) holdNewest(c *chat, refs []persistence.TurnRef) {
	ids := make([]string, len(refs))
	for i, t := range refs {
		ids[i] = t.ID
	}
	turns, err := s.readKept(c, ids)
	if err != nil {
		s.cfg.Logger.Warn("a chat's newest kept turns could not be read", "chat", c.uri, "err", err)
	}
	for _, t := range turns {
		c.state.AppendTurn(keptTurn(t))
		c.kept[t.ID] = true
	}
}
