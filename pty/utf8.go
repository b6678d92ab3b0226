package pty

import (
	"strings"
	"unicode/utf8"
)

// UTF8Decoder turns one byte stream into text, read by read, so a character whose
// bytes arrive in two reads reaches the client whole (seed "Pipes, or a
// pseudoterminal": the stream is decoded as one UTF-8 stream, as node-pty and
// Node's setEncoding('utf8') decode theirs). Invalid bytes are never dropped: each
// maximal ill-formed subpart becomes one U+FFFD, the practice Unicode recommends and
// WHATWG's decoder (hence Node's) follows. The zero value is ready to use; a decoder
// belongs to one goroutine.
type UTF8Decoder struct {
	held  [utf8.UTFMax]byte // an incomplete but so far valid sequence from the last Decode
	nheld int
}

const replacement = "\uFFFD"

// Decode returns the text in p, after whatever an earlier call held. An incomplete
// sequence at the end of p (at most 3 bytes) is held for the next call.
func (d *UTF8Decoder) Decode(p []byte) string {
	if d.nheld == 0 {
		return d.decodeFresh(p, "")
	}
	// Complete, or give up on, the held sequence with the first bytes of p.
	_, need := validPrefix(d.held[:d.nheld])
	used := 0
	for d.nheld < need && used < len(p) {
		d.held[d.nheld] = p[used]
		if n, _ := validPrefix(d.held[:d.nheld+1]); n != d.nheld+1 {
			break // p[used] cannot continue the sequence; it starts afresh below
		}
		d.nheld++
		used++
	}
	var prefix string
	switch {
	case d.nheld == need:
		prefix = string(d.held[:d.nheld])
	case used == len(p):
		return "" // still incomplete; keep holding
	default:
		prefix = replacement
	}
	d.nheld = 0
	return d.decodeFresh(p[used:], prefix)
}

// Flush returns what is held as one U+FFFD (an incomplete sequence at the end of the
// stream is ill-formed), or "" when nothing is, and empties the decoder.
func (d *UTF8Decoder) Flush() string {
	if d.nheld == 0 {
		return ""
	}
	d.nheld = 0
	return replacement
}

// decodeFresh decodes p with nothing held, after prefix (the text of a sequence
// completed or given up on, or ""), and holds an incomplete sequence at its end.
func (d *UTF8Decoder) decodeFresh(p []byte, prefix string) string {
	if end := incompleteTail(p); end < len(p) {
		d.nheld = copy(d.held[:], p[end:])
		p = p[:end]
	}
	if prefix == "" && utf8.Valid(p) {
		// The fast path: one check and one copy.
		return string(p)
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(p) + len(replacement))
	b.WriteString(prefix)
	appendValid(&b, p)
	return b.String()
}

// appendValid writes p to b with each maximal ill-formed subpart replaced.
func appendValid(b *strings.Builder, p []byte) {
	for len(p) > 0 {
		// Copy the longest valid run in one go.
		i := 0
		for i < len(p) {
			if p[i] < utf8.RuneSelf {
				i++
				continue
			}
			r, size := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		b.Write(p[:i])
		p = p[i:]
		if len(p) == 0 {
			return
		}
		n, _ := validPrefix(p)
		b.WriteString(replacement)
		p = p[max(n, 1):]
	}
}

// incompleteTail is the index where an incomplete but so far valid sequence at the
// end of p starts, or len(p) when p does not end in one.
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		c := p[i]
		if c < utf8.RuneSelf {
			return len(p)
		}
		if c >= 0xC0 { // a lead byte, valid or not
			n, need := validPrefix(p[i:])
			if n == len(p)-i && n < need {
				return i
			}
			return len(p)
		}
		// A continuation byte: look further back for its lead.
	}
	return len(p)
}

// validPrefix reports how many leading bytes of p (at least one byte long) form a
// prefix of some well-formed UTF-8 sequence, and how long that sequence is; n is 0
// when p[0] can start none (a continuation byte, C0, C1, F5 to FF).
func validPrefix(p []byte) (n, need int) {
	c := p[0]
	lo, hi := byte(0x80), byte(0xBF) // the range of the second byte
	switch {
	case c < 0x80:
		return 1, 1
	case c >= 0xC2 && c <= 0xDF:
		need = 2
	case c == 0xE0:
		need, lo = 3, 0xA0
	case c == 0xED:
		need, hi = 3, 0x9F // no surrogates
	case c >= 0xE1 && c <= 0xEF:
		need = 3
	case c == 0xF0:
		need, lo = 4, 0x90
	case c == 0xF4:
		need, hi = 4, 0x8F // nothing above U+10FFFF
	case c >= 0xF1 && c <= 0xF3:
		need = 4
	default:
		return 0, 0
	}
	n = 1
	if n < len(p) && p[n] >= lo && p[n] <= hi {
		n++
		for n < need && n < len(p) && p[n] >= 0x80 && p[n] <= 0xBF {
			n++
		}
	}
	return n, need
}
