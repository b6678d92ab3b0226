package ahp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
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
		if c.initialized {
			// Its sessions keep its presence for a grace, for it to come back.
			root, id := c.cfg.Root, c.clientID
			c.cfg.Clients.leave(id, func() { ctx.Send(root, &session.ClientLeft{ClientID: id}) })
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
