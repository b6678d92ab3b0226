package messages

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string. It is the hot part of every
// terminal/data frame: output is mostly printable ASCII with control bytes mixed in,
// and encoding/json would reflect and escape HTML characters we do not need escaped.
// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript that evals it.
		if r == '\u2028' || r == '\u2029' {
			b.WriteString(s[start:i])
			b.WriteString(`\u202`)
			b.WriteByte(hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// DataAction encodes a terminal/data action without reflection.
func DataAction(data string) json.RawMessage {
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/8 + 40)
	b.WriteString(`{"type":"terminal/data","data":`)
	writeJSONString(&b, data)
	b.WriteByte('}')
	return b.Bytes()
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
