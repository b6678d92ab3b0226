package delivery

import (
	"encoding/json"
	"sync"

	"github.com/termhost/termhost/messages"
)

// Journal is the host-wide serverSeq counter and the ring of recent envelopes that
// reconnect replays from (PROTOCOL.md 2.4). It is shared by every channel actor; a
// mutex rather than an actor because every envelope of every terminal passes through
// it and an extra mailbox hop per chunk of output would cost more than the lock.
type Journal struct {
	maxEntries int
	maxBytes   int

	mu         sync.Mutex // guards the fields below
	seq        uint64
	ring       []journalEntry // a circular buffer: count entries from head, oldest first
	head       int
	count      int
	bytes      int
	evictedMax uint64 // the highest serverSeq dropped from the ring
}

type journalEntry struct {
	seq     uint64
	channel string
	frame   []byte
}

// NewJournal keeps at most maxEntries envelopes and maxBytes of encoded frames.
func NewJournal(maxEntries, maxBytes int) *Journal {
	maxEntries = max(maxEntries, 1)
	return &Journal{maxEntries: maxEntries, maxBytes: maxBytes}
}

// Current is the last serverSeq handed out.
func (j *Journal) Current() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Next hands out the next serverSeq without recording anything: for envelopes that go
// to one connection only, such as a rejected dispatch.
func (j *Journal) Next() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	return j.seq
}

// Reject echoes a client's dispatch to its sender alone, with the reason it was
// refused. The echo takes a serverSeq, as every envelope must carry one, but is not
// recorded for replay: nobody else saw it, and reducers do not apply it.
func (j *Journal) Reject(to Subscriber, channel string, action json.RawMessage, origin messages.Origin, reason string) {
	env := &messages.Envelope{Channel: channel, Action: action, Origin: &origin, RejectionReason: reason, ServerSeq: j.Next()}
	to.Deliver(channel, messages.EnvelopeFrame(env))
}

// Stamp gives env the next serverSeq, encodes it, and records it for replay.
func (j *Journal) Stamp(env *messages.Envelope) []byte {
	j.mu.Lock()
	j.seq++
	env.ServerSeq = j.seq
	j.mu.Unlock()
	frame := messages.EnvelopeFrame(env)
	j.record(env.ServerSeq, env.Channel, frame)
	return frame
}

func (j *Journal) record(seq uint64, channel string, frame []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	// A ring of at most maxEntries: eviction moves the head, never the entries. It
	// grows by doubling until it reaches maxEntries.
	if j.count == len(j.ring) && len(j.ring) < j.maxEntries {
		grown := make([]journalEntry, min(max(2*len(j.ring), 64), j.maxEntries))
		for i := 0; i < j.count; i++ {
			grown[i] = j.ring[(j.head+i)%len(j.ring)]
		}
		j.ring, j.head = grown, 0
	}
	for j.count > 0 && (j.count == len(j.ring) || j.bytes+len(frame) > j.maxBytes) {
		j.evictOldest()
	}
	tail := (j.head + j.count) % len(j.ring)
	j.ring[tail] = journalEntry{seq, channel, frame}
	j.count++
	j.bytes += len(frame)
}

func (j *Journal) evictOldest() {
	e := j.ring[j.head]
	j.bytes -= len(e.frame)
	if e.seq > j.evictedMax {
		j.evictedMax = e.seq
	}
	j.ring[j.head] = journalEntry{}
	j.head = (j.head + 1) % len(j.ring)
	j.count--
}

// Replay returns the frames after lastSeen on the given channels, in serverSeq order,
// or ok=false when some of them have already left the ring.
func (j *Journal) Replay(lastSeen uint64, channels map[string]bool) (frames [][]byte, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if lastSeen < j.evictedMax {
		return nil, false
	}
	var picked []journalEntry
	for i := 0; i < j.count; i++ {
		e := j.ring[(j.head+i)%len(j.ring)]
		if e.seq > lastSeen && channels[e.channel] {
			picked = append(picked, e)
		}
	}
	// Stamping and recording are two steps, so the ring is ordered per channel but may
	// interleave channels slightly out of order.
	sortEntries(picked)
	for _, e := range picked {
		frames = append(frames, e.frame)
	}
	return frames, true
}

func sortEntries(es []journalEntry) {
	for i := 1; i < len(es); i++ {
		for k := i; k > 0 && es[k].seq < es[k-1].seq; k-- {
			es[k], es[k-1] = es[k-1], es[k]
		}
	}
}
