package terminal

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"

	"github.com/termhost/termhost/messages"
)

// claim is the claim actor of one terminal, its child: it holds who holds the
// terminal, decides every terminal/claimed a client dispatches, and watches the
// holder, so that what becomes of a claim when its holder goes is decided here and
// nowhere else.
//
// Who may change a claim (PROTOCOL.md 4, "terminal/claimed": the sender must hold
// it):
//   - a client claim naming nobody, or naming the client that sends the change, may
//     be set to anything by that client;
//   - a session's terminal can only be handed on within that session (to another of
//     its chats or tool calls, or to the session alone, which is how a client sends
//     a running command to the background).
//
// What becomes of a claim when its holder goes:
//   - a client claim whose connection closed stays as it is. A clientId names a
//     client across its connections, not one socket: a client reconnects with the
//     same clientId and still holds its terminal, so a closed connection tells this
//     actor nothing and it is not told of one.
//   - a session claim whose session is disposed is released to an unclaimed client
//     claim ({kind: client, clientId: ""}), which any client may then take. A session
//     disposes its own command terminals itself; the terminals that outlive it were
//     handed to it by a client, and a claim nobody could hand on would leave them to
//     be reached only by their disposal. The release goes out as a terminal/claimed
//     from the host, with the reason in its _meta.
//   - a session claim whose turn ended, or whose chat was disposed while its
//     session goes on, stays as it is: the finished tool call names the terminal
//     through it (seed: "A ! command"), and the session still holds the terminal
//     and may hand it on.
//   - a session claim naming a session this host does not run (an agent backend's,
//     seed: "A backend asks") stays as it is: nothing here can tell when it goes.
//
// The terminal asks, and applies each verdict and release, in the order this actor
// sends them (one sender, one mailbox), so the two always agree on the claim; the
// terminal holds the dispatches that follow a claim until its verdict comes, so the
// channel's order is the order the actions were sent (see terminal.dispatch).
type claim struct {
	rec  *claimRecord
	root *actor.PID // answers HolderQuery
	// holder is the session actor watched, and holderSession its URI.
	holder        *actor.PID
	holderSession string
}

// claimRecord is what outlives a claim actor's restart: the claim, and the ask being
// decided, which an instance started after a failure answers rather than leave the
// terminal waiting for it.
type claimRecord struct {
	claim  messages.Claim
	asking *claimAsk
}

// newClaimProps makes the props of a claim actor holding initial; root answers its
// HolderQuery.
func newClaimProps(initial messages.Claim, root *actor.PID) *actor.Props {
	rec := &claimRecord{claim: initial}
	return actor.PropsFromProducer(func() actor.Actor { return &claim{rec: rec, root: root} }, actor.WithDispatcher(channel.Inline))
}

// The claim actor runs on channel.Inline: nothing in its Receive blocks, and a
// terminal's opening then starts no goroutine for it (its Started runs where the
// terminal's does), which would take a CPU ahead of the shell's start.

func (c *claim) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.started(ctx)
	case *claimAsk:
		c.decide(ctx, m)
	case *Holder:
		c.watch(ctx, m)
	case *actor.Terminated:
		c.holderGone(ctx, m)
	}
}

func (c *claim) started(ctx actor.Context) {
	if c.rec.asking != nil {
		c.rec.asking = nil
		ctx.Send(ctx.Parent(), &claimVerdict{refusal: "the claim could not be decided; send it again"})
	}
	c.findHolder(ctx)
}

func (c *claim) decide(ctx actor.Context, m *claimAsk) {
	c.rec.asking = m
	refusal := claimRefusal(c.rec.claim, m.clientID, m.next)
	if refusal == "" {
		c.rec.claim = m.next
		c.findHolder(ctx)
	}
	c.rec.asking = nil
	ctx.Send(ctx.Parent(), &claimVerdict{refusal: refusal})
}

// claimRefusal says why clientID may not change the claim cur to next, or "" if it
// may.
func claimRefusal(cur messages.Claim, clientID string, next messages.Claim) string {
	switch cur.Kind {
	case messages.ClaimClient:
		if cur.ClientID == "" || cur.ClientID == clientID {
			return ""
		}
		return fmt.Sprintf("the terminal is claimed by client %s", cur.ClientID)
	case messages.ClaimSession:
		if next.Kind == messages.ClaimSession && next.Session == cur.Session {
			return ""
		}
		return fmt.Sprintf("the terminal is claimed by session %s", cur.Session)
	}
	return ""
}

// findHolder watches the session the claim names, asking the root for its actor,
// and stops watching one it no longer names.
func (c *claim) findHolder(ctx actor.Context) {
	cur := c.rec.claim
	named := cur.Kind == messages.ClaimSession
	if c.holder != nil && (!named || cur.Session != c.holderSession) {
		ctx.Unwatch(c.holder)
		c.holder, c.holderSession = nil, ""
	}
	if named && c.holder == nil && c.root != nil {
		ctx.Request(c.root, &HolderQuery{Session: cur.Session})
	}
}

func (c *claim) watch(ctx actor.Context, m *Holder) {
	cur := c.rec.claim
	if m.PID == nil || c.holder != nil || cur.Kind != messages.ClaimSession || cur.Session != m.Session {
		return
	}
	c.holder, c.holderSession = m.PID, m.Session
	// A session that has already stopped answers at once with Terminated.
	ctx.Watch(m.PID)
}

func (c *claim) holderGone(ctx actor.Context, m *actor.Terminated) {
	if !samePID(c.holder, m.Who) {
		return
	}
	session := c.holderSession
	c.holder, c.holderSession = nil, ""
	cur := c.rec.claim
	if cur.Kind != messages.ClaimSession || cur.Session != session {
		return
	}
	released := messages.Claim{Kind: messages.ClaimClient}
	c.rec.claim = released
	ctx.Send(ctx.Parent(), &claimReleased{from: cur, to: released,
		why: fmt.Sprintf("session %s is gone; the terminal is released for any client to claim", session)})
}
