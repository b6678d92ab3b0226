package session

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/messages"
)

// Presence: a client joins a session's active clients with session/activeClientSet
// and leaves with session/activeClientRemoved, each for its own clientId only. When a
// client's last connection goes, the host takes it off after a grace, unless the same
// clientId comes back first (its transport dropped and it resumed with reconnect):
// then it keeps its place, rather than leaving and joining again as a stranger.

// ClientLeft says the last connection of a clientId went. The root sends it to every
// session.
type ClientLeft struct{ ClientID string }

// ClientBack says a clientId has a connection again. The root sends it to every
// session.
type ClientBack struct{ ClientID string }

// presenceLapsed is an away client's grace running out.
type presenceLapsed struct {
	clientID string
	grace    *grace
}

// grace is one away spell of a client: a client that comes back and goes again gets
// a new one, so the old spell's timer firing late is told apart.
type grace struct{ timer *time.Timer }

// presenceAction takes a client's session/activeClientSet or activeClientRemoved: a
// client sets or removes its own entry, never another's.
func (s *session) presenceAction(m *channel.Dispatch) {
	var a struct {
		ActiveClient *struct {
			ClientID string `json:"clientId"`
		} `json:"activeClient"`
		ClientID string `json:"clientId"`
	}
	readLoosely(m.Raw, &a)
	who := a.ClientID
	if m.Action.Type == messages.SessionActiveClientSet {
		if a.ActiveClient == nil {
			m.Reject(s.journal, "session/activeClientSet needs an activeClient")
			return
		}
		who = a.ActiveClient.ClientID
	}
	if who != m.Origin.ClientID {
		m.Reject(s.journal, fmt.Sprintf("a client sets or removes only its own presence (this is %s, not %s)", m.Origin.ClientID, who))
		return
	}
	var folded map[string]any
	if err := json.Unmarshal(m.Raw, &folded); err != nil || folded == nil {
		m.Reject(s.journal, "the action is malformed")
		return
	}
	messages.ReduceSession(s.state, folded)
	if m.Action.Type == messages.SessionActiveClientRemoved {
		s.stopAway(who)
	}
	origin := m.Origin
	frame := s.journal.Stamp(&messages.Envelope{Channel: s.uri, Action: m.Raw, Origin: &origin})
	for sub := range s.subs {
		sub.Deliver(s.uri, frame)
	}
}

// clientLeft starts the grace of an active client whose last connection went.
func (s *session) clientLeft(ctx actor.Context, clientID string) {
	if !s.state.ActiveClient(clientID) || s.away[clientID] != nil {
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	g := &grace{}
	s.away[clientID] = g
	g.timer = time.AfterFunc(s.cfg.PresenceGrace, func() {
		system.Root.Send(self, &presenceLapsed{clientID: clientID, grace: g})
	})
}

// presenceLapsed takes a client that did not come back off the active clients.
func (s *session) presenceLapsed(m *presenceLapsed) {
	if s.away[m.clientID] != m.grace {
		return // it came back (and maybe went again) since this timer was set
	}
	delete(s.away, m.clientID)
	if s.state.ActiveClient(m.clientID) {
		s.sessionAction(messages.SessionActiveClientRemovedAction{ClientID: m.clientID})
	}
}

// stopAway ends an away client's grace: it came back, or left for good itself.
func (s *session) stopAway(clientID string) {
	if g := s.away[clientID]; g != nil {
		g.timer.Stop()
		delete(s.away, clientID)
	}
}

func (s *session) stopAllAway() {
	for id := range s.away {
		s.stopAway(id)
	}
}
