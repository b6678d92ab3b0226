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
	ring       []Entry // a circular buffer: count entries from head, oldest first
	head       int
	count      int
	bytes      int
	evictedMax uint64 // the highest serverSeq dropped from the ring
	// replaced names, per channel, where the last envelope StampReplacing recorded
	// sits in the ring: the next one takes its place.
	replaced map[string]ringRef
	holes    int // entries replaced and not yet compacted away or evicted
}

// ringRef is an entry's place in the ring and its serverSeq (a place is handed to
// another entry once the first is evicted).
type ringRef struct {
	slot int
	seq  uint64
}

// Entry is one envelope the journal recorded: what a reconnect needs to replay it
// without decoding its frame again.
type Entry struct {
	Seq     uint64 // its serverSeq
	Channel string // its channel's URI
	Frame   []byte // the frame as it went on the wire; nobody may change it
}

// Envelope is the envelope the frame carries, as a reconnect answer's replay sends it
// (PROTOCOL.md 2.4): its bytes, cut out of the frame.
func (e Entry) Envelope() json.RawMessage { return messages.EnvelopeOfFrame(e.Frame) }

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
	env.ServerSeq = j.Next()
	frame := messages.EnvelopeFrame(env)
	j.record(env.ServerSeq, env.Channel, frame)
	return frame
}

// StampReplacing is Stamp for an envelope that carries its channel's whole state of
// one kind (the root's root/terminalsChanged carries every terminal), so that the
// previous such envelope of the channel is dropped from the ring: a replay from
// before it gets the newer one, which leaves a client where both would. A host with
// a thousand terminals sends a list of a quarter of a megabyte at every change;
// kept, those lists would push everything else out of the ring within seconds and
// leave no reconnect able to resume. Only one kind per channel may use it.
func (j *Journal) StampReplacing(env *messages.Envelope) []byte {
	env.ServerSeq = j.Next()
	frame := messages.EnvelopeFrame(env)
	j.mu.Lock()
	defer j.mu.Unlock()
	if ref, ok := j.replaced[env.Channel]; ok {
		if e := &j.ring[ref.slot]; e.Seq == ref.seq && e.Frame != nil {
			j.bytes -= len(e.Frame)
			*e = Entry{Seq: e.Seq}
			j.holes++
		}
	}
	slot := j.recordLocked(env.ServerSeq, env.Channel, frame)
	if j.replaced == nil {
		j.replaced = map[string]ringRef{}
	}
	j.replaced[env.Channel] = ringRef{slot: slot, seq: env.ServerSeq}
	// A hole still takes a place in the ring; once they are half of it, they go.
	if 2*j.holes > j.count {
		j.compact()
	}
	return frame
}

// compact closes the ring's holes, keeping its entries in order from the head.
func (j *Journal) compact() {
	n := len(j.ring)
	kept := 0
	for i := 0; i < j.count; i++ {
		e := j.ring[(j.head+i)%n]
		if e.Frame == nil {
			continue
		}
		to := (j.head + kept) % n
		j.ring[to] = e
		if ref, ok := j.replaced[e.Channel]; ok && ref.seq == e.Seq {
			j.replaced[e.Channel] = ringRef{slot: to, seq: e.Seq}
		}
		kept++
	}
	for i := kept; i < j.count; i++ {
		j.ring[(j.head+i)%n] = Entry{}
	}
	j.count, j.holes = kept, 0
}

// StampData is Stamp for a terminal/data envelope on channel carrying data, with no
// origin: the frame is encoded in one pass (messages.DataFrame), as a flood's every
// chunk is.
func (j *Journal) StampData(channel, data string) []byte {
	j.mu.Lock()
	j.seq++
	seq := j.seq
	j.mu.Unlock()
	frame := messages.DataFrame(channel, data, seq)
	j.record(seq, channel, frame)
	return frame
}

func (j *Journal) record(seq uint64, channel string, frame []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recordLocked(seq, channel, frame)
}

// recordLocked records the entry and returns its slot in the ring.
func (j *Journal) recordLocked(seq uint64, channel string, frame []byte) int {
	// A ring of at most maxEntries: eviction moves the head, never the entries. It
	// grows by doubling until it reaches maxEntries.
	if j.count == len(j.ring) && len(j.ring) < j.maxEntries {
		grown := make([]Entry, min(max(2*len(j.ring), 64), j.maxEntries))
		for i := 0; i < j.count; i++ {
			grown[i] = j.ring[(j.head+i)%len(j.ring)]
		}
		for ch, ref := range j.replaced {
			ref.slot = (ref.slot - j.head + len(j.ring)) % len(j.ring)
			j.replaced[ch] = ref
		}
		j.ring, j.head = grown, 0
	}
	for j.count > 0 && (j.count == len(j.ring) || j.bytes+len(frame) > j.maxBytes) {
		j.evictOldest()
	}
	tail := (j.head + j.count) % len(j.ring)
	j.ring[tail] = Entry{seq, channel, frame}
	j.count++
	j.bytes += len(frame)
	return tail
}

func (j *Journal) evictOldest() {
	e := j.ring[j.head]
	j.bytes -= len(e.Frame)
	// A replaced entry takes nothing with it: the newer one is still behind it.
	if e.Frame == nil {
		j.holes--
	} else if e.Seq > j.evictedMax {
		j.evictedMax = e.Seq
	}
	j.ring[j.head] = Entry{}
	j.head = (j.head + 1) % len(j.ring)
	j.count--
}

// Replay returns the entries after lastSeen on the given channels, in serverSeq
// order, or ok=false when some of them have already left the ring.
func (j *Journal) Replay(lastSeen uint64, channels map[string]bool) (entries []Entry, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if lastSeen < j.evictedMax {
		return nil, false
	}
	for i := 0; i < j.count; i++ {
		e := j.ring[(j.head+i)%len(j.ring)]
		// A replaced entry has no channel left, so no replay takes it.
		if e.Seq > lastSeen && channels[e.Channel] {
			entries = append(entries, e)
		}
	}
	// Stamping and recording are two steps, so the ring is ordered per channel but may
	// interleave channels slightly out of order.
	sortEntries(entries)
	return entries, true
}

func sortEntries(es []Entry) {
	for i := 1; i < len(es); i++ {
		for k := i; k > 0 && es[k].Seq < es[k-1].Seq; k-- {
			es[k], es[k-1] = es[k-1], es[k]
		}
	}
}
