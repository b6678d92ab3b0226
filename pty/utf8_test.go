package pty

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

const mixedText = "plain ASCII, café, 日本語, emoji 🎉🙂, math ∑ √, combining é, end"

func decodeInPieces(d *UTF8Decoder, b []byte, cuts []int) string {
	var out strings.Builder
	prev := 0
	for _, c := range cuts {
		out.WriteString(d.Decode(b[prev:c]))
		prev = c
	}
	out.WriteString(d.Decode(b[prev:]))
	out.WriteString(d.Flush())
	return out.String()
}

func TestUTF8DecoderByteByByte(t *testing.T) {
	var d UTF8Decoder
	var out strings.Builder
	for i := range len(mixedText) {
		out.WriteString(d.Decode([]byte{mixedText[i]}))
	}
	out.WriteString(d.Flush())
	if got := out.String(); got != mixedText {
		t.Fatalf("byte by byte: %q, want %q", got, mixedText)
	}
}

func TestUTF8DecoderRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := []byte(strings.Repeat(mixedText, 20))
	for round := range 500 {
		var cuts []int
		for pos := 0; ; {
			pos += 1 + rng.IntN(9)
			if pos >= len(b) {
				break
			}
			cuts = append(cuts, pos)
		}
		var d UTF8Decoder
		if got := decodeInPieces(&d, b, cuts); got != string(b) {
			t.Fatalf("round %d, cuts %v: got %q", round, cuts, got)
		}
	}
}

func TestUTF8DecoderInvalidBytes(t *testing.T) {
	const r = "\uFFFD"
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"lone continuation", "a\x80b", "a" + r + "b"},
		{"two continuations", "a\x80\x80b", "a" + r + r + "b"},
		{"invalid lead C0", "\xC0\xAF", r + r},
		{"F5 and above", "\xF5\xFF", r + r},
		{"truncated in the middle", "\xE2\x82A", r + "A"},
		{"truncated four-byte", "\xF0\x9F\x8Ex", r + "x"},
		{"surrogate", "\xED\xA0\x80", r + r + r},
		{"overlong E0", "\xE0\x80\x80", r + r + r},
		{"above U+10FFFF", "\xF4\x90\x80\x80", r + r + r + r},
		{"replacement char itself", "x\uFFFDy", "x\uFFFDy"},
		{"incomplete at the end", "ok\xE2\x82", "ok" + r},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var whole UTF8Decoder
			if got := whole.Decode([]byte(tc.in)) + whole.Flush(); got != tc.want {
				t.Errorf("in one piece: %q, want %q", got, tc.want)
			}
			// Every split point gives the same text.
			for cut := 1; cut < len(tc.in); cut++ {
				var d UTF8Decoder
				if got := decodeInPieces(&d, []byte(tc.in), []int{cut}); got != tc.want {
					t.Errorf("split at %d: %q, want %q", cut, got, tc.want)
				}
			}
			var bytewise UTF8Decoder
			cuts := make([]int, 0, len(tc.in))
			for i := 1; i < len(tc.in); i++ {
				cuts = append(cuts, i)
			}
			if got := decodeInPieces(&bytewise, []byte(tc.in), cuts); got != tc.want {
				t.Errorf("byte by byte: %q, want %q", got, tc.want)
			}
		})
	}
}

// Random bytes, decoded in random pieces, give the same text as in one piece, and
// the text is always valid UTF-8.
func TestUTF8DecoderRandomBytesAnySplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{'a', 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0x9F, 0xA0, 0x90, 0x8F}
	for round := range 2000 {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var one UTF8Decoder
		want := one.Decode(b) + one.Flush()
		if !utf8.ValidString(want) {
			t.Fatalf("round %d: invalid output %q", round, want)
		}
		var cuts []int
		for i := 1; i < len(b); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		var d UTF8Decoder
		if got := decodeInPieces(&d, b, cuts); got != want {
			t.Fatalf("round %d, bytes %x, cuts %v: %q, want %q", round, b, cuts, got, want)
		}
	}
}

func TestUTF8DecoderHoldsAtMostThreeBytes(t *testing.T) {
	var d UTF8Decoder
	if got := d.Decode([]byte("\xF0\x9F\x8E")); got != "" {
		t.Fatalf("incomplete emoji gave %q before its last byte", got)
	}
	if got := d.Decode([]byte("\x89!")); got != "🎉!" {
		t.Fatalf("completed emoji gave %q", got)
	}
	if got := d.Flush(); got != "" {
		t.Fatalf("Flush with nothing held gave %q", got)
	}
}

func BenchmarkUTF8Decode(b *testing.B) {
	chunks := map[string][]byte{
		// About 32 KiB each, a reader's buffer, ending on a whole character.
		"ascii":   []byte(strings.Repeat("the quick brown fox jumps over the lazy dog\r\n", 728)),
		"mixed":   []byte(strings.Repeat(mixedText+"\r\n", 390)),
		"invalid": []byte(strings.Repeat("ab\x80cd\xE2\x82ef", 3277)),
	}
	for _, name := range []string{"ascii", "mixed", "invalid"} {
		chunk := chunks[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(chunk)))
			var d UTF8Decoder
			for b.Loop() {
				_ = d.Decode(chunk)
			}
		})
	}
}
