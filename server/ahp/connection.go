package ahp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
	"github.com/termhost/termhost/messages/strictjson"
	"github.com/termhost/termhost/messages/versioning"
)

// ServerInfo names the host in initialize's answer.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Config is what a Connection actor is made with.
type Config struct {
	Root      *actor.PID
	Journal   *delivery.Journal
	Outbox    *delivery.Outbox
	Principal auth.Principal
	// Refresh, when set, says who Principal's sign-in is now: the users file may
	// have revoked its token or changed its role since the socket opened. It is
	// asked before each frame is handled, so such an edit takes effect at once.
	Refresh func() auth.Principal
	Info    ServerInfo
	Home    string
	Logger  *slog.Logger
	// Clients remembers each clientId's person and protocol version across its
	// connections, so a client can resume with reconnect as its first request. Nil
	// remembers nothing: such a reconnect is refused and the client initializes.
	Clients *Clients
	// Close ends the socket with a reason once what is queued has been written.
	Close func(delivery.CloseReason)
	// Done is called once for every Frame after it was handled, so the reader can
	// bound how many frames are in flight.
	Done func(frameBytes int)
}

// Frame is one text frame a client sent.
type Frame struct{ Data []byte }

// Disconnected says the socket is gone; the connection unsubscribes and stops.
type Disconnected struct{}

// Recheck says the users file changed: the connection reads who it is again, and a
// connection whose token is gone, or that may no longer read a channel it is
// subscribed to, is closed with a reason saying so. Without it a revoked token's
// subscriptions would go on flowing until its next frame.
type Recheck struct{}

// connection is one WebSocket's actor: its JSON-RPC requests, its subscriptions and
// its signed-in principal. It never writes the socket itself; it queues on its Outbox.
type connection struct {
	cfg         Config
	clientID    string
	initialized bool
	// version is the protocol version this client negotiated, here or on the
	// connection it resumed.
	version string
	// gate holds back the actions version does not know (nil: none to hold).
	gate       *versioning.ActionGate
	subscribed map[string]bool
	// subscribing are channels whose subscribe is on its way: a socket that goes
	// before the answer must still be taken off them.
	subscribing map[string]int
	// terminals are the actors of the subscribed terminals, which this connection's
	// terminal/* dispatches go to directly (see SubscribeResult.Terminal).
	terminals map[string]*actor.PID
	// viaHost are channels a terminal/* dispatch went to through the host while a
	// subscribe was on its way: going direct after it could overtake that dispatch,
	// so such a channel keeps going through the host.
	viaHost map[string]bool
	// gone is set once the socket went: a subscribe answered after that is undone.
	gone bool
	// closing is set once this actor asked for the socket to close (a revoked
	// token, narrowed rights): frames still arriving are not handled.
	closing bool
}

// NewProps makes the props of a connection actor.
func NewProps(cfg Config) *actor.Props {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clients == nil {
		cfg.Clients = NewClients(0, 0)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &connection{cfg: cfg, subscribed: map[string]bool{}, subscribing: map[string]int{}, terminals: map[string]*actor.PID{}, viaHost: map[string]bool{}}
	}, actor.WithDispatcher(channel.Inline))
}

// A connection runs on channel.Inline, usually on its socket's reader: a keystroke
// goes from the reader to its terminal with no hand-off. Nothing in Receive blocks
// (STYLE: "Nothing blocks inside Receive").

func (c *connection) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Frame:
		// Who is asking is read again for every frame: the users file may have
		// revoked the token or changed its role since the socket opened, and every
		// grant check below (c.may or c.cfg.Principal.Can alike) sees that at once.
		// Such a frame is refused here; the connection itself is closed by the next
		// Recheck.
		if !c.closing {
			if c.cfg.Refresh != nil {
				c.cfg.Principal = c.cfg.Refresh()
			}
			c.handle(ctx, m.Data)
		}
		if c.cfg.Done != nil {
			c.cfg.Done(len(m.Data))
		}
	case *Recheck:
		c.recheck()
	case *Disconnected:
		c.gone = true
		if c.initialized && c.cfg.Clients.leave(c.clientID) {
			// Its sessions keep its presence for a grace, for it to come back.
			ctx.Send(c.cfg.Root, &session.ClientLeft{ClientID: c.clientID})
		}
		// Unsubscribe follows any Subscribe this actor sent to the same channel, so
		// one still on its way is undone too.
		for ch := range c.subscribed {
			ctx.Send(c.cfg.Root, &channel.Unsubscribe{Channel: ch, Sub: c.cfg.Outbox})
		}
		for ch := range c.subscribing {
			if !c.subscribed[ch] {
				ctx.Send(c.cfg.Root, &channel.Unsubscribe{Channel: ch, Sub: c.cfg.Outbox})
			}
		}
		c.subscribed = map[string]bool{}
		clear(c.terminals)
		c.cfg.Outbox.Close()
		ctx.Stop(ctx.Self())
	}
}

func (c *connection) doneSubscribing(ch string) {
	if c.subscribing[ch]--; c.subscribing[ch] <= 0 {
		delete(c.subscribing, ch)
	}
}

func (c *connection) reply(id json.RawMessage, result any) { c.releaseAnswer(id, result) }

func (c *connection) fail(id json.RawMessage, e *messages.Error) {
	c.cfg.Outbox.Send(messages.ErrorFrame(id, e))
}

func (c *connection) handle(ctx actor.Context, data []byte) {
	if c.initialized {
		// A keystroke in the shape clients send it is read in one pass.
		var p dispatchParams
		var a messages.Action
		if decodeKeystroke(data, &p, &a) {
			c.dispatch(ctx, &p, &a)
			return
		}
	}
	msg, perr := messages.ParseInbound(data)
	if perr != nil {
		var id json.RawMessage
		if msg != nil {
			id = msg.ID
		}
		c.fail(id, perr)
		return
	}
	method := *msg.Method
	if !msg.IsRequest() {
		c.notification(ctx, method, msg.Params)
		return
	}
	id := msg.ID
	switch method {
	case "ping":
		c.reply(id, nil)
		return
	case "initialize":
		c.initialize(ctx, id, msg.Params)
		return
	case "reconnect":
		// A handshake of its own: a client whose transport dropped resumes with it
		// on its new connection, without an initialize.
		c.reconnect(ctx, id, msg.Params)
		return
	}
	if !c.initialized {
		c.fail(id, messages.Errorf(messages.CodeInvalidRequest, "Call initialize first: %s needs a handshake", method))
		return
	}
	switch method {
	case "subscribe":
		c.subscribe(ctx, id, msg.Params)
	case "createTerminal":
		c.createTerminal(ctx, id, msg.Params)
	case "disposeTerminal":
		c.disposeTerminal(ctx, id, msg.Params)
	case "createSession":
		c.createSession(ctx, id, msg.Params)
	case "createChat":
		c.createChat(ctx, id, msg.Params)
	case "listSessions":
		c.listSessions(ctx, id)
	case "disposeSession":
		c.disposeSession(ctx, id, msg.Params)
	case "disposeChat":
		c.disposeChat(ctx, id, msg.Params)
	case "vscode/stopBackgroundWork":
		c.stopBackgroundWork(ctx, id, msg.Params)
	case "fetchTurns":
		c.fetchTurns(ctx, id, msg.Params)
	case "unsubscribe", "dispatchAction":
		c.fail(id, messages.Errorf(messages.CodeInvalidRequest, "%s is a notification: send it without an id", method))
	default:
		c.fail(id, messages.Errorf(messages.CodeMethodNotFound, "Method not found: %s", method))
	}
}

// decodeParams reads params into v, answering -32602 with what is wrong.
func decodeParams(raw json.RawMessage, v any) *messages.Error {
	return decodeParamsWith(strictjson.Of(v), raw, v)
}

// Member names of what every keystroke carries, worked out once.
var (
	dispatchMembers = strictjson.Of(dispatchParams{})
	actionMembers   = strictjson.Of(messages.Action{})
)

// decodeParamsWith is decodeParams with v's member names already worked out: the
// names are matched exactly, as JSON-RPC asks, where encoding/json would ignore case.
func decodeParamsWith(members *strictjson.Members, raw json.RawMessage, v any) *messages.Error {
	if len(raw) == 0 || string(raw) == "null" {
		return messages.Errorf(messages.CodeInvalidParams, "Invalid params: params are required")
	}
	if err := members.Check(raw); err != nil {
		return messages.Errorf(messages.CodeInvalidParams, "Invalid params: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return messages.Errorf(messages.CodeInvalidParams, "Invalid params: %s", describeJSONError(err))
	}
	return nil
}

// decodeOnChannel reads params into v whose channel, decoded into *channel, names
// the channel they act on, answering -32602 when either is wrong.
func decodeOnChannel(raw json.RawMessage, v any, channel *string) *messages.Error {
	if e := decodeParams(raw, v); e != nil {
		return e
	}
	if err := limits.CheckURI(*channel); err != nil {
		return messages.Errorf(messages.CodeInvalidParams, "Invalid params: channel: %v", err)
	}
	return nil
}

func describeJSONError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		field := te.Field
		if field == "" {
			field = "params"
		}
		// te.Value is "number 1.5" for a number and the kind ("string") otherwise.
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type.Kind().String()), strings.TrimPrefix(te.Value, "number "))
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64":
		return "a whole number"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number of 0 or more"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}

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
	version, e := c.cfg.Clients.join(clientID, c.cfg.Principal.User, version)
	if e != nil {
		c.fail(id, e)
		return false
	}
	c.initialized, c.clientID, c.version = true, clientID, version
	c.gate = versioning.NewActionGate(version)
	c.cfg.Outbox.Gate(c.gate)
	c.cfg.Outbox.ShowCatalog(c.mayReadSessions())
	ctx.Send(c.cfg.Root, &session.ClientBack{ClientID: clientID})
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

// replayFloor is a replay small enough to send whatever the snapshots weigh.
const replayFloor = 64 << 10

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

type createTerminalParams struct {
	Channel string          `json:"channel"`
	Claim   *messages.Claim `json:"claim"`
	Name    string          `json:"name"`
	Cwd     string          `json:"cwd"`
	Cols    *int            `json:"cols"`
	Rows    *int            `json:"rows"`
	Meta    struct {
		Termhost *termhostCreateMeta `json:"x-termhost"`
		// Node names the cluster node to run the terminal on, as rows name theirs;
		// a host alone ignores it.
		Node string `json:"node"`
	} `json:"_meta"`
}

// termhostCreateMeta is termhost's own extension of createTerminal, under the x-
// prefix AHP reserves for it: a terminal that runs one command and exits, with the
// caller's environment and the two flags the seed names ("One command, or a shell to
// sit in"). A terminal given a command is one a program opens, so a folder that is not
// there fails its start (exit 127) rather than falling back to the home folder.
type termhostCreateMeta struct {
	Command             string            `json:"command"`
	Args                []string          `json:"args"`
	Env                 map[string]string `json:"env"`
	PreventShellHistory bool              `json:"preventShellHistory"`
	NonInteractive      bool              `json:"nonInteractive"`
}

func (c *connection) createTerminal(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createTerminalParams
	if !c.admit(id, auth.GrantTerminalCreate, raw, &p) {
		return
	}
	if err := limits.CheckURI(p.Channel); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: channel must be the new terminal's URI: %v", err))
		return
	}
	// A terminal takes only a terminal's URI: under any other scheme it could stand
	// in for a session's or a chat's channel created later.
	if !limits.IsTerminalURI(p.Channel) {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %q is not a terminal URI (ahp-terminal:/… or agenthost-terminal:/…)", p.Channel))
		return
	}
	if err := limits.CheckTitle("the name", p.Name); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %v", err))
		return
	}
	claim := messages.Claim{Kind: messages.ClaimClient}
	if p.Claim != nil {
		if err := p.Claim.Validate(); err != nil {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: claim: %v", err))
			return
		}
		claim = *p.Claim
	}
	m := &terminal.Create{URI: p.Channel, Claim: claim, Name: p.Name, Cwd: p.Cwd, Node: p.Meta.Node, By: c.cfg.Principal}
	if x := p.Meta.Termhost; x != nil {
		if x.Command == "" && len(x.Args) > 0 {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: _meta.x-termhost.args needs a command"))
			return
		}
		m.Spec = terminal.Spec{Command: x.Command, Args: x.Args, PreventShellHistory: x.PreventShellHistory, NonInteractive: x.NonInteractive, StrictCwd: x.Command != ""}
		for k, v := range x.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %q is not an environment variable name", k))
				return
			}
			m.Spec.Env = append(m.Spec.Env, k+"="+v)
		}
		sort.Strings(m.Spec.Env)
	}
	if p.Cols != nil {
		m.Cols = *p.Cols
	}
	if p.Rows != nil {
		m.Rows = *p.Rows
	}
	if (p.Cols == nil) != (p.Rows == nil) {
		if p.Cols == nil {
			m.Cols = terminal.DefaultCols
		} else {
			m.Rows = terminal.DefaultRows
		}
	}
	f := ctx.RequestFuture(c.cfg.Root, m, channel.RequestTimeout)
	// The root's goroutine, just made runnable, is next on this CPU; this one (the
	// socket's reader) steps aside for it rather than read on first. A client that
	// sent subscribe right behind the create would otherwise have that handled
	// first, and the shell's start (the opening's critical path) would wait for
	// another CPU to wake for the root: 0.15-0.2 ms of an opening, traced.
	runtime.Gosched()
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		r, ok := res.(*terminal.CreateResult)
		switch {
		case err != nil || !ok:
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: the terminal did not start in time"))
		case r.Err != nil:
			c.fail(id, r.Err)
		default:
			c.reply(id, nil)
		}
	})
}

func (c *connection) disposeTerminal(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if !c.admit(id, auth.GrantTerminalDispose, raw, &p) {
		return
	}
	delete(c.subscribed, p.Channel)
	f := ctx.RequestFuture(c.cfg.Root, &terminal.Dispose{URI: p.Channel, By: c.cfg.Principal}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		if err != nil {
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: %v", err))
			return
		}
		c.reply(id, nil)
	})
}

// admit checks a request's grant, then decodes its params into p; it answers the
// request itself (-32009 or -32602) and reports false when the request goes no further.
func (c *connection) admit(id json.RawMessage, grant string, raw json.RawMessage, p any) bool {
	if !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return false
	}
	if e := decodeParams(raw, p); e != nil {
		c.fail(id, e)
		return false
	}
	return true
}

// may is the one grant gate: whether this connection's principal, as the users file
// said when this frame came in, holds grant.
func (c *connection) may(grant string) bool {
	return c.cfg.Principal.Can(grant)
}

// mayReadSessions says whether this connection's person may read sessions: list
// them, and hear the root's notifications of them.
func (c *connection) mayReadSessions() bool { return c.may(auth.ReadGrant("ahp-session:")) }

func (c *connection) refusal(grant string) *messages.Error {
	return messages.Errorf(messages.CodePermissionDenied, "%s", c.cfg.Principal.Refusal(grant))
}

type dispatchParams struct {
	Channel   string          `json:"channel"`
	ClientSeq int64           `json:"clientSeq"`
	Action    json.RawMessage `json:"action"`
}

// recheck reads who this connection's sign-in is now and applies it to what the
// connection already holds: one whose token was revoked, or that may no longer read a
// channel it is subscribed to, is closed with a reason saying which.
func (c *connection) recheck() {
	if c.cfg.Refresh == nil || c.cfg.Close == nil || c.gone || c.closing {
		return
	}
	c.cfg.Principal = c.cfg.Refresh()
	// Refresh is set only for a connection that signed in on its upgrade, so nobody
	// now means its token went. This is not a comparison with the principal before:
	// a frame that came in since the revocation has already made that nobody.
	if !c.cfg.Principal.SignedIn() {
		c.closeFor(delivery.ReasonSignedOut)
		return
	}
	for ch := range c.subscribed {
		if ch != messages.RootURI && !c.may(auth.ReadGrant(ch)) {
			c.closeFor(delivery.ReasonRightsChanged)
			return
		}
	}
	c.cfg.Outbox.ShowCatalog(c.mayReadSessions())
}

// closeFor closes the connection once, for reason; frames that were already read
// are not handled after it.
func (c *connection) closeFor(reason delivery.CloseReason) {
	c.closing = true
	c.cfg.Close(reason)
}

func (c *connection) notification(ctx actor.Context, method string, raw json.RawMessage) {
	switch method {
	case "unsubscribe":
		var p subscribeParams
		if decodeParams(raw, &p) == nil && c.subscribed[p.Channel] {
			delete(c.subscribed, p.Channel)
			delete(c.terminals, p.Channel)
			c.cfg.Outbox.SetLatency(p.Channel, 0)
			ctx.Send(c.cfg.Root, &channel.Unsubscribe{Channel: p.Channel, Sub: c.cfg.Outbox})
		}
	case "dispatchAction":
		if !c.initialized {
			return
		}
		var p dispatchParams
		var a messages.Action
		ok, reason := decodeDispatch(raw, &p, &a)
		if !ok {
			c.cfg.Logger.Debug("dropping a malformed dispatch", "conn", c.clientID)
			return
		}
		if reason != "" {
			origin := messages.Origin{ClientID: c.clientID, ClientSeq: p.ClientSeq}
			c.cfg.Journal.Reject(c.cfg.Outbox, p.Channel, validRaw(p.Action), origin, reason)
			return
		}
		c.dispatch(ctx, &p, &a)
	default:
		// Notifications get no answer, so an unknown one is only logged.
		c.cfg.Logger.Debug("unknown notification", "method", method)
	}
}

// dispatch routes a decoded client action to its channel, or rejects it.
func (c *connection) dispatch(ctx actor.Context, p *dispatchParams, a *messages.Action) {
	origin := messages.Origin{ClientID: c.clientID, ClientSeq: p.ClientSeq}
	if grant := auth.ActionGrant(a.Type); grant != "" && !c.may(grant) {
		c.cfg.Journal.Reject(c.cfg.Outbox, p.Channel, p.Action, origin, c.cfg.Principal.Refusal(grant))
		return
	}
	if a.Title != nil {
		if err := limits.CheckTitle("the title", *a.Title); err != nil {
			c.cfg.Journal.Reject(c.cfg.Outbox, p.Channel, p.Action, origin, err.Error())
			return
		}
	}
	echotrace.Mark("conn dispatch")
	d := &channel.Dispatch{Channel: p.Channel, Action: a, Raw: p.Action, Origin: origin, Sub: c.cfg.Outbox, By: c.cfg.Principal.User, Principal: c.cfg.Principal}
	if !strings.HasPrefix(a.Type, "terminal/") {
		ctx.Send(c.cfg.Root, d)
		return
	}
	if pid := c.terminals[p.Channel]; pid != nil {
		if _, alive := ctx.ActorSystem().ProcessRegistry.Get(pid); alive {
			ctx.Send(pid, d)
			return
		}
		// Disposed: the host says what becomes of the dispatch now.
		delete(c.terminals, p.Channel)
	}
	if c.subscribing[p.Channel] > 0 {
		c.viaHost[p.Channel] = true
	}
	ctx.Send(c.cfg.Root, d)
}

// decodeDispatch reads a dispatchAction's params into p and its action into a. It
// reports false for params too malformed to answer (no channel to echo a rejection
// on), and a reason for an action to be rejected.
func decodeDispatch(raw json.RawMessage, p *dispatchParams, a *messages.Action) (ok bool, reason string) {
	if decodeParamsWith(dispatchMembers, raw, p) != nil || limits.CheckURI(p.Channel) != nil || len(p.Action) == 0 {
		return false, ""
	}
	err := actionMembers.Check(p.Action)
	if err == nil {
		err = json.Unmarshal(p.Action, a)
	}
	switch {
	case err != nil:
		return true, "the action is malformed: " + describeJSONError(err)
	case a.Type == "":
		return true, "the action is not an object with a type"
	}
	return true, ""
}

func validRaw(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return raw
	}
	return json.RawMessage(`null`)
}

// createSessionParams are createSession's: Provider names the agent behind the
// session, one of root state's `agents` ("" for none: its turns are `!` commands).
type createSessionParams struct {
	Channel            string   `json:"channel"`
	WorkingDirectories []string `json:"workingDirectories"`
	Provider           string   `json:"provider"`
	Meta               struct {
		// Node names the cluster node to run the session (its terminals and agent)
		// on, as createTerminal's does; a host alone ignores it.
		Node string `json:"node"`
	} `json:"_meta"`
}

func (c *connection) createSession(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createSessionParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	if err := limits.CheckURI(p.Channel); err != nil || !strings.HasPrefix(p.Channel, "ahp-session:") {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: channel must be an ahp-session: URI"))
		return
	}
	c.askSession(ctx, id, &session.Create{URI: p.Channel, WorkingDirectories: p.WorkingDirectories, Agent: p.Provider, By: c.cfg.Principal.User,
		Node: p.Meta.Node, Anywhere: true, Who: c.cfg.Principal})
}

type createChatParams struct {
	Channel string `json:"channel"`
	Chat    string `json:"chat"`
}

func (c *connection) createChat(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createChatParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	for _, uri := range []string{p.Channel, p.Chat} {
		if uri == "" {
			continue
		}
		if err := limits.CheckURI(uri); err != nil {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %v", err))
			return
		}
	}
	c.askSession(ctx, id, &session.CreateChat{Session: p.Channel, Chat: p.Chat, Who: c.cfg.Principal})
}

func (c *connection) disposeSession(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	c.askSession(ctx, id, &session.Dispose{URI: p.Channel, Who: c.cfg.Principal})
}

// askSession sends a session request to the host and answers with its result: null,
// or {chat} for a create.
func (c *connection) askSession(ctx actor.Context, id json.RawMessage, m any) {
	c.askSessionAnswering(ctx, id, m, nil)
}

// askSessionAnswering is askSession whose success, with no chat to name, answers done
// (a command whose result the schema makes an object answers {}, not null).
func (c *connection) askSessionAnswering(ctx actor.Context, id json.RawMessage, m any, done any) {
	f := ctx.RequestFuture(c.cfg.Root, m, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		r, ok := res.(*session.Result)
		switch {
		case err != nil || !ok:
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: no answer from the session"))
		case r.Err != nil:
			c.fail(id, r.Err)
		case r.Chat != "":
			c.reply(id, map[string]any{"chat": r.Chat})
		default:
			c.reply(id, done)
		}
	})
}

func (c *connection) listSessions(ctx actor.Context, id json.RawMessage) {
	// The list shows sessions' titles (a session of commands is titled by its first
	// command), so it is read with the grant that reads a session.
	if grant := auth.ReadGrant("ahp-session:"); !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return
	}
	f := ctx.RequestFuture(c.cfg.Root, &session.List{}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		items, ok := res.([]map[string]any)
		if err != nil || !ok {
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: no session list"))
			return
		}
		c.reply(id, map[string]any{"items": items})
	})
}

// disposeChat ends a chat: its channel is the chat's URI.
func (c *connection) disposeChat(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	if !c.cfg.Principal.Can(auth.GrantChatSend) {
		c.fail(id, c.refusal(auth.GrantChatSend))
		return
	}
	var p subscribeParams
	if e := decodeParams(raw, &p); e != nil {
		c.fail(id, e)
		return
	}
	c.askSession(ctx, id, &session.DisposeChat{Chat: p.Channel, Who: c.cfg.Principal})
}

// stopBackgroundWorkParams are vscode/stopBackgroundWork's: the chat (or, as every
// other method names it, the channel) and the row's id. VS Code's own shape is not
// published (PROTOCOL.md 8), so members it may send beside them are ignored.
type stopBackgroundWorkParams struct {
	Chat    string `json:"chat"`
	Channel string `json:"channel"`
	ID      string `json:"id"`
}

// stopBackgroundWork stops a row of a chat's backgroundWork: the same ^C a person at
// the terminal would type, so it needs terminal:input. It answers null once the stop
// went to the work's owner; the row goes when the work ends.
func (c *connection) stopBackgroundWork(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p stopBackgroundWorkParams
	if !c.admit(id, auth.GrantTerminalInput, raw, &p) {
		return
	}
	chat := p.Chat
	switch {
	case chat == "":
		chat = p.Channel
	case p.Channel != "" && p.Channel != chat:
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: chat and channel name different chats"))
		return
	}
	if chat == "" || p.ID == "" {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: the chat's URI (chat) and the background work's id (id) are required"))
		return
	}
	if err := limits.CheckURI(chat); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: chat: %v", err))
		return
	}
	c.askSession(ctx, id, &session.StopBackgroundWork{Chat: chat, ID: p.ID, Who: c.cfg.Principal})
}

type fetchTurnsParams struct {
	Channel string `json:"channel"`
	Cursor  string `json:"cursor"`
}

// fetchTurns asks a chat to page its older turns into its state: the session
// dispatches chat/turnsLoaded to the chat's subscribers, then this answers {}.
func (c *connection) fetchTurns(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p fetchTurnsParams
	if e := decodeOnChannel(raw, &p, &p.Channel); e != nil {
		c.fail(id, e)
		return
	}
	if grant := auth.ReadGrant(p.Channel); !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return
	}
	c.askSessionAnswering(ctx, id, &session.FetchTurns{Chat: p.Channel, Cursor: p.Cursor, Who: c.cfg.Principal}, struct{}{})
}
