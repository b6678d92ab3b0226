package delivery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

func dataFrame(channel, text string, seq uint64) []byte {
	return messages.EnvelopeFrame(&messages.Envelope{Channel: channel, Action: messages.DataAction(text), ServerSeq: seq})
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A subscriber that allows coalescing gets its output held, merged, and sent the
// moment anything else must go, in order.
func TestOutboxHoldsDataWithinTheSubscribersLatency(t *testing.T) {
	const ch = "ahp-terminal:/t"
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetLatency(ch, time.Minute)
	o.Deliver(ch, dataFrame(ch, "one ", 1))
	o.Deliver(ch, dataFrame(ch, "two ", 2))
	o.Deliver(ch, dataFrame(ch, "three", 3))
	if frames, err := o.Next(cancelled()); err == nil {
		t.Fatalf("Next gave %d frames within the latency window", len(frames))
	}
	o.Send([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`))
	frames, err := o.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 2 {
		t.Fatalf("got %d frames, want the merged output then the answer", len(frames))
	}
	if got := string(frames[0]); !strings.Contains(got, `"data":"one two three"`) || !strings.Contains(got, `"serverSeq":3`) {
		t.Fatalf("merged frame %s, want all three outputs and the last serverSeq", got)
	}
}

// With no latency asked for, output goes at once.
func TestOutboxSendsDataAtOnceByDefault(t *testing.T) {
	const ch = "ahp-terminal:/t"
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.Deliver(ch, dataFrame(ch, "now", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if frames, err := o.Next(ctx); err != nil || len(frames) != 1 {
		t.Fatalf("Next = %d frames, %v; want the one frame at once", len(frames), err)
	}
}

// Held output still goes when its time is up, with nothing else to push it.
func TestOutboxSendsHeldDataWhenTheLatencyEnds(t *testing.T) {
	const ch = "ahp-terminal:/t"
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20}, nil)
	o.SetLatency(ch, time.Millisecond)
	o.Deliver(ch, dataFrame(ch, "late", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if frames, err := o.Next(ctx); err != nil || len(frames) != 1 {
		t.Fatalf("Next = %d frames, %v; want the held frame", len(frames), err)
	}
}

// A connection that stays behind on a channel past the grace is closed as slow; one
// that catches up (the writer took the queue) starts afresh.
func TestOutboxClosesAConnectionThatStaysBehind(t *testing.T) {
	const ch = "ahp-terminal:/t"
	var reason CloseReason
	o := NewOutbox(OutboxLimits{Bytes: 1 << 20, ChannelBytes: 10, Grace: 0}, func(r CloseReason) { reason = r })
	o.Deliver(ch, dataFrame(ch, "more than ten bytes", 1))
	if reason != "" {
		t.Fatalf("closed on first falling behind: %s", reason)
	}
	if _, err := o.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Deliver(ch, dataFrame(ch, "more than ten bytes", 2))
	if reason != "" {
		t.Fatalf("closed after catching up: %s", reason)
	}
	o.Deliver(ch, dataFrame(ch, "still behind", 3))
	if reason != ReasonSlowConsumer {
		t.Fatalf("close reason %q, want %q", reason, ReasonSlowConsumer)
	}
}

// Past the hard bound a connection is closed at once, grace or not.
func TestOutboxClosesAtTheHardBound(t *testing.T) {
	const ch = "ahp-terminal:/t"
	var reason CloseReason
	o := NewOutbox(OutboxLimits{Bytes: 64, ChannelBytes: 1 << 20, Grace: time.Hour}, func(r CloseReason) { reason = r })
	o.Deliver(ch, dataFrame(ch, strings.Repeat("x", 100), 1))
	if reason != ReasonSlowConsumer {
		t.Fatalf("close reason %q, want %q", reason, ReasonSlowConsumer)
	}
}

// A connection behind a flood gets its small chunks merged, but a flood's large
// chunks as they were made: every subscriber's outbox holds the same bytes, not a
// copy of its own (issue 13, fanout). Nothing is lost or reordered either way.
func TestOutboxMergesSmallOutputNotAFloodsChunks(t *testing.T) {
	const ch = "ahp-terminal:/t"
	o := NewOutbox(OutboxLimits{Bytes: 8 << 20}, nil)
	o.SetLatency(ch, time.Minute)
	big := strings.Repeat("x", 40<<10)
	first, second := dataFrame(ch, big, 1), dataFrame(ch, big, 2)
	o.Deliver(ch, first)
	o.Deliver(ch, second)
	o.Deliver(ch, dataFrame(ch, "a", 3))
	o.Deliver(ch, dataFrame(ch, "b", 4))
	o.Send([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`))
	frames, err := o.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 3 {
		t.Fatalf("got %d frames, want the first chunk, the second with the small ones merged in, then the answer", len(frames))
	}
	if &frames[0][0] != &first[0] {
		t.Error("the first chunk was copied")
	}
	if got := string(frames[1]); !strings.Contains(got, `"data":"`+big+`ab"`) || !strings.Contains(got, `"serverSeq":4`) {
		t.Errorf("second frame %.80s…, want the second chunk then \"ab\", serverSeq 4", got)
	}
}
