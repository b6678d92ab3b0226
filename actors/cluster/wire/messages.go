package wire

import (
	"bytes"
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// Membership: what a node tells the others of itself.

// Hello introduces a node to another, with its rows and load; the other answers with
// its own hello (Reply set) when it did not know this node yet. Addr and Instance say
// which node and which run of it: a node restarted on the same address is a new
// instance, and the old one's terminals are gone.
type Hello struct {
	Addr     string                  `json:"addr"`
	Instance string                  `json:"instance"`
	Name     string                  `json:"name"`
	Rows     []messages.TerminalInfo `json:"rows"`
	Chats    []string                `json:"chats,omitempty"`
	Sessions []map[string]any        `json:"sessions,omitempty"`
	Load     Load                    `json:"load"`
	Reply    bool                    `json:"reply,omitempty"`
}

// Rows is a node's own terminals (its sessions' chats and summaries too) and load, sent to every peer when they change.
type Rows struct {
	Addr     string                  `json:"addr"`
	Instance string                  `json:"instance"`
	Rows     []messages.TerminalInfo `json:"rows"`
	Chats    []string                `json:"chats,omitempty"`
	Sessions []map[string]any        `json:"sessions,omitempty"`
	Load     Load                    `json:"load"`
}

// LoadReport is a node's load alone, sent now and then: the load average moves
// without any row changing.
type LoadReport struct {
	Addr     string `json:"addr"`
	Instance string `json:"instance"`
	Load     Load   `json:"load"`
}

// Load is what placement compares nodes by: fewest terminals first, then the lower
// one-minute load average.
type Load struct {
	Terminals int     `json:"terminals"`
	Average   float64 `json:"average"`
	// Draining says the node takes no new terminals.
	Draining bool `json:"draining,omitempty"`
}

// Ping asks a node actor for a Pong: one round trip between nodes, as the bench
// measures it.
type Ping struct{}

// Pong answers Ping.
type Pong struct{}

// A channel another node holds: its subscription, its frames (Frame, in wire.go),
// the dispatches sent to it (Dispatch) and their refusals.

// Subscribe asks the owner's gateway to subscribe Proxy to URI. Gen numbers the
// proxy's subscriptions, so what an earlier one still sends is told apart. Turns is
// the view of a chat's first subscriber there (channel.Subscribe.Turns): nil asks for
// every turn the chat keeps.
type Subscribe struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
	Turns *int       `json:"turns,omitempty"`
}

// Unsubscribe ends the subscription Gen of Proxy on URI.
type Unsubscribe struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
}

// Subscribed answers Subscribe, to the proxy, before any frame of Gen: the
// channel's state (TerminalState's JSON, or a session's or chat's), or the error for
// the client.
type Subscribed struct {
	Gen   uint64          `json:"gen"`
	State json.RawMessage `json:"state,omitempty"`
	Err   *messages.Error `json:"err,omitempty"`
}

// Rejected is the owner's refusal of a dispatch, for the one local subscriber (Key)
// that sent it.
type Rejected struct {
	Key   uint64 `json:"key"`
	Frame []byte `json:"frame"`
}

// Dispatch is a client's dispatchAction on a remote channel, as the entry node
// admitted it: Action is the client's own bytes, Key names the sender for a refusal
// (sent to Proxy), By the signed-in user. It is written in a binary layout of its
// own (wire.go).
type Dispatch struct {
	URI    string          `json:"uri"`
	Action json.RawMessage `json:"action"`
	Origin messages.Origin `json:"origin"`
	By     string          `json:"by"`
	Proxy  *actor.PID      `json:"proxy"`
	Key    uint64          `json:"key"`
	Who    Principal       `json:"who"`
}

// Principal is who a client is, as the entry node signed them in and checked them:
// the node that acts checks the grant again with it.
type Principal struct {
	User   string   `json:"user,omitempty"`
	Role   string   `json:"role,omitempty"`
	Grants []string `json:"grants,omitempty"`
}

// Carry is p as it travels.
func Carry(p auth.Principal) Principal {
	return Principal{User: p.User, Role: p.Role, Grants: p.Grants()}
}

// CarryFor is p with only the one grant an action needs, where p holds it: what a
// keystroke carries, so that it is not a list of every grant.
func CarryFor(p auth.Principal, grant string) Principal {
	c := Principal{User: p.User, Role: p.Role}
	if grant != "" && p.Can(grant) {
		c.Grants = []string{grant}
	}
	return c
}

// Auth is the principal p carries, as the acting node checks it: grants this node
// does not know are dropped (auth.Carried).
func (p Principal) Auth() auth.Principal { return auth.Carried(p.User, p.Role, p.Grants) }

// Create is createTerminal placed on the receiving node. The answer is a
// *CreateResult.
type Create struct {
	URI   string         `json:"uri"`
	Claim messages.Claim `json:"claim"`
	Name  string         `json:"name,omitempty"`
	Cwd   string         `json:"cwd,omitempty"`
	Cols  int            `json:"cols,omitempty"`
	Rows  int            `json:"rows,omitempty"`
	Spec  Spec           `json:"spec"`
	Who   Principal      `json:"who"`
}

// Spec is terminal.Spec as it travels: the same fields, so either converts to the
// other.
type Spec struct {
	Shell               string   `json:"shell,omitempty"`
	Command             string   `json:"command,omitempty"`
	Args                []string `json:"args,omitempty"`
	Env                 []string `json:"env,omitempty"`
	PreventShellHistory bool     `json:"preventShellHistory,omitempty"`
	NonInteractive      bool     `json:"nonInteractive,omitempty"`
	StrictCwd           bool     `json:"strictCwd,omitempty"`
}

// CreateResult answers Create.
type CreateResult struct {
	Err       *messages.Error `json:"err,omitempty"`
	IsPty     bool            `json:"isPty,omitempty"`
	Detection bool            `json:"detection,omitempty"`
}

// Dispose is disposeTerminal on the owner. The answer is a *DisposeResult.
type Dispose struct {
	URI string    `json:"uri"`
	Who Principal `json:"who"`
}

// DisposeResult answers Dispose.
type DisposeResult struct {
	Err *messages.Error `json:"err,omitempty"`
}

// Users: what the users actors send one another (package users).

// UsersDoc is a node's copy of its users file, as auth.Store.Export gives it: users,
// roles, versions and token hashes (never a token). From is the sender's address.
type UsersDoc struct {
	From string          `json:"from"`
	Doc  json.RawMessage `json:"doc"`
}

// UsersPull asks a node for its UsersDoc in answer.
type UsersPull struct{}

// UsersDigest is a node's digest of its users (auth.Store.Digest).
type UsersDigest struct {
	From string `json:"from"`
	Sum  string `json:"sum"`
}

// Sessions across nodes (package cluster, sessions.go).

// SessionRequest is a session request of a client of another node, for the node that
// holds (or is to hold) the session. Op says which; URI is the session (OpCreate,
// OpDispose, OpCreateChat) or the chat (the others). The answer is a
// *SessionResult.
type SessionRequest struct {
	Op                 string    `json:"op"`
	URI                string    `json:"uri"`
	Chat               string    `json:"chat,omitempty"`
	ID                 string    `json:"id,omitempty"`
	Cursor             string    `json:"cursor,omitempty"`
	WorkingDirectories []string  `json:"workingDirectories,omitempty"`
	Agent              string    `json:"agent,omitempty"`
	By                 string    `json:"by,omitempty"`
	Who                Principal `json:"who"`
}

// The session requests' ops.
const (
	OpCreate      = "create"
	OpDispose     = "dispose"
	OpCreateChat  = "createChat"
	OpDisposeChat = "disposeChat"
	OpStopWork    = "stopBackgroundWork"
	OpFetchTurns  = "fetchTurns"
)

// SessionResult answers SessionRequest, as session.Result does.
type SessionResult struct {
	Err  *messages.Error `json:"err,omitempty"`
	Chat string          `json:"chat,omitempty"`
}

// Presence is a client's last connection to a node gone (Left), or one back: every
// node's sessions hear of it, since the client may be active in any of them.
type Presence struct {
	ClientID string `json:"clientId"`
	Left     bool   `json:"left,omitempty"`
}

// ShowTurns asks the owner of the chat that Proxy's subscription Gen reads to hold
// at least Turns of its newest turns (every one it keeps when nil).
type ShowTurns struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
	Round uint64     `json:"round"`
	Turns *int       `json:"turns,omitempty"`
}

// TurnsShown answers ShowTurns through the subscription, behind the frames the chat
// sent it meanwhile.
type TurnsShown struct {
	Gen   uint64          `json:"gen"`
	Round uint64          `json:"round"`
	Err   *messages.Error `json:"err,omitempty"`
}

// The owner dates a chat's every change as it sends it, and no action carries the
// date: the owner's gateway sends it after the change's frame as a frame of its own,
// {"x-modifiedAt":"…"}, which the proxy folds into its copy of the chat and hands
// nobody. A snapshot served on another node then has the owner's modifiedAt, not the
// time the last frame arrived there.
var datedHead = []byte(`{"x-modifiedAt":`)

// DatedFrame is the frame that carries a chat change's modifiedAt.
func DatedFrame(modifiedAt string) []byte {
	b, _ := json.Marshal(modifiedAt)
	return append(append(append([]byte(nil), datedHead...), b...), '}')
}

// Dated reads a DatedFrame; false for any other frame.
func Dated(f []byte) (string, bool) {
	if !bytes.HasPrefix(f, datedHead) || len(f) < len(datedHead)+1 {
		return "", false
	}
	var at string
	if json.Unmarshal(f[len(datedHead):len(f)-1], &at) != nil {
		return "", false
	}
	return at, true
}

// Reservations of a URI at its home node (package cluster, reserve.go).

// Reserve asks the home node for URI on behalf of the node at Addr (its Instance);
// the answer is a *ReserveAnswer.
type Reserve struct {
	URI      string `json:"uri"`
	Addr     string `json:"addr"`
	Instance string `json:"instance"`
}

// ReserveAnswer says whether another node holds the URI.
type ReserveAnswer struct {
	Taken bool `json:"taken,omitempty"`
}

// ReserveRelease gives a URI's reservation back: its channel is gone.
type ReserveRelease struct {
	URI      string `json:"uri"`
	Addr     string `json:"addr"`
	Instance string `json:"instance"`
}

func (m *Hello) Serialize() (remote.RootSerialized, error)         { return pack(kindHello, m) }
func (m *Rows) Serialize() (remote.RootSerialized, error)          { return pack(kindRows, m) }
func (m *LoadReport) Serialize() (remote.RootSerialized, error)    { return pack(kindLoad, m) }
func (m *Ping) Serialize() (remote.RootSerialized, error)          { return pack(kindPing, m) }
func (m *Pong) Serialize() (remote.RootSerialized, error)          { return pack(kindPong, m) }
func (m *Subscribe) Serialize() (remote.RootSerialized, error)     { return pack(kindSubscribe, m) }
func (m *Unsubscribe) Serialize() (remote.RootSerialized, error)   { return pack(kindUnsubscribe, m) }
func (m *Subscribed) Serialize() (remote.RootSerialized, error)    { return pack(kindSubscribed, m) }
func (m *Rejected) Serialize() (remote.RootSerialized, error)      { return pack(kindRejected, m) }
func (m *Create) Serialize() (remote.RootSerialized, error)        { return pack(kindCreate, m) }
func (m *CreateResult) Serialize() (remote.RootSerialized, error)  { return pack(kindCreateResult, m) }
func (m *Dispose) Serialize() (remote.RootSerialized, error)       { return pack(kindDispose, m) }
func (m *DisposeResult) Serialize() (remote.RootSerialized, error) { return pack(kindDisposeResult, m) }
func (m *UsersDoc) Serialize() (remote.RootSerialized, error)      { return pack(kindUsersDoc, m) }
func (m *UsersPull) Serialize() (remote.RootSerialized, error)     { return pack(kindUsersPull, m) }
func (m *UsersDigest) Serialize() (remote.RootSerialized, error)   { return pack(kindUsersDigest, m) }
func (m *SessionRequest) Serialize() (remote.RootSerialized, error) {
	return pack(kindSessionRequest, m)
}
func (m *SessionResult) Serialize() (remote.RootSerialized, error) { return pack(kindSessionResult, m) }
func (m *Presence) Serialize() (remote.RootSerialized, error)      { return pack(kindPresence, m) }
func (m *ShowTurns) Serialize() (remote.RootSerialized, error)     { return pack(kindShowTurns, m) }
func (m *TurnsShown) Serialize() (remote.RootSerialized, error)    { return pack(kindTurnsShown, m) }
func (m *Reserve) Serialize() (remote.RootSerialized, error)       { return pack(kindReserve, m) }
func (m *ReserveAnswer) Serialize() (remote.RootSerialized, error) { return pack(kindReserveAnswer, m) }
func (m *ReserveRelease) Serialize() (remote.RootSerialized, error) {
	return pack(kindReserveRelease, m)
}
