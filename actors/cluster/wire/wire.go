package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/internal/echotrace"
)

// Kinds: the first byte of every encoded message. Each group counts from a base of
// its own, so one grows without moving another's.
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

// The users' messages' kinds.
const (
	kindUsersDoc byte = 64 + iota
	kindUsersPull
	kindUsersDigest
)

// The sessions' (and reservations') messages' kinds.
const (
	kindSessionRequest byte = 96 + iota
	kindSessionResult
	kindPresence
	kindReserve
	kindReserveAnswer
	kindReserveRelease
	kindShowTurns
	kindTurnsShown
)

// empty is an empty message of a kind written as JSON, or nil for another kind.
func empty(kind byte) any {
	switch kind {
	case kindHello:
		return &Hello{}
	case kindRows:
		return &Rows{}
	case kindLoad:
		return &LoadReport{}
	case kindSubscribe:
		return &Subscribe{}
	case kindUnsubscribe:
		return &Unsubscribe{}
	case kindSubscribed:
		return &Subscribed{}
	case kindRejected:
		return &Rejected{}
	case kindCreate:
		return &Create{}
	case kindCreateResult:
		return &CreateResult{}
	case kindDispose:
		return &Dispose{}
	case kindDisposeResult:
		return &DisposeResult{}
	case kindPing:
		return &Ping{}
	case kindPong:
		return &Pong{}
	case kindUsersDoc:
		return &UsersDoc{}
	case kindUsersPull:
		return &UsersPull{}
	case kindUsersDigest:
		return &UsersDigest{}
	case kindSessionRequest:
		return &SessionRequest{}
	case kindSessionResult:
		return &SessionResult{}
	case kindPresence:
		return &Presence{}
	case kindReserve:
		return &Reserve{}
	case kindReserveAnswer:
		return &ReserveAnswer{}
	case kindReserveRelease:
		return &ReserveRelease{}
	case kindShowTurns:
		return &ShowTurns{}
	case kindTurnsShown:
		return &TurnsShown{}
	}
	return nil
}

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

// pack writes a message as JSON after its kind.
func pack(kind byte, v any) (remote.RootSerialized, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return packed{wrapperspb.Bytes(append([]byte{kind}, b...))}, nil
}

// Decode is msg as it was sent: a node message that came from another node arrives
// as a BytesValue and is decoded (to an error when it cannot be read); anything else
// is returned as it is.
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
	switch b[0] {
	case kindFrame:
		return decodeFrame(b[1:])
	case kindDispatch:
		return decodeDispatch(b[1:])
	}
	v := empty(b[0])
	if v == nil {
		return nil, fmt.Errorf("cluster: unknown node message kind %d", b[0])
	}
	if err := json.Unmarshal(b[1:], v); err != nil {
		return nil, fmt.Errorf("cluster: decoding a node message: %w", err)
	}
	return v, nil
}

// Frame is what the owner's terminal delivered to subscription Gen, one frame or
// several in order, each as it went out there: the proxy stamps each again with its
// own node's serverSeq. Several go as one when the echo of a client's action waited
// for the output it caused, or when output came faster than the endpoint writer sent
// it.
//
// Unlike every other node message, a frame with a gatherer (NewFrame) is changed
// after it is sent: the gatherer adds frames to it until it is taken (Take), by the
// endpoint writer serializing it (or, on the same node, by the proxy reading it).
type Frame struct {
	Gen    uint64
	Frames [][]byte
	from   Gatherer
}

// Gatherer goes on adding frames to a Frame it sent, under a lock of its own, until
// the frame is taken.
type Gatherer interface {
	// Taken ends the gathering into f and gives f's frames: nothing joins f after.
	Taken(f *Frame) [][]byte
}

// NewFrame is a frame message of frames for subscription gen, which from goes on
// filling after it is sent, until it is taken.
func NewFrame(gen uint64, frames [][]byte, from Gatherer) *Frame {
	return &Frame{Gen: gen, Frames: frames, from: from}
}

// Take ends the frame's gathering and gives its frames.
func (m *Frame) Take() [][]byte {
	if m.from != nil {
		return m.from.Taken(m)
	}
	return m.Frames
}

// Serialize writes a frame without JSON: it is the hot path, every chunk of output.
// Its gen, how many frames, then each frame length-prefixed (uvarints): cut short
// anywhere, it is an error, not fewer frames.
func (m *Frame) Serialize() (remote.RootSerialized, error) {
	echotrace.Mark("ew serialize frame")
	frames := m.Take()
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

func decodeFrame(b []byte) (*Frame, error) {
	if len(b) < 8 {
		return nil, errShort
	}
	m := &Frame{Gen: binary.BigEndian.Uint64(b[:8])}
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
func (m *Dispatch) Serialize() (remote.RootSerialized, error) {
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

func decodeDispatch(b []byte) (*Dispatch, error) {
	r := &reader{b: b}
	m := &Dispatch{Key: r.uvarint()}
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
