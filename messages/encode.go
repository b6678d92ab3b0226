package messages

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string (appendJSONString).
func writeJSONString(b *bytes.Buffer, s string) {
	b.Grow(len(s) + 2)
	// Appended into the buffer's free space: the Write moves the bytes onto
	// themselves, and nothing is allocated.
	b.Write(appendJSONString(b.AvailableBuffer(), s))
}

// appendJSONString appends s as a JSON string. It is the hot part of every
// terminal/data frame: output is mostly printable ASCII with control bytes mixed in,
// and encoding/json would reflect and escape HTML characters we do not need escaped.
// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		i = skipPlain(s, i)
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript that evals it.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// DataAction encodes a terminal/data action without reflection.
func DataAction(data string) json.RawMessage {
	b := make([]byte, 0, len(data)+len(data)/8+40)
	b = append(b, `{"type":"terminal/data","data":`...)
	b = appendJSONString(b, data)
	return append(b, '}')
}

// EncodeAction encodes any action; terminal/data takes the fast path.
func EncodeAction(a *Action) json.RawMessage {
	if a.Type == TerminalData && a.Data != nil && a.Meta == nil {
		return DataAction(*a.Data)
	}
	b, err := json.Marshal(a)
	if err != nil {
		// Every field of Action encodes; this is a bug, not bad input.
		panic("messages: encoding an action: " + err.Error())
	}
	return b
}

// MergeDataFrames joins two host terminal/data frames of one channel into one frame
// carrying both outputs and the later serverSeq, as a client folding them would see
// it (PROTOCOL.md 3: coalescing terminal/data is allowed). It reports false for any
// other pair, frames with an origin or a rejection included.
func MergeDataFrames(first, second []byte) ([]byte, bool) {
	return MergeDataFramesInto(first, second, false)
}

// MergeDataFramesInto is MergeDataFrames that may append in place when first is a
// frame the caller owns (one it got from an earlier merge): a queue that keeps merging
// into its tail then costs amortized O(len(second)) per merge, not a copy of the whole
// frame each time. A frame shared with other queues must never be reused.
func MergeDataFramesInto(first, second []byte, reuse bool) ([]byte, bool) {
	h1, d1, ok1 := splitDataFrame(first)
	h2, d2, ok2 := splitDataFrame(second)
	if !ok1 || !ok2 || !bytes.Equal(h1, h2) {
		return nil, false
	}
	tail := second[len(h2)+len(dataPrefix)+len(d2):]
	keep := len(h1) + len(dataPrefix) + len(d1)
	if reuse {
		out := append(first[:keep], d2...)
		return append(out, tail...), true
	}
	out := make([]byte, 0, 2*(keep+len(d2)+len(tail)))
	out = append(out, first[:keep]...)
	out = append(out, d2...)
	out = append(out, tail...)
	return out, true
}

// IsDataFrame reports whether f is a host terminal/data frame, one MergeDataFrames
// can join with its neighbour.
func IsDataFrame(f []byte) bool {
	_, _, ok := splitDataFrame(f)
	return ok
}

// splitDataFrame finds a data frame's head (up to the channel's end) and its escaped
// data. The tail after the data must be exactly `"},"serverSeq":N}}`.
func splitDataFrame(f []byte) (head, data []byte, ok bool) {
	if !bytes.HasPrefix(f, framePrefix) {
		return nil, nil, false
	}
	i := bytes.Index(f[len(framePrefix):], dataPrefix)
	if i < 0 {
		return nil, nil, false
	}
	head = f[:len(framePrefix)+i]
	rest := f[len(head)+len(dataPrefix):]
	j := bytes.LastIndex(rest, seqSeparator)
	if j < 0 {
		return nil, nil, false
	}
	seq := rest[j+len(seqSeparator):]
	if len(seq) < 3 || !bytes.HasSuffix(seq, []byte("}}")) {
		return nil, nil, false
	}
	for _, c := range seq[:len(seq)-2] {
		if c < '0' || c > '9' {
			return nil, nil, false
		}
	}
	return head, rest[:j], true
}

// Repeated bytes, for testing eight bytes at once (SWAR: SIMD within a register).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipPlain returns the index of the first byte of s at or after i that is not
// printable ASCII other than '"' and '\\', or, within the last seven bytes, a
// little before it: output is mostly such runs, and testing eight bytes at once
// (SWAR) is several times faster than byte by byte. In the word that holds such a
// byte, the lowest byte the test marks is the first one: a subtraction borrows only
// from a byte below 0x20 or equal to the one tested for, which is marked itself, so
// no byte is marked that a lower marked byte did not cause.
func skipPlain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		q := x ^ '"'*ones   // a zero byte where there is a quote
		bs := x ^ '\\'*ones // a zero byte where there is a backslash
		if m := ((x-0x20*ones)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	return i
}
