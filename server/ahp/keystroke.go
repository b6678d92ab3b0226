package ahp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
)

// A keystroke is one frame of one shape, sent by every client in this repository
// and by anything that writes the members in the order the protocol lists them:
//
//	{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"…","clientSeq":N,"action":{"type":"terminal/input","data":"…"}}}
//
// The general path checks such a frame in seven passes of encoding/json (valid,
// envelope, envelope members, params members, params, action members, action: 4.4 µs
// and 26 allocations, BenchmarkKeystrokeDecode). decodeKeystroke reads exactly this
// shape in one pass and gives up on anything else (other members, other order,
// whitespace, another action), which then takes the general path; what it accepts,
// it decodes as the general path would (TestKeystrokeDecodeAgrees).

var (
	keystrokeHead   = []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"`)
	keystrokeSeq    = []byte(`","clientSeq":`)
	keystrokeAction = []byte(`,"action":{"type":"terminal/input","data":"`)
	keystrokeTail   = []byte(`"}}}`)
)

// decodeKeystroke decodes a frame of the keystroke shape into p and a, or reports
// false.
func decodeKeystroke(frame []byte, p *dispatchParams, a *messages.Action) bool {
	rest, ok := bytes.CutPrefix(frame, keystrokeHead)
	if !ok {
		return false
	}
	// The channel: a plain string, no escape, no control character.
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return false
	}
	ch := rest[:end]
	for _, c := range ch {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	if !utf8.Valid(ch) {
		return false
	}
	rest, ok = bytes.CutPrefix(rest[end:], keystrokeSeq)
	if !ok {
		return false
	}
	// clientSeq: a JSON integer that fits an int64.
	n := 0
	if n < len(rest) && rest[n] == '-' {
		n++
	}
	digits := n
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == digits || (rest[digits] == '0' && n > digits+1) {
		return false
	}
	seq, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	if err != nil {
		return false
	}
	rest = rest[n:]
	if !bytes.HasPrefix(rest, keystrokeAction) {
		return false
	}
	action := rest[len(`,"action":`):]       // from the action's opening brace
	literal := rest[len(keystrokeAction)-1:] // from the data's opening quote
	rest = rest[len(keystrokeAction):]
	// The data: a JSON string, read to its closing quote.
	escaped := false
	end = -1
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c < 0x20 {
			return false
		}
		if c == '\\' {
			escaped = true
			i++ // the escaped character; \u's digits are checked by Unmarshal below
			continue
		}
		if c == '"' {
			end = i
			break
		}
	}
	if end < 0 || !bytes.Equal(rest[end:], keystrokeTail) {
		return false
	}
	if !utf8.Valid(rest[:end]) {
		return false // the general path mends the whole frame's UTF-8 first
	}
	var data string
	if escaped {
		// encoding/json's own reading of the string's escapes.
		if json.Unmarshal(literal[:end+2], &data) != nil {
			return false
		}
	} else {
		data = string(rest[:end])
	}
	if limits.CheckURI(string(ch)) != nil {
		return false
	}
	p.Channel = string(ch)
	p.ClientSeq = seq
	// The action's bytes, as the general path keeps them: its own copy.
	p.Action = append(json.RawMessage(nil), action[:len(action)-len(keystrokeTail)+2]...)
	a.Type = messages.TerminalInput
	a.Data = &data
	return true
}
