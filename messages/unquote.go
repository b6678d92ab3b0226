package messages

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// UnquoteString decodes the body of a JSON string (what lies between its quotes) as
// encoding/json would, much faster: it reads back what appendJSONString writes, and a
// cluster node's proxy folds every byte of a remote terminal's output through it
// (encoding/json's scanner looks at each byte several times).
// Runs without a backslash are copied as they are; anything this does not decode
// exactly as encoding/json does (a raw control character, a bad escape, invalid
// UTF-8, which encoding/json replaces) is left to encoding/json.
func UnquoteString(body []byte) (string, error) {
	out := make([]byte, 0, len(body))
	rest := body
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\\')
		if i < 0 {
			i = len(rest)
		}
		if !plainRun(rest[:i]) {
			return slowUnquote(body)
		}
		out = append(out, rest[:i]...)
		if i == len(rest) {
			break
		}
		rest = rest[i:]
		if len(rest) < 2 {
			return slowUnquote(body)
		}
		switch c := rest[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(rest[2:])
			if !ok {
				return slowUnquote(body)
			}
			rest = rest[6:]
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if len(rest) >= 6 && rest[0] == '\\' && rest[1] == 'u' {
					r2, ok = hex4(rest[2:])
				}
				if d := utf16.DecodeRune(r, r2); ok && d != utf8.RuneError {
					r = d
					rest = rest[6:]
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return slowUnquote(body)
		}
		rest = rest[2:]
	}
	if !utf8.Valid(out) {
		return slowUnquote(body)
	}
	return string(out), nil
}

// plainRun says whether a run between escapes may stand in a JSON string as it is: no
// control character and no quote.
func plainRun(run []byte) bool {
	for _, c := range run {
		if c < 0x20 || c == '"' {
			return false
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func slowUnquote(body []byte) (string, error) {
	var s string
	q := make([]byte, 0, len(body)+2)
	q = append(append(append(q, '"'), body...), '"')
	err := json.Unmarshal(q, &s)
	return s, err
}
