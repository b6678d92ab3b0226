package messages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// How the host lays out an `action` notification (PROTOCOL.md 4). EnvelopeFrame
// writes it, and everything that reads a frame without decoding it - cutting the
// envelope out for a replay, merging two terminal/data frames, counting a frame's
// output - asks this file rather than repeating the bytes.
const (
	// actionHead is how every action frame begins; the envelope, its params, follows,
	// and one closing brace ends the frame.
	actionHead = `{"jsonrpc":"2.0","method":"action","params":`
	// envelopeHead opens the envelope up to its channel's opening quote.
	envelopeHead = `{"channel":`
	// dataHead follows the channel in a terminal/data envelope, up to its data's
	// first byte.
	dataHead = `,"action":{"type":"terminal/data","data":"`
	// dataTail ends a terminal/data action and opens the serverSeq that follows it.
	dataTail = `"},"serverSeq":`
	// actionKey follows the channel in every envelope, up to its action's opening
	// brace; inputHead does so in a terminal/input envelope, up to the end of its type.
	actionKey = `,"action":`
	inputHead = actionKey + `{"type":"terminal/input"`
	// seqHead opens an envelope's serverSeq, after its action; originHead opens the
	// origin after it, up to its clientId's first byte, and clientSeqHead follows
	// the clientId.
	seqHead       = `,"serverSeq":`
	originHead    = `,"origin":{"clientId":"`
	clientSeqHead = `","clientSeq":`
)

// The same, as bytes to compare frames with.
var (
	framePrefix     = []byte(actionHead + envelopeHead)
	dataPrefix      = []byte(dataHead)
	seqSeparator    = []byte(dataTail)
	seqKey          = []byte(seqHead)
	originPrefix    = []byte(originHead)
	clientSeqPrefix = []byte(clientSeqHead)
)

// EnvelopeOfFrame is the envelope an action frame carries - its params object, byte
// for byte as it went on the wire - cut out of a frame EnvelopeFrame wrote, without
// decoding it: what a `reconnect` answer's replay carries (PROTOCOL.md 2.4). It is nil
// for any other frame.
func EnvelopeOfFrame(frame []byte) json.RawMessage {
	n := len(actionHead)
	if len(frame) <= n+1 || string(frame[:n]) != actionHead || frame[len(frame)-1] != '}' {
		return nil
	}
	// The capacity ends with the envelope, so appending to it cannot overwrite the
	// frame's closing brace.
	return frame[n : len(frame)-1 : len(frame)-1]
}

// DataFramePrefix is how the host begins every terminal/data frame on channel, up to
// the data's first byte: a reader that only counts output can skip a frame's head
// without decoding it.
func DataFramePrefix(channel string) []byte {
	var b bytes.Buffer
	b.WriteString(actionHead + envelopeHead)
	writeJSONString(&b, channel)
	b.WriteString(dataHead)
	return b.Bytes()
}

// DataFrame is the frame EnvelopeFrame writes for a terminal/data envelope on channel
// carrying data and serverSeq seq, byte for byte, written in one pass into one
// buffer. Every chunk of a flood is encoded here: encoding the action first
// (DataAction) and then the envelope around it costs a second buffer of the chunk's
// size, zeroed, and a copy of it (issue 13, the busy flood's CPU per MB).
func DataFrame(channel, data string, seq uint64) []byte {
	b := make([]byte, 0, len(actionHead+envelopeHead+dataHead+dataTail)+len(channel)+len(data)+len(data)/8+32)
	b = append(b, actionHead+envelopeHead...)
	b = appendJSONString(b, channel)
	b = append(b, dataHead[:len(dataHead)-1]...) // appendJSONString writes the quotes
	b = appendJSONString(b, data)
	b = append(b, dataTail[1:]...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '}', '}')
}

// InputFramePrefix is how the host begins every terminal/input frame on channel, up
// to the end of its action's type: a reader that passes a keystroke's echo on can
// tell it from other frames without decoding it (SplitInputFrame).
func InputFramePrefix(channel string) []byte {
	var b bytes.Buffer
	b.WriteString(actionHead + envelopeHead)
	writeJSONString(&b, channel)
	b.WriteString(inputHead)
	return b.Bytes()
}

// SplitInputFrame cuts a terminal/input frame f that begins with prefix (its
// channel's InputFramePrefix) into its action's bytes and its origin, without
// decoding it. It is false for a frame not laid out exactly as EnvelopeFrame writes
// an echo with an origin and nothing after it (a client ID with an escape in it, a
// rejection reason): decode those.
func SplitInputFrame(f, prefix []byte) (json.RawMessage, *Origin, bool) {
	start := len(prefix) - len(inputHead) + len(actionKey)
	end := bytes.LastIndex(f, seqKey)
	if !bytes.HasPrefix(f, prefix) || end < len(prefix) {
		return nil, nil, false
	}
	rest := f[end+len(seqKey):]
	digits := 0
	for digits < len(rest) && '0' <= rest[digits] && rest[digits] <= '9' {
		digits++
	}
	rest = rest[digits:]
	if digits == 0 || !bytes.HasPrefix(rest, originPrefix) {
		return nil, nil, false
	}
	rest = rest[len(originPrefix):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 || bytes.IndexByte(rest[:q], '\\') >= 0 || !bytes.HasPrefix(rest[q:], clientSeqPrefix) || !bytes.HasSuffix(rest, []byte("}}}")) {
		return nil, nil, false
	}
	id := string(rest[:q])
	seq, err := strconv.ParseInt(string(rest[q+len(clientSeqPrefix):len(rest)-3]), 10, 64)
	if err != nil || !utf8.ValidString(id) {
		return nil, nil, false
	}
	return f[start:end:end], &Origin{ClientID: id, ClientSeq: seq}, true
}

// SplitDataFrame cuts a terminal/data frame f that begins with prefix (its channel's
// DataFramePrefix) into its data, still escaped as in the frame, and its action's
// bytes, without decoding it; false for any other frame.
func SplitDataFrame(f, prefix []byte) (data, action []byte, ok bool) {
	if !bytes.HasPrefix(f, prefix) {
		return nil, nil, false
	}
	end := bytes.LastIndex(f, seqSeparator)
	if end < len(prefix) || !bytes.HasSuffix(f, []byte("}}")) {
		return nil, nil, false
	}
	start := len(prefix) - len(dataHead) + len(actionKey)
	return f[len(prefix):end], f[start : end+2], true
}
