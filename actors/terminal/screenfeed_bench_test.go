package terminal

import (
	"fmt"
	"strings"
	"testing"
)

// benchChunk is the size of a pseudoterminal read during a flood (shell.go's floodSize).
const benchChunk = 64 << 10

// Three shapes of a 64 KiB chunk of output: `ls -l --color` (a few SGR sequences a
// line), a plain flood (a log or `seq`, no ESC at all), and a full-screen program
// redrawing (cursor moves, colours and DEC private modes on every line).
var (
	benchLsColor = benchOutput(func(b *strings.Builder, i int) {
		colours := [...]string{"01;34", "00", "01;32", "01;36", "00"}
		fmt.Fprintf(b, "-rw-r--r--  1 user user %6d Jan %2d 12:%02d \x1b[%sm%s-%d.go\x1b[0m\r\n",
			i*37%100000, i%28+1, i%60, colours[i%len(colours)], "file-name", i)
	})
	benchPlain = benchOutput(func(b *strings.Builder, i int) {
		fmt.Fprintf(b, "2026-01-01T00:00:%02dZ INFO request handled path=/api/v1/items/%d status=200 dur=%dms\r\n",
			i%60, i, i%97)
	})
	benchRedraw = benchOutput(func(b *strings.Builder, i int) {
		if i%40 == 0 {
			b.WriteString("\x1b[?25l\x1b[H")
		}
		fmt.Fprintf(b, "\x1b[%d;1H\x1b[38;5;%dm%4d\x1b[0m %s\x1b[K", i%40+1, i%256, i, strings.Repeat("text ", 12))
		if i%40 == 39 {
			b.WriteString("\x1b[?25h")
		}
	})
)

func benchOutput(line func(*strings.Builder, int)) string {
	var b strings.Builder
	for i := 0; b.Len() < benchChunk; i++ {
		line(&b, i)
	}
	return b.String()[:benchChunk]
}

var benchShapes = []struct{ name, chunk string }{
	{"lscolor", benchLsColor},
	{"plain", benchPlain},
	{"redraw", benchRedraw},
}

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
