package terminal

import "testing"

// BenchmarkDropBacklog is the scan a flood costs each time the screen's backlog
// passes maxScreenBacklog: every queued chunk but the last is searched for mode
// switches.
func BenchmarkDropBacklog(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(sh.name, func(b *testing.B) {
			var chunks [][]byte
			for size := 0; size <= maxScreenBacklog; size += 4 << 10 {
				chunks = append(chunks, []byte(sh.chunk[size%benchChunk:size%benchChunk+4<<10]))
			}
			f := &screenFeeder{}
			queue := make([][]byte, 0, len(chunks))
			b.ReportAllocs()
			b.SetBytes(int64(len(chunks)-1) * 4 << 10)
			for b.Loop() {
				f.queue = append(queue[:0], chunks...)
				f.dropBacklogLocked()
			}
		})
	}
}
