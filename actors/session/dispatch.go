package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/messages"
)

// dispatch takes a client's action on one of the session's channels. A chat takes
// what a client may start or change: a turn, its cancellation, pending messages. The
// session channel takes a client's own presence only: the rest of its state is the
// host's.
func (s *session) dispatch(ctx actor.Context, m *channel.Dispatch) {
	c := s.chats[m.Channel]
	if c == nil {
		if m.Channel != s.uri {
			return
		}
		switch m.Action.Type {
		case messages.SessionActiveClientSet, messages.SessionActiveClientRemoved:
			s.presenceAction(m)
		default:
			m.Reject(s.journal, fmt.Sprintf("%s is not dispatched by clients on this host", m.Action.Type))
		}
		return
	}
	// The fold takes the action whole, fields the host does not read included, and
	// the echo is the action as the client sent it.
	var folded map[string]any
	if err := json.Unmarshal(m.Raw, &folded); err != nil || folded == nil {
		m.Reject(s.journal, "the action is malformed")
		return
	}
	switch m.Action.Type {
	case messages.ChatTurnStarted:
		s.clientTurnStarted(ctx, c, m, folded)
	case messages.ChatPendingMessageSet:
		var a messages.ChatPendingMessageSetAction
		readLoosely(m.Raw, &a)
		if a.Message.OriginKind() == messages.OriginSystemNotification {
			m.Reject(s.journal, notificationIsHosts)
			return
		}
		s.echo(c, m, folded)
		if a.Kind == messages.PendingQueued {
			c.queuedBy[a.ID] = m.By
		}
		if a.Kind == messages.PendingQueued && c.busy == "" {
			s.drainQueue(ctx, c)
		}
	case messages.ChatPendingMessageRemoved:
		var a messages.ChatPendingMessageRemovedAction
		readLoosely(m.Raw, &a)
		if a.Kind == messages.PendingQueued {
			delete(c.queuedBy, a.ID)
		}
		s.echo(c, m, folded)
	case messages.ChatQueuedMessagesReordered:
		s.echo(c, m, folded)
	case messages.ChatToolCallConfirmed:
		s.confirmPermission(c, m, folded)
	case messages.ChatTurnCancelled:
		var a messages.ChatTurnCancelledAction
		readLoosely(m.Raw, &a)
		if active := c.state.ActiveTurnID(); active == "" || active != a.TurnID {
			m.Reject(s.journal, "no turn with that id is running")
			return
		}
		if c.keeping(a.TurnID) {
			// Its command ended; the turn completes as soon as it is on disk.
			m.Reject(s.journal, "the turn has ended and is being kept")
			return
		}
		if c.agentTurn != "" && c.agentTurn == a.TurnID {
			// The agent ends its turn; the cancel is echoed when it has.
			s.cancelAgentTurn(ctx, c, m, folded)
			return
		}
		s.echo(c, m, folded)
		c.busy = ""
		s.drainQueue(ctx, c)
	default:
		if strings.HasPrefix(m.Action.Type, "terminal/") {
			m.Reject(s.journal, fmt.Sprintf("%s is not a terminal here", m.Channel))
			return
		}
		m.Reject(s.journal, fmt.Sprintf("%s is not dispatched by clients on this host", m.Action.Type))
	}
}

// notificationIsHosts refuses a client's message posing as the host's: a turn of a
// system notification completes without an agent (see startTurn), so a client's
// would be a message no agent ever hears, shown as the host's.
const notificationIsHosts = "a message with origin systemNotification is the host's to send"

// clientTurnStarted starts the turn a client sent: a `!` command runs; anything else
// goes to the session's agent, or ends with the no-agent error in a session without
// one. A message for the agent while it is on a turn is refused (a client queues it);
// a `!` command takes the place of the agent's turn, and the agent is asked to stop.
func (s *session) clientTurnStarted(ctx actor.Context, c *chat, m *channel.Dispatch, folded map[string]any) {
	var a messages.ChatTurnStartedAction
	readLoosely(m.Raw, &a)
	if a.TurnID == "" || a.Message == nil {
		m.Reject(s.journal, "chat/turnStarted needs a turnId and a message")
		return
	}
	if c.window.Had(a.TurnID) {
		m.Reject(s.journal, turnIDTaken(a.TurnID))
		return
	}
	if _, dated := folded["startedAt"]; !dated {
		folded["startedAt"] = isoTime(time.Now())
	}
	if a.Message.OriginKind() == messages.OriginSystemNotification {
		m.Reject(s.journal, notificationIsHosts)
		return
	}
	toAgent := s.agentTakes(a.Message)
	if toAgent && c.agentTurn != "" {
		m.Reject(s.journal, fmt.Sprintf("the agent is still on turn %s: queue the message (chat/pendingMessageSet) or cancel that turn first", c.agentTurn))
		return
	}
	messages.ReduceChatKnowing(c.state, folded, c.window.Had)
	if c.state.ActiveTurnID() != a.TurnID {
		// The reducer left it out: only the echo of a turn it started may go out.
		m.Reject(s.journal, turnIDTaken(a.TurnID))
		return
	}
	c.window.Started(a.TurnID)
	origin := m.Origin
	s.publish(c, m.Raw, &origin)
	delete(c.queuedBy, a.QueuedMessageID)
	if !toAgent && c.agentTurn != "" && c.agentTurn == c.busy {
		s.displaceAgentTurn(ctx, c)
	}
	s.startTurn(ctx, c, a.TurnID, a.Message, m.By)
}

// turnIDTaken refuses a turnStarted naming a turn the chat has had: folded, it would
// change nothing, so the command or message must not run either.
func turnIDTaken(id string) string {
	return fmt.Sprintf("turn %s has already started in this chat: a new turn needs a new turnId", id)
}

// echo folds a client's action into the chat and sends it, as the client sent it, to
// the chat's subscribers.
func (s *session) echo(c *chat, m *channel.Dispatch, folded map[string]any) {
	messages.ReduceChat(c.state, folded)
	origin := m.Origin
	s.publish(c, m.Raw, &origin)
}

// readLoosely decodes what a client sent into a typed action as far as its fields
// have the types the schema gives them: encoding/json leaves a field of another type
// zero and goes on with the rest, so it reads as missing, as the reducer folding the
// same action reads it. The action decoded as an object already, so no other error
// can come.
func readLoosely(raw json.RawMessage, into any) {
	_ = json.Unmarshal(raw, into)
}
