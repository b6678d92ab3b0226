package messages

import (
	"strings"
	"testing"
)

// floodChunk is size bytes of output lines like `base64 /dev/urandom` prints: 76
// characters of the base64 alphabet and a newline, the kind of flood that fills a
// terminal as fast as a reader can take it.
func floodChunk(size int, alphabet string) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteByte(alphabet[(i*7+i/13)%len(alphabet)])
		if i%77 == 76 {
			b.WriteByte('\n')
		}
	}
	return b.String()[:size]
}

// benchmarkFlood feeds stream to a Scrollback with the default limit in 64 KiB
// chunks, over and over; len(stream) is a multiple of 64 KiB.
func benchmarkFlood(b *testing.B, stream string) {
	const size = 64 << 10
	var actions []*Action
	for i := 0; i < len(stream); i += size {
		actions = append(actions, &Action{Type: TerminalData, Data: Ptr(stream[i : i+size])})
	}
	sb := &Scrollback{Limit: 200_000}
	st := &TerminalState{Title: "t", Content: []ContentPart{}}
	// Fill the scrollback first, so the loop measures the steady state.
	for i := 0; i < 16*sb.Limit/size; i++ {
		sb.Apply(st, actions[i%len(actions)])
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sb.Apply(st, actions[i%len(actions)])
	}
	b.StopTimer()
	sb.Settle(st)
	if n := len(st.Content); n != 1 {
		b.Fatalf("%d parts after the flood, want 1", n)
	}
}

// BenchmarkScrollbackFlood is a 64 KiB read of base64-like lines at a time, the
// default limit.
func BenchmarkScrollbackFlood(b *testing.B) {
	benchmarkFlood(b, floodChunk(64<<10, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
}

// BenchmarkScrollbackFloodWide is a flood of three-byte characters. 64 KiB is not a
// multiple of three, so two chunks in three end inside a character the next one
// completes; three chunks make 8,192 whole copies of the 24-byte phrase.
func BenchmarkScrollbackFloodWide(b *testing.B) {
	benchmarkFlood(b, strings.Repeat("日本語の端末出力", 3*(64<<10)/24))
}
