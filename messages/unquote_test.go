package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

// UnquoteString decodes exactly what encoding/json decodes, and fails where it fails.
func TestUnquoteAsEncodingJSON(t *testing.T) {
	bodies := []string{
		``, `plain`, `a\nb\r\tc`, `\"\\\/\b\f`, `\u00e9\u4e2d`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`,
		`\ud83d\u0041`, `\ude00\ud83d`, `\u00`, `\x`, `\`, `tail\`, "raw\x01ctl", `a"b`,
		"caf\xc3\xa9", "bad\xff\xfeutf8", "half\xe4\xb8", `\u001b[31mred\u001b[0m`, `\uD83D\uDE00`,
		strings.Repeat(`aGVsbG8gd29ybGQ=\n`, 1000),
	}
	for _, e := range []string{"\x00", "\x1f", "\u2028", "<&>", "\ufffd", "\U0001F600", "\\", "\""} {
		b, _ := json.Marshal("x" + e + "y")
		bodies = append(bodies, string(b[1:len(b)-1]))
	}
	for _, body := range bodies {
		var want string
		werr := json.Unmarshal([]byte(`"`+body+`"`), &want)
		got, err := UnquoteString([]byte(body))
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("UnquoteString(%q) = %q, %v; encoding/json: %q, %v", body, got, err, want, werr)
		}
	}
}

// Output as a cluster proxy folds it: 256 KiB of base64 lines.
func BenchmarkUnquote(b *testing.B) {
	body := []byte(strings.Repeat(`aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=\r\n`, 3200))
	b.Run("UnquoteString", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := UnquoteString(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := slowUnquote(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
