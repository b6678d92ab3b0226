package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
)

// The node-to-node messages. Each is a pointer and never changed after it is sent.
// protoactor-go's remote asks a message that is not protobuf to turn itself into one
// (remote.RootSerializable); these become a BytesValue holding a kind byte and the
// message's JSON (a frame: its gen and its bytes as they are). The receiving node is
// handed the BytesValue, and Decode turns it back into the message; on the same node
// the message arrives as it was sent.

// hello introduces a node to another, with its rows and load; the other answers with
// its own hello (Reply set) when it did not know this node yet. Addr and Instance say
// which node and which run of it: a node restarted on the same address is a new
// instance, and the old one's terminals are gone.
type hello struct {
	Addr     string                  `json:"addr"`
	Instance string                  `json:"instance"`
	Name     string                  `json:"name"`
	Rows     []messages.TerminalInfo `json:"rows"`
	Chats    []string                `json:"chats,omitempty"`
	Sessions []map[string]any        `json:"sessions,omitempty"`
	Load     Load                    `json:"load"`
	Reply    bool                    `json:"reply,omitempty"`
}

// rows is a node's own terminals (its sessions' chats and summaries too) and load, sent to every peer when they change.
type rows struct {
	Addr     string                  `json:"addr"`
	Instance string                  `json:"instance"`
	Rows     []messages.TerminalInfo `json:"rows"`
	Chats    []string                `json:"chats,omitempty"`
	Sessions []map[string]any        `json:"sessions,omitempty"`
	Load     Load                    `json:"load"`
}

// loadReport is a node's load alone, sent now and then: the load average moves
// without any row changing.
type loadReport struct {
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

// remoteSubscribe asks the owner's gateway to subscribe Proxy to URI. Gen numbers the
// proxy's subscriptions, so what an earlier one still sends is told apart. Turns is
// the view of a chat's first subscriber there (channel.Subscribe.Turns): nil asks for
// every turn the chat keeps.
type remoteSubscribe struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
	Turns *int       `json:"turns,omitempty"`
}

// remoteUnsubscribe ends the subscription Gen of Proxy on URI.
type remoteUnsubscribe struct {
	URI   string     `json:"uri"`
	Proxy *actor.PID `json:"proxy"`
	Gen   uint64     `json:"gen"`
}

// subscribed answers remoteSubscribe, to the proxy, before any frame of Gen: the
// terminal's state (TerminalState's JSON), or the error for the client.
type subscribed struct {
	Gen   uint64          `json:"gen"`
	State json.RawMessage `json:"state,omitempty"`
	Err   *messages.Error `json:"err,omitempty"`
}

// frame is what the owner's terminal delivered to subscription Gen, one frame or
// several in order, each as it went out there: the proxy stamps each again with its
// own node's serverSeq. Several go as one when the echo of a client's action waited
// for the output it caused, or when output came faster than the endpoint writer sent
// it (see remoteSub).
//
// Unlike every other node message, a frame with a gatherer (from set) is changed
// after it is sent: the gatherer adds frames to it until it is taken, by the
// endpoint writer serializing it (or, on the same node, by the proxy reading it).
type frame struct {
	Gen    uint64
	Frames [][]byte
	from   gatherer
}

// gatherer goes on adding frames to a frame message it sent (remoteSub), under a
// lock of its own, until the message is taken.
type gatherer interface {
	// taken ends the gathering into m and gives m's frames: nothing joins m after.
	taken(m *frame) [][]byte
}

// take ends the frame's gathering and gives its frames.
func (m *frame) take() [][]byte {
	if m.from != nil {
		return m.from.taken(m)
	}
	return m.Frames
}

// rejected is the owner's refusal of a dispatch, for the one local subscriber (Key)
// that sent it.
type rejected struct {
	Key   uint64 `json:"key"`
	Frame []byte `json:"frame"`
}

// remoteDispatch is a client's dispatchAction on a remote terminal, as the entry node
// admitted it: Action is the client's own bytes, Key names the sender for a refusal
// (sent to Proxy), By the signed-in user.
type remoteDispatch struct {
	URI    string          `json:"uri"`
	Action json.RawMessage `json:"action"`
	Origin messages.Origin `json:"origin"`
	By     string          `json:"by"`
	Proxy  *actor.PID      `json:"proxy"`
	Key    uint64          `json:"key"`
	Who    principal       `json:"who"`
}

// principal is who a client is, as the entry node signed them in and checked them:
// the node that acts checks the grant again with it.
type principal struct {
	User   string   `json:"user,omitempty"`
	Role   string   `json:"role,omitempty"`
	Grants []string `json:"grants,omitempty"`
}

func carry(p auth.Principal) principal {
	return principal{User: p.User, Role: p.Role, Grants: p.Grants()}
}

// carryFor is p with only the one grant an action needs, where p holds it: what a
// keystroke carries, so that it is not a list of every grant.
func carryFor(p auth.Principal, grant string) principal {
	c := principal{User: p.User, Role: p.Role}
	if grant != "" && p.Can(grant) {
		c.Grants = []string{grant}
	}
	return c
}

func (p principal) principal() auth.Principal { return auth.Carried(p.User, p.Role, p.Grants) }

// remoteCreate is createTerminal placed on the receiving node. The answer is a
// *createResult.
type remoteCreate struct {
	URI   string         `json:"uri"`
	Claim messages.Claim `json:"claim"`
	Name  string         `json:"name,omitempty"`
	Cwd   string         `json:"cwd,omitempty"`
	Cols  int            `json:"cols,omitempty"`
	Rows  int            `json:"rows,omitempty"`
	Spec  wireSpec       `json:"spec"`
	Who   principal      `json:"who"`
}

// wireSpec is terminal.Spec as it travels.
type wireSpec struct {
	Shell               string   `json:"shell,omitempty"`
	Command             string   `json:"command,omitempty"`
	Args                []string `json:"args,omitempty"`
	Env                 []string `json:"env,omitempty"`
	PreventShellHistory bool     `json:"preventShellHistory,omitempty"`
	NonInteractive      bool     `json:"nonInteractive,omitempty"`
	StrictCwd           bool     `json:"strictCwd,omitempty"`
}

// createResult answers remoteCreate.
type createResult struct {
	Err       *messages.Error `json:"err,omitempty"`
	IsPty     bool            `json:"isPty,omitempty"`
	Detection bool            `json:"detection,omitempty"`
}

// remoteDispose is disposeTerminal on the owner. The answer is a *disposeResult.
type remoteDispose struct {
	URI string    `json:"uri"`
	Who principal `json:"who"`
}

// disposeResult answers remoteDispose.
type disposeResult struct {
	Err *messages.Error `json:"err,omitempty"`
}

// ping asks a node actor for a pong: one round trip between nodes, as the bench
// measures it.
type ping struct{}

// pong answers ping.
type pong struct{}

// Kinds: the first byte of every encoded message.
const (
	kindHello byte = iota + 1
	kindRows
	kindLoad
	kindSubscribe
	kindUnsubscribe
	kindSubscribed
	kindFrame
	kindRejected
	kindDispatch
	kindCreate
	kindCreateResult
	kindDispose
	kindDisposeResult
	kindPing
	kindPong
)

// packed is what a node-to-node message becomes on its way out: a BytesValue (what is
// marshalled) that protoactor's remote may call Deserialize on.
type packed struct{ *wrapperspb.BytesValue }

func (p packed) Deserialize() (remote.RootSerializable, error) {
	m, err := decode(p.Value)
	if err != nil {
		return nil, err
	}
	s, ok := m.(remote.RootSerializable)
	if !ok {
		return nil, fmt.Errorf("cluster: %T is not a node message", m)
	}
	return s, nil
}

func pack(kind byte, v any) (remote.RootSerialized, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return packed{wrapperspb.Bytes(append([]byte{kind}, b...))}, nil
}

func (m *hello) Serialize() (remote.RootSerialized, error)           { return pack(kindHello, m) }
func (m *rows) Serialize() (remote.RootSerialized, error)            { return pack(kindRows, m) }
func (m *loadReport) Serialize() (remote.RootSerialized, error)      { return pack(kindLoad, m) }
func (m *remoteSubscribe) Serialize() (remote.RootSerialized, error) { return pack(kindSubscribe, m) }
func (m *remoteUnsubscribe) Serialize() (remote.RootSerialized, error) {
	return pack(kindUnsubscribe, m)
}
func (m *subscribed) Serialize() (remote.RootSerialized, error)    { return pack(kindSubscribed, m) }
func (m *rejected) Serialize() (remote.RootSerialized, error)      { return pack(kindRejected, m) }
func (m *remoteCreate) Serialize() (remote.RootSerialized, error)  { return pack(kindCreate, m) }
func (m *createResult) Serialize() (remote.RootSerialized, error)  { return pack(kindCreateResult, m) }
func (m *remoteDispose) Serialize() (remote.RootSerialized, error) { return pack(kindDispose, m) }
func (m *disposeResult) Serialize() (remote.RootSerialized, error) { return pack(kindDisposeResult, m) }
func (m *ping) Serialize() (remote.RootSerialized, error)          { return pack(kindPing, m) }
func (m *pong) Serialize() (remote.RootSerialized, error)          { return pack(kindPong, m) }

// Serialize writes a frame without JSON: it is the hot path, every chunk of output.
// Its gen, how many frames, then each frame length-prefixed (uvarints): cut short
// anywhere, it is an error, not fewer frames.
func (m *frame) Serialize() (remote.RootSerialized, error) {
	echotrace.Mark("ew serialize frame")
	frames := m.take()
	n := 1 + 8 + binary.MaxVarintLen64
	for _, f := range frames {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := make([]byte, 9, n)
	b[0] = kindFrame
	binary.BigEndian.PutUint64(b[1:9], m.Gen)
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return packed{wrapperspb.Bytes(b)}, nil
}

func decodeFrame(b []byte) (*frame, error) {
	if len(b) < 8 {
		return nil, errShort
	}
	m := &frame{Gen: binary.BigEndian.Uint64(b[:8])}
	r := &reader{b: b[8:]}
	count := r.uvarint()
	if count > uint64(len(r.b)) {
		r.err = true
	}
	if !r.err {
		m.Frames = make([][]byte, 0, count)
	}
	for i := uint64(0); i < count && !r.err; i++ {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.err = true
			break
		}
		m.Frames = append(m.Frames, r.b[:n:n])
		r.b = r.b[n:]
	}
	if r.err || len(r.b) > 0 || len(m.Frames) == 0 {
		return nil, errors.New("cluster: a frame from another node could not be read")
	}
	return m, nil
}

// Serialize writes a dispatch without JSON, as a frame is: every keystroke to a
// terminal on another node is one. The fields in order, strings and the grants
// length-prefixed (uvarint), the action's bytes last as they are.
func (m *remoteDispatch) Serialize() (remote.RootSerialized, error) {
	echotrace.Mark("ew serialize dispatch")
	n := 1 + 2*binary.MaxVarintLen64 + len(m.URI) + len(m.Origin.ClientID) + len(m.By) + len(m.Who.User) + len(m.Who.Role) + len(m.Action) + 64
	var proxyAddr, proxyID string
	if m.Proxy != nil {
		proxyAddr, proxyID = m.Proxy.Address, m.Proxy.Id
	}
	n += len(proxyAddr) + len(proxyID)
	for _, g := range m.Who.Grants {
		n += len(g) + binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	b = append(b, kindDispatch)
	b = binary.AppendUvarint(b, m.Key)
	b = binary.AppendVarint(b, m.Origin.ClientSeq)
	for _, s := range []string{m.URI, m.Origin.ClientID, m.By, proxyAddr, proxyID, m.Who.User, m.Who.Role} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Who.Grants)))
	for _, g := range m.Who.Grants {
		b = appendString(b, g)
	}
	b = append(b, m.Action...)
	return packed{wrapperspb.Bytes(b)}, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader reads what Serialize wrote; the first failure sticks.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func decodeDispatch(b []byte) (*remoteDispatch, error) {
	r := &reader{b: b}
	m := &remoteDispatch{Key: r.uvarint()}
	m.Origin.ClientSeq = r.varint()
	m.URI, m.Origin.ClientID, m.By = r.string(), r.string(), r.string()
	addr, id := r.string(), r.string()
	m.Who.User, m.Who.Role = r.string(), r.string()
	grants := r.uvarint()
	if grants > uint64(len(r.b)) {
		r.err = true
	}
	for i := uint64(0); i < grants && !r.err; i++ {
		m.Who.Grants = append(m.Who.Grants, r.string())
	}
	if r.err {
		return nil, errors.New("cluster: a dispatch from another node could not be read")
	}
	if id != "" {
		m.Proxy = actor.NewPID(addr, id)
	}
	m.Action = json.RawMessage(r.b)
	return m, nil
}

// Decode is msg as it was sent: a node message that came from another node arrives
// as a BytesValue and is decoded; anything else is returned as it is.
func Decode(msg any) any {
	b, ok := msg.(*wrapperspb.BytesValue)
	if !ok {
		return msg
	}
	m, err := decode(b.Value)
	if err != nil {
		return err
	}
	return m
}

var errShort = errors.New("cluster: a node message too short to read")

func decode(b []byte) (any, error) {
	if len(b) == 0 {
		return nil, errShort
	}
	var v any
	switch b[0] {
	case kindFrame:
		return decodeFrame(b[1:])
	case kindDispatch:
		return decodeDispatch(b[1:])
	case kindHello:
		v = &hello{}
	case kindRows:
		v = &rows{}
	case kindLoad:
		v = &loadReport{}
	case kindSubscribe:
		v = &remoteSubscribe{}
	case kindUnsubscribe:
		v = &remoteUnsubscribe{}
	case kindSubscribed:
		v = &subscribed{}
	case kindRejected:
		v = &rejected{}
	case kindCreate:
		v = &remoteCreate{}
	case kindCreateResult:
		v = &createResult{}
	case kindDispose:
		v = &remoteDispose{}
	case kindDisposeResult:
		v = &disposeResult{}
	case kindPing:
		v = &ping{}
	case kindPong:
		v = &pong{}
	default:
		if v = usersMessage(b[0]); v == nil {
			v = sessionMessage(b[0])
		}
		if v == nil {
			return nil, fmt.Errorf("cluster: unknown node message kind %d", b[0])
		}
	}
	if err := json.Unmarshal(b[1:], v); err != nil {
		return nil, fmt.Errorf("cluster: decoding a node message: %w", err)
	}
	return v, nil
}
