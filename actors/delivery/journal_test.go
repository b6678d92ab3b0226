package delivery

import (
	"fmt"
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestJournalReplaysWhatTheRingHolds(t *testing.T) {
	j := NewJournal(100, 1<<20)
	for i := 0; i < 250; i++ {
		ch := fmt.Sprintf("c%d", i%2)
		j.Stamp(&messages.Envelope{Channel: ch, Action: messages.DataAction(fmt.Sprint(i))})
	}
	// The ring holds the last 100 (seq 151..250).
	if _, ok := j.Replay(149, map[string]bool{"c0": true}); ok {
		t.Fatal("replay from before the ring's start claimed to be complete")
	}
	frames, ok := j.Replay(150, map[string]bool{"c0": true})
	if !ok || len(frames) != 50 {
		t.Fatalf("replay from 150 on c0: ok=%v %d frames, want 50", ok, len(frames))
	}
	frames, _ = j.Replay(240, map[string]bool{"c0": true, "c1": true})
	if len(frames) != 10 {
		t.Fatalf("replay from 240: %d frames, want 10", len(frames))
	}
}

func TestJournalByteBound(t *testing.T) {
	j := NewJournal(1000, 10_000)
	for i := 0; i < 100; i++ {
		j.Stamp(&messages.Envelope{Channel: "c", Action: messages.DataAction(string(make([]byte, 500)))})
	}
	if j.bytes > 10_000 {
		t.Fatalf("ring holds %d bytes, more than its bound", j.bytes)
	}
	if _, ok := j.Replay(j.Current()-2, map[string]bool{"c": true}); !ok {
		t.Fatal("the newest entries are not replayable")
	}
}

func BenchmarkJournalStampFullRing(b *testing.B) {
	j := NewJournal(8192, 16<<20)
	env := func() *messages.Envelope {
		return &messages.Envelope{Channel: "c", Action: messages.DataAction("hello\r\n")}
	}
	for i := 0; i < 10000; i++ {
		j.Stamp(env())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j.Stamp(env())
	}
}
