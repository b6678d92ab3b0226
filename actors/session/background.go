package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// Background work, wakes and the agent shell service (PROTOCOL.md 8 "Background work
// (0.9.0)"; seed: the agent's persistent PTY tools).
//
// A session's agent shells live in one service actor, a child of the session spawned
// the first time someone asks for it (ToolServiceQuery). A command the service sends
// to the background is a row of its chat's backgroundWork, set and removed by the
// service; a client's stop of a row goes to the row's owner, which writes the ^C and
// removes the row once the command ends. When such a command ends, or a monitor
// fires, the service wakes the session: a turn in the chat whose message is a system
// notification, begun through the same turn gate as a person's message.

// SetBackgroundWork lists Work on Chat's backgroundWork, or replaces the row with its
// id. Owner is who stops it (StopBackgroundWork); its rows go if it stops.
type SetBackgroundWork struct {
	Chat  string
	Work  messages.BackgroundShellWork
	Owner *actor.PID
}

// RemoveBackgroundWork takes the row ID off Chat's backgroundWork: its work ended.
// An id not listed is ignored.
type RemoveBackgroundWork struct {
	Chat, ID string
}

// StopBackgroundWork asks for the work of row ID in Chat to stop. Sent to a session
// (or to the root, which routes it by Chat), it is a request answered with a *Result:
// an error when the chat or the row is not there, else nothing, once the stop went
// on to the row's owner, as this same message sent without a reply. The row stays
// until its owner removes it.
type StopBackgroundWork struct {
	Chat, ID string
	Who      auth.Principal
}

// Wake is the host waking a chat: a background command ended, a monitor fired. It
// becomes a turn whose message is Text with origin systemNotification and _meta
// holding Meta, with By (the person whose call started what woke it, if any) under
// "termhost.by". A chat running a turn queues it, as a queued pending message; an
// idle chat starts it at once. A session with an agent hands the turn to the agent
// as a prompt, By's; without one, the turn completes at once: the notification is
// its content. A wake for a chat the session does not hold is dropped.
type Wake struct {
	Chat, Text, By string
	Meta           map[string]any
}

// WakeByMeta is the _meta key of a wake's message naming who started what woke it.
const WakeByMeta = "termhost.by"

// ToolServiceQuery asks for a session's agent shell service, spawned the first time.
// Session names the session when the root is asked; a session asked directly ignores
// it. The answer is a *ToolServiceResult.
type ToolServiceQuery struct {
	Session string
}

// ToolServiceResult answers ToolServiceQuery: the service's PID; nil with no Err when
// the host runs no service (Config.ToolService is nil); Err when there is no such
// session or the host is closing. Creator is the user who made the session ("" when
// unknown), whose rights an agent's own connection to the tools acts with.
type ToolServiceResult struct {
	PID     *actor.PID
	Err     *messages.Error
	Creator string
}

// ToolServiceSpec is what a session's agent shell service is made for.
type ToolServiceSpec struct {
	// Session is the session's URI.
	Session string
	// WorkingDirectories are the session's, as it was created with them (file URIs).
	WorkingDirectories []string
	// Root is the root actor, the session's parent: where terminals are made,
	// written to and disposed.
	Root *actor.PID
	// Writes counts the session's disk writes on their way, which its shutdown and
	// its disposal wait for before they answer (and before a disposed session's kept
	// data is removed). A service that writes off its mailbox (keeping a shell's
	// output) calls Writes.Add(1) inside its Receive, its Stopping included, before
	// it starts the write, and Writes.Done() once the write landed: the session waits
	// for the service to stop, then for Writes.
	Writes *sync.WaitGroup
}

// setBackgroundWork lists a row and remembers its owner.
func (s *session) setBackgroundWork(ctx actor.Context, m *SetBackgroundWork) {
	c := s.chats[m.Chat]
	if c == nil || m.Work.ID == "" {
		s.cfg.Logger.Debug("background work for no chat of this session, or without an id, is dropped", "session", s.uri, "chat", m.Chat, "id", m.Work.ID)
		return
	}
	if c.owners == nil {
		c.owners = map[string]*actor.PID{}
	}
	c.owners[m.Work.ID] = m.Owner
	if m.Owner != nil {
		// A row whose owner is gone could never be stopped or removed.
		ctx.Watch(m.Owner)
	}
	s.chatAction(c, messages.ChatBackgroundWorkSetAction{Work: m.Work})
}

// removeBackgroundWork takes a row off its chat.
func (s *session) removeBackgroundWork(m *RemoveBackgroundWork) {
	c := s.chats[m.Chat]
	if c == nil {
		s.cfg.Logger.Debug("background work removed from no chat of this session", "session", s.uri, "chat", m.Chat, "id", m.ID)
		return
	}
	s.removeRow(c, m.ID)
}

// removeRow takes a row off the chat, if it is listed.
func (s *session) removeRow(c *chat, id string) {
	delete(c.owners, id)
	if c.state.HasBackgroundWork(id) {
		s.chatAction(c, messages.ChatBackgroundWorkRemovedAction{ID: id})
	}
}

// stopBackgroundWork passes a client's stop to the row's owner and answers at once.
func (s *session) stopBackgroundWork(ctx actor.Context, m *StopBackgroundWork) {
	c := s.chats[m.Chat]
	if c == nil {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeNotFound, "No chat %s on this host", m.Chat)})
		return
	}
	owner, listed := c.owners[m.ID]
	if !listed || !c.state.HasBackgroundWork(m.ID) {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeNotFound, "No background work %q in chat %s: it may have ended", m.ID, m.Chat)})
		return
	}
	if owner == nil {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeInternalError, "Background work %q has nobody on this host to stop it", m.ID)})
		return
	}
	ctx.Send(owner, &StopBackgroundWork{Chat: m.Chat, ID: m.ID})
	ctx.Respond(&Result{})
}

// ownerGone takes the rows of an owner that stopped off their chats, and forgets the
// tool service when it was that. An agent runner that stopped while the session goes
// on is its agent lost.
func (s *session) ownerGone(ctx actor.Context, who *actor.PID) {
	if s.tools != nil && s.tools.Equal(who) {
		s.tools = nil
	}
	if s.agent != nil && s.agent.Equal(who) {
		s.agent = nil
		if !s.closed && !s.disposed {
			s.agentLost(ctx, "its runner stopped")
		}
	}
	for _, uri := range s.order {
		c := s.chats[uri]
		for id, owner := range c.owners {
			if owner != nil && owner.Equal(who) {
				s.removeRow(c, id)
			}
		}
	}
}

// wake begins a system notification's turn through the chat's turn gate.
func (s *session) wake(ctx actor.Context, m *Wake) {
	c := s.chats[m.Chat]
	if c == nil {
		s.cfg.Logger.Debug("a wake for no chat of this session is dropped", "session", s.uri, "chat", m.Chat)
		return
	}
	meta := make(map[string]any, len(m.Meta)+1)
	for k, v := range m.Meta {
		meta[k] = v
	}
	if m.By != "" {
		meta[WakeByMeta] = m.By
	}
	msg := messages.SystemNotificationMessage(m.Text, meta)
	s.seq++
	if _, _, queued := c.state.FirstQueued(); c.busy != "" || c.agentTurn != "" || queued {
		// It waits its turn where clients see it, and starts after those before it.
		id := fmt.Sprintf("wake-%d-%d", time.Now().UnixNano(), s.seq)
		s.chatAction(c, messages.ChatPendingMessageSetAction{Kind: messages.PendingQueued, ID: id, Message: msg})
		s.drainQueue(ctx, c)
		return
	}
	turnID := fmt.Sprintf("turn-%d-%d", time.Now().UnixNano(), s.seq)
	s.chatAction(c, messages.ChatTurnStartedAction{TurnID: turnID, StartedAt: isoTime(time.Now()), Message: msg})
	s.startTurn(ctx, c, turnID, msg, m.By)
}

// toolService answers ToolServiceQuery, spawning the service the first time.
func (s *session) toolService(ctx actor.Context) {
	if s.tools == nil && s.cfg.ToolService != nil {
		switch {
		case s.closed:
			ctx.Respond(&ToolServiceResult{Err: messages.Errorf(messages.CodeInternalError, "%s", ClosingHost)})
			return
		case s.disposed:
			ctx.Respond(&ToolServiceResult{Err: messages.Errorf(messages.CodeSessionNotFound, "Session %s is being disposed", s.uri)})
			return
		}
		spec := ToolServiceSpec{Session: s.uri, WorkingDirectories: append([]string(nil), s.record.WorkingDirectories...), Root: s.root, Writes: s.writes}
		if props := s.cfg.ToolService(spec); props != nil {
			pid, err := ctx.SpawnNamed(props, "tools")
			if err != nil {
				pid = ctx.Spawn(props)
			}
			s.tools = pid
		}
	}
	ctx.Respond(&ToolServiceResult{PID: s.tools, Creator: s.record.Creator})
}

// stopTools stops the tool service, if there is one, and returns the future of its
// stop; it is not asked for again after.
func (s *session) stopTools(ctx actor.Context) *actor.Future {
	if s.tools == nil {
		return nil
	}
	f := ctx.StopFuture(s.tools)
	s.tools = nil
	return f
}
