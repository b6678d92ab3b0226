package ahp

import (
	"encoding/json"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
	"github.com/termhost/termhost/messages/versioning"
)

// A connection's sign-in and its channels: initialize (the handshake and the
// subscriptions it asks for), subscribe, and reconnect (a replay of what was missed,
// or fresh snapshots when the replay would weigh more).

type initializeParams struct {
	Channel              string   `json:"channel"`
	ProtocolVersions     []string `json:"protocolVersions"`
	ClientID             *string  `json:"clientId"`
	InitialSubscriptions []string `json:"initialSubscriptions"`
}

func (c *connection) initialize(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p initializeParams
	if e := decodeParams(raw, &p); e != nil {
		c.fail(id, e)
		return
	}
	if len(p.ProtocolVersions) == 0 {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: protocolVersions must list at least one version"))
		return
	}
	if p.ClientID == nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: clientId is required"))
		return
	}
	if c.initialized {
		c.fail(id, messages.Errorf(messages.CodeInvalidRequest, "This connection is already initialized"))
		return
	}
	version, verr := versioning.Negotiate(p.ProtocolVersions)
	if verr != nil {
		c.fail(id, verr)
		if verr.Code == messages.CodeUnsupportedProtocolVersion {
			c.cfg.Close(delivery.ReasonVersionMismatch)
		}
		return
	}
	if !c.signIn(ctx, id, *p.ClientID, version) {
		return
	}
	channels := c.readable(p.InitialSubscriptions)
	c.collectSnapshots(ctx, channels, nil, func(snaps []messages.Snapshot, subscribed []string) {
		result := map[string]any{
			"protocolVersion":             version,
			"serverSeq":                   c.cfg.Journal.Current(),
			"serverInfo":                  c.cfg.Info,
			"snapshots":                   snaps,
			"defaultDirectory":            messages.FileURI(c.cfg.Home),
			"completionTriggerCharacters": []string{"@", "#", "/"},
			// A turn's text that starts with ! runs as a shell command (seed: "Who opens one").
			"terminalCommandPrefix": "!",
		}
		c.releaseAnswer(id, result, subscribed...)
	})
}

// signIn makes this connection clientID's, after an initialize that negotiated
// version or a reconnect that resumes (version ""): the Clients table says whether
// this person may be that client and which version it speaks, and the sessions hear
// that the client is back. It answers the request itself when it may not.
func (c *connection) signIn(ctx actor.Context, id json.RawMessage, clientID, version string) bool {
	root := c.cfg.Root
	version, e := c.cfg.Clients.join(clientID, c.cfg.Principal.User, version, func() {
		ctx.Send(root, &session.ClientBack{ClientID: clientID})
	})
	if e != nil {
		c.fail(id, e)
		return false
	}
	c.initialized, c.clientID, c.version = true, clientID, version
	c.gate = versioning.NewActionGate(version)
	c.cfg.Outbox.Gate(c.gate)
	c.cfg.Outbox.ShowCatalog(c.mayReadSessions())
	return true
}

// readable keeps the channels this connection may read, without duplicates. Root
// state is one state for everybody and never filtered.
func (c *connection) readable(channels []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, ch := range channels {
		if seen[ch] {
			continue
		}
		seen[ch] = true
		if limits.CheckURI(ch) != nil {
			continue
		}
		if ch == messages.RootURI || c.may(auth.ReadGrant(ch)) {
			out = append(out, ch)
		}
	}
	return out
}

// collectSnapshots subscribes to each channel in turn, holding each one's frames in
// the outbox until the answer that carries its snapshot is queued; done must release
// the held channels. Channels that do not exist are left out.
func (c *connection) collectSnapshots(ctx actor.Context, channels []string, turns *int, done func([]messages.Snapshot, []string)) {
	snaps := []messages.Snapshot{}
	var subscribed []string
	var next func(i int)
	next = func(i int) {
		if i == len(channels) {
			done(snaps, subscribed)
			return
		}
		ch := channels[i]
		c.subscribeHeld(ctx, ch, turns, func(snap *messages.Snapshot, e *messages.Error) {
			if e == nil {
				snaps = append(snaps, *snap)
				subscribed = append(subscribed, ch)
			} else {
				c.cfg.Outbox.Release(nil, ch)
			}
			next(i + 1)
		})
	}
	next(0)
}

// subscribeHeld subscribes this connection to ch with its frames held in the outbox,
// and calls then with the snapshot or the error for the client; then must release ch.
// A socket that went meanwhile has the subscription undone, and then is not called.
func (c *connection) subscribeHeld(ctx actor.Context, ch string, turns *int, then func(*messages.Snapshot, *messages.Error)) {
	c.cfg.Outbox.Hold(ch)
	c.subscribing[ch]++
	delete(c.viaHost, ch)
	f := ctx.RequestFuture(c.cfg.Root, &channel.Subscribe{Channel: ch, Sub: c.cfg.Outbox, Turns: turns}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		c.doneSubscribing(ch)
		if c.gone {
			ctx.Send(c.cfg.Root, &channel.Unsubscribe{Channel: ch, Sub: c.cfg.Outbox})
			return
		}
		r, ok := res.(*channel.SubscribeResult)
		switch {
		case err != nil || !ok:
			then(nil, messages.Errorf(messages.CodeInternalError, "Internal error: no answer from %s", ch))
		case r.Err != nil:
			then(nil, r.Err)
		default:
			c.subscribed[ch] = true
			if r.Terminal != nil && !c.viaHost[ch] {
				c.terminals[ch] = r.Terminal
			} else {
				delete(c.terminals, ch)
			}
			then(r.Snapshot, nil)
		}
	})
}

// releaseAnswer queues the answer to request id (result, or an internal error if it
// does not encode), then the frames held for channels.
func (c *connection) releaseAnswer(id json.RawMessage, result any, channels ...string) {
	frame, err := messages.ResponseFrame(id, result)
	if err != nil {
		// Every answer the host makes encodes; this is a bug, not bad input.
		c.cfg.Logger.Error("encoding an answer", "err", err)
		frame = messages.ErrorFrame(id, messages.Errorf(messages.CodeInternalError, "Internal error: %v", err))
	}
	c.cfg.Outbox.Release(frame, channels...)
}

type subscribeParams struct {
	Channel  string `json:"channel"`
	Delivery *struct {
		MaxLatencyMs *float64 `json:"maxLatencyMs"`
	} `json:"delivery"`
	View *struct {
		Turns *float64 `json:"turns"`
	} `json:"view"`
}

// turns is a chat subscriber's view.turns as a count (nil when not given: every
// retained turn), or an error for a value that is not one.
func (p *subscribeParams) turns() (*int, *messages.Error) {
	if p.View == nil || p.View.Turns == nil {
		return nil, nil
	}
	n := *p.View.Turns
	if n < 0 || math.IsNaN(n) {
		return nil, messages.Errorf(messages.CodeInvalidParams, "Invalid params: view.turns must be a number of turns, 0 or more")
	}
	turns := int(min(n, math.MaxInt32))
	return &turns, nil
}

// latency is the subscriber's delivery.maxLatencyMs (PROTOCOL.md 3: terminal/data
// may be coalesced for up to that long), or an error for a value that is not one.
func (p *subscribeParams) latency() (time.Duration, *messages.Error) {
	if p.Delivery == nil || p.Delivery.MaxLatencyMs == nil {
		return 0, nil
	}
	ms := *p.Delivery.MaxLatencyMs
	if ms < 0 || math.IsNaN(ms) {
		return 0, messages.Errorf(messages.CodeInvalidParams, "Invalid params: delivery.maxLatencyMs must be a number of milliseconds, 0 or more")
	}
	return time.Duration(min(ms, float64(time.Hour/time.Millisecond)) * float64(time.Millisecond)), nil
}

func (c *connection) subscribe(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if e := decodeOnChannel(raw, &p, &p.Channel); e != nil {
		c.fail(id, e)
		return
	}
	latency, e := p.latency()
	if e != nil {
		c.fail(id, e)
		return
	}
	turns, e := p.turns()
	if e != nil {
		c.fail(id, e)
		return
	}
	if grant := auth.ReadGrant(p.Channel); p.Channel != messages.RootURI && !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return
	}
	ch := p.Channel
	c.subscribeHeld(ctx, ch, turns, func(snap *messages.Snapshot, e *messages.Error) {
		if e != nil {
			c.cfg.Outbox.Release(messages.ErrorFrame(id, e), ch)
			return
		}
		c.cfg.Outbox.SetLatency(ch, latency)
		c.releaseAnswer(id, map[string]any{"snapshot": snap}, ch)
	})
}

type reconnectParams struct {
	ClientID          string   `json:"clientId"`
	LastSeenServerSeq *uint64  `json:"lastSeenServerSeq"`
	Subscriptions     []string `json:"subscriptions"`
}

// reconnect resubscribes and answers with the actions missed since lastSeenServerSeq,
// or with fresh snapshots when some of them have left the replay ring.
func (c *connection) reconnect(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p reconnectParams
	if e := decodeParams(raw, &p); e != nil {
		c.fail(id, e)
		return
	}
	if p.LastSeenServerSeq == nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: lastSeenServerSeq is required"))
		return
	}
	switch {
	case !c.initialized && p.ClientID == "":
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: clientId is required"))
		return
	case !c.initialized:
		// The client resumes as the clientId it had: the same person, the version it
		// negotiated, its claims (they name the clientId) and its presence.
		if !c.signIn(ctx, id, p.ClientID, "") {
			return
		}
	case p.ClientID != "" && p.ClientID != c.clientID:
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: this connection is client %s, not %s", c.clientID, p.ClientID))
		return
	}
	lastSeen := *p.LastSeenServerSeq
	wanted := c.readable(p.Subscriptions)
	var missing []string
	for _, ch := range p.Subscriptions {
		if !contains(wanted, ch) {
			missing = append(missing, ch)
		}
	}
	// A chat's snapshot holds the turns the chat holds now: the client had its own
	// window of them, and pages in the rest with fetchTurns as before (its cursor
	// still works; a turn it holds already is not doubled).
	c.collectSnapshots(ctx, wanted, new(int), func(snaps []messages.Snapshot, subscribed []string) {
		for _, ch := range wanted {
			if !contains(subscribed, ch) {
				missing = append(missing, ch)
			}
		}
		set := map[string]bool{}
		for _, ch := range subscribed {
			set[ch] = true
		}
		// Every held frame is newer than its snapshot, so replaying up to each
		// snapshot's fromSeq and then releasing the held frames loses and doubles
		// nothing.
		entries, ok := c.cfg.Journal.Replay(lastSeen, set)
		var result any = map[string]any{"type": "snapshot", "snapshots": snaps}
		if ok {
			cut := map[string]uint64{}
			for _, s := range snaps {
				cut[s.Resource] = s.FromSeq
			}
			actions := []json.RawMessage{}
			size := 0
			for _, e := range entries {
				if e.Seq <= cut[e.Channel] && c.gate.Admits(e.Frame) {
					actions = append(actions, e.Envelope())
					size += len(e.Frame)
				}
			}
			// A client that fell far behind (one closed as slow, say) would get back
			// more than the state it missed, in one answer that could pass its queue's
			// bound and close it again: past the snapshots' own size, it gets those.
			// (The snapshots are encoded to be weighed only when the replay is not small.)
			if size <= replayFloor || size <= snapshotsSize(snaps) {
				result = map[string]any{"type": "replay", "actions": actions, "missing": nonNil(missing)}
			}
		}
		c.releaseAnswer(id, result, subscribed...)
	})
}

// snapshotsSize is about how many bytes the snapshots take on the wire.
func snapshotsSize(snaps []messages.Snapshot) int {
	b, err := json.Marshal(snaps)
	if err != nil {
		return 0
	}
	return len(b)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// replayFloor is a replay small enough to send whatever the snapshots weigh.
const replayFloor = 64 << 10
