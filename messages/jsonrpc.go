package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/termhost/termhost/messages/strictjson"
)

// JSON-RPC and AHP error codes (PROTOCOL.md 7).
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeSessionNotFound            = -32001
	CodeSessionAlreadyExists       = -32003
	CodeTurnInProgress             = -32004
	CodeUnsupportedProtocolVersion = -32005
	CodeNotFound                   = -32008
	CodePermissionDenied           = -32009
	CodeAlreadyExists              = -32010
)

// RootURI is the root channel, which connection-level methods name.
const RootURI = "ahp-root://"

// Inbound is one frame a client sent: a request (with an id), a notification, or
// something that is neither. ID is kept as received so it is echoed exactly.
type Inbound struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// IsRequest reports whether the frame carries an id, null included, and so wants an
// answer (JSON-RPC 2.0: a notification is a request without the id member).
func (m *Inbound) IsRequest() bool {
	return len(m.ID) > 0
}

// inboundMembers are the members of a JSON-RPC message, for the case-sensitive check.
var inboundMembers = strictjson.Of(Inbound{})

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Errorf makes an error with a code and a sentence a person can act on.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ParseInbound decodes one frame. A frame that is not JSON is a parse error, one that
// is not a JSON-RPC message an invalid request; either way the id, if one could be
// read, is returned so the answer names it.
func ParseInbound(frame []byte) (*Inbound, *Error) {
	// A text frame must be UTF-8; one that is not has each bad byte replaced, so
	// nothing the host echoes or hands a shell is invalid UTF-8 in turn.
	if !utf8.Valid(frame) {
		frame = []byte(strings.ToValidUTF8(string(frame), "\uFFFD"))
	}
	if !json.Valid(frame) {
		return nil, Errorf(CodeParseError, "Parse error: the frame is not JSON")
	}
	var m Inbound
	if err := json.Unmarshal(frame, &m); err != nil {
		// Valid JSON of the wrong shape: salvage the id if there is one.
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(frame, &probe)
		return &Inbound{ID: validID(probe.ID)}, Errorf(CodeInvalidRequest, "Invalid request: %v", err)
	}
	raw := bytes.TrimSpace(m.ID)
	m.ID = validID(raw)
	if bytes.Equal(raw, []byte("null")) {
		// A request with a null id is still a request: it is answered, with id null.
		m.ID = json.RawMessage("null")
	}
	if m.ID == nil && len(raw) > 0 {
		// An id that is an object, an array or a boolean: JSON-RPC 2.0 makes that an
		// invalid request, not a notification to act on.
		return &m, Errorf(CodeInvalidRequest, "Invalid request: the id must be a string, a number or null")
	}
	if err := inboundMembers.Check(frame); err != nil {
		return &m, Errorf(CodeInvalidRequest, "Invalid request: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return &m, Errorf(CodeInvalidRequest, `Invalid request: "jsonrpc" must be "2.0"`)
	}
	if m.Method == nil || *m.Method == "" {
		return &m, Errorf(CodeInvalidRequest, "Invalid request: no method")
	}
	return &m, nil
}

// validID keeps a string or number id and drops anything else. The id is a value of
// a frame already known to be JSON, so its first byte tells its kind; a number is
// kept even when it would not fit a float64 (1e400), since it is echoed as bytes.
func validID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return id
	default:
		return nil
	}
}

// ResponseFrame encodes a success answer.
func ResponseFrame(id json.RawMessage, result any) ([]byte, error) {
	res, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(res) + len(id) + 32)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(idOrNull(id))
	b.WriteString(`,"result":`)
	b.Write(res)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// NotificationFrame encodes a notification of method with params (the root's
// root/sessionAdded and root/sessionRemoved; actions go as EnvelopeFrame).
func NotificationFrame(method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

// ErrorFrame encodes an error answer. A nil id is written as null.
func ErrorFrame(id json.RawMessage, e *Error) []byte {
	body, err := json.Marshal(e)
	if err != nil {
		body, _ = json.Marshal(Errorf(CodeInternalError, "%s", e.Message))
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(idOrNull(id))
	b.WriteString(`,"error":`)
	b.Write(body)
	b.WriteByte('}')
	return b.Bytes()
}

func idOrNull(id json.RawMessage) []byte {
	if len(id) == 0 {
		return []byte("null")
	}
	return id
}

// EnvelopeFrame encodes an `action` notification carrying env.
func EnvelopeFrame(env *Envelope) []byte {
	var b bytes.Buffer
	size := len(env.Action) + len(env.Channel) + len(env.RejectionReason) + 96
	if env.Origin != nil {
		size += len(env.Origin.ClientID) + 48
	}
	b.Grow(size)
	b.WriteString(actionHead + envelopeHead) // frame.go: the layout others cut frames by
	writeJSONString(&b, env.Channel)
	b.WriteString(`,"action":`)
	if len(env.Action) == 0 {
		b.WriteString("null") // as encoding/json writes a nil json.RawMessage
	} else {
		b.Write(env.Action)
	}
	// The numbers are formatted in place: every envelope passes here, and a string
	// per number would be an allocation per keystroke.
	var num [20]byte
	b.WriteString(`,"serverSeq":`)
	b.Write(strconv.AppendUint(num[:0], env.ServerSeq, 10))
	if env.Origin != nil {
		b.WriteString(`,"origin":{"clientId":`)
		writeJSONString(&b, env.Origin.ClientID)
		b.WriteString(`,"clientSeq":`)
		b.Write(strconv.AppendInt(num[:0], env.Origin.ClientSeq, 10))
		b.WriteByte('}')
	}
	if env.RejectionReason != "" {
		b.WriteString(`,"rejectionReason":`)
		writeJSONString(&b, env.RejectionReason)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}
