package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
	entries, ok := j.Replay(150, map[string]bool{"c0": true})
	if !ok || len(entries) != 50 {
		t.Fatalf("replay from 150 on c0: ok=%v %d entries, want 50", ok, len(entries))
	}
	entries, _ = j.Replay(240, map[string]bool{"c0": true, "c1": true})
	if len(entries) != 10 {
		t.Fatalf("replay from 240: %d entries, want 10", len(entries))
	}
}

// An entry carries what a reconnect needs without decoding its frame: the serverSeq,
// the channel, and the envelope exactly as the frame carried it.
func TestJournalEntriesNameTheirEnvelopes(t *testing.T) {
	j := NewJournal(100, 1<<20)
	var frames [][]byte
	for i := range 6 {
		env := &messages.Envelope{Channel: fmt.Sprintf("c%d", i%3), Action: messages.DataAction(fmt.Sprint(i))}
		frames = append(frames, j.Stamp(env))
	}
	entries, ok := j.Replay(1, map[string]bool{"c0": true, "c2": true})
	if !ok {
		t.Fatal("replay of what the ring holds is not complete")
	}
	var seqs []uint64
	for _, e := range entries {
		seqs = append(seqs, e.Seq)
		var n struct {
			Params messages.Envelope `json:"params"`
		}
		if err := json.Unmarshal(e.Frame, &n); err != nil {
			t.Fatalf("entry %d: frame is not JSON: %v", e.Seq, err)
		}
		if n.Params.ServerSeq != e.Seq || n.Params.Channel != e.Channel {
			t.Fatalf("entry says serverSeq %d on %s; its frame says %d on %s", e.Seq, e.Channel, n.Params.ServerSeq, n.Params.Channel)
		}
		if !bytes.Equal(e.Frame, frames[e.Seq-1]) {
			t.Fatalf("entry %d: frame %s, stamped %s", e.Seq, e.Frame, frames[e.Seq-1])
		}
		if want := []byte(`{"jsonrpc":"2.0","method":"action","params":` + string(e.Envelope()) + `}`); !bytes.Equal(want, e.Frame) {
			t.Fatalf("entry %d: envelope %s is not the frame's params: %s", e.Seq, e.Envelope(), e.Frame)
		}
	}
	if fmt.Sprint(seqs) != "[3 4 6]" {
		t.Fatalf("replayed serverSeqs %v, want [3 4 6]", seqs)
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

// A root list replaces the one before it in the ring, so a host sending large lists
// at every change keeps its replay window: a client that dropped before a terminal's
// output and a thousand lists resumes, and is replayed that output and the newest
// list only, in order, with everything else of the root between them.
func TestJournalReplacedListsKeepTheReplayWindow(t *testing.T) {
	// Each list is about 1 KiB; the ring holds 8 KiB, and 64 entries so that it grows
	// (and the place of the last list moves) on the way.
	j := NewJournal(64, 8<<10)
	list := func(n int) *messages.Envelope {
		return &messages.Envelope{Channel: "root", Action: json.RawMessage(fmt.Sprintf(`{"type":"root/terminalsChanged","n":%d,"pad":"%s"}`, n, strings.Repeat("x", 1000)))}
	}
	j.StampReplacing(list(0))
	before := j.Current()
	j.Stamp(&messages.Envelope{Channel: "term", Action: messages.DataAction("output")})
	for i := 1; i <= 1000; i++ {
		j.StampReplacing(list(i))
		if i == 500 {
			j.Stamp(&messages.Envelope{Channel: "root", Action: json.RawMessage(`{"type":"root/configChanged","config":{}}`)})
		}
	}
	if j.bytes > 8<<10 {
		t.Fatalf("the ring holds %d bytes, more than its bound", j.bytes)
	}
	got, ok := j.Replay(before, map[string]bool{"root": true, "term": true})
	if !ok {
		t.Fatal("a client from before the lists cannot resume: the lists pushed the output out of the ring")
	}
	var kinds []string
	for _, e := range got {
		var a struct {
			Type string `json:"type"`
			N    int    `json:"n"`
		}
		var env struct {
			Action json.RawMessage `json:"action"`
		}
		if err := json.Unmarshal(e.Envelope(), &env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(env.Action, &a); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, fmt.Sprintf("%s:%d", a.Type, a.N))
	}
	want := "[terminal/data:0 root/configChanged:0 root/terminalsChanged:1000]"
	if fmt.Sprint(kinds) != want {
		t.Fatalf("replayed %v, want %s", kinds, want)
	}
	// Other entries still leave the ring by age and size, and then a replay from
	// before them is refused as before.
	for i := 0; i < 100; i++ {
		j.Stamp(&messages.Envelope{Channel: "term", Action: messages.DataAction(strings.Repeat("y", 500))})
	}
	if _, ok := j.Replay(before, map[string]bool{"root": true, "term": true}); ok {
		t.Fatal("a replay from before evicted output was allowed")
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

// BenchmarkKeystrokeStamp is a keystroke's output on its way out: the terminal/data
// envelope stamped (serverSeq, encoded, recorded for replay), queued on a
// connection's outbox and taken by its writer.
func BenchmarkKeystrokeStamp(b *testing.B) {
	j := NewJournal(8192, 16<<20)
	o := NewOutbox(OutboxLimits{Bytes: 16 << 20}, nil)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		frame := j.Stamp(&messages.Envelope{Channel: "ahp-terminal:/bench-t1", Action: messages.DataAction("l")})
		o.Deliver("ahp-terminal:/bench-t1", frame)
		if fs, err := o.Next(ctx); err != nil || len(fs) != 1 {
			b.Fatal(err)
		}
	}
}
