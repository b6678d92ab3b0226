package terminal

import "testing"

// The shapes of output (benchShapes) are in screenfeed_bench_test.go.

// BenchmarkModeScan is what every chunk of a pseudoterminal's output costs the
// terminal actor to follow the alternate screen and bracketed paste.
func BenchmarkModeScan(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			m := newModeTracker()
			b.ReportAllocs()
			b.SetBytes(int64(len(sh.chunk)))
			for b.Loop() {
				m.scan(sh.chunk)
			}
		})
	}
}

// BenchmarkAsksTheTerminal is the query probe a terminal with no screen yet runs on
// every chunk.
func BenchmarkAsksTheTerminal(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(sh.chunk)))
			for b.Loop() {
				asksTheTerminal(sh.chunk)
			}
		})
	}
}
