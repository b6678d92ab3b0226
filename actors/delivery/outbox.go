package delivery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/versioning"
)

// Subscriber is what a channel actor hands its frames to. Deliver must never block:
// it is called from inside a Terminal's mailbox.
type Subscriber interface {
	Deliver(channel string, frame []byte)
}

// CatalogSubscriber is a root subscriber that is also told of the session catalog:
// the root/sessionAdded and root/sessionRemoved notifications the protocol sends
// every root subscriber that may read sessions. The subscriber decides whether its
// person may (the root's subscriber set carries no principal).
type CatalogSubscriber interface {
	Subscriber
	DeliverCatalog(frame []byte)
}

// CloseReason names why the host ended a connection; it is the close frame's text.
type CloseReason string

// Reasons a connection is closed by the host.
const (
	ReasonSlowConsumer    CloseReason = "termhost: this connection fell too far behind reading its output; reconnect to get a snapshot"
	ReasonShutdown        CloseReason = "termhost: the host is shutting down"
	ReasonVersionMismatch CloseReason = "termhost: no protocol version in common"
	ReasonSignedOut       CloseReason = "termhost: this connection's token was revoked"
	ReasonRightsChanged   CloseReason = "termhost: this connection may no longer read a channel it is subscribed to; reconnect to see what it may"
)

// maxMergedFrame caps a frame built by merging queued terminal/data. Merging turns
// many small frames into fewer writes; a flood's frames come near this size already
// (the terminal gathers up to 256 KiB), and merging those saved a write per frame
// but copied every frame once more for each subscriber: with 50 subscribers that
// copy (and the fresh buffer it needs) was an eighth of the CPU (issue 13's fanout
// profile), more than the writes it saved.
const maxMergedFrame = 64 << 10

// maxLatency caps a subscriber's delivery.maxLatencyMs: output held longer than this
// would look like a hung terminal, and the queue's bounds apply meanwhile anyway.
const maxLatency = time.Second

// OutboxLimits bound one connection's queue.
type OutboxLimits struct {
	// Bytes is the most that may wait unsent; past it the connection is closed at
	// once, so a connection's memory has a hard bound.
	Bytes int
	// ChannelBytes is how far one channel may fall behind: past a terminal's
	// scrollback cap, a fresh snapshot carries less than the backlog. A connection
	// that stays past it for longer than Grace is closed. 0 means no such limit.
	ChannelBytes int
	// Grace is how long a connection may stay past ChannelBytes: a burst a client
	// catches up with is not a slow client.
	Grace time.Duration
}

// Outbox is one connection's outbound queue: producers append frames and never wait;
// one writer goroutine takes them in order. It is bounded in bytes (OutboxLimits): a
// connection that falls too far behind is closed with ReasonSlowConsumer rather than
// holding memory without bound or slowing a shell other people share.
//
// A channel subscribed with delivery.maxLatencyMs may have its terminal/data held for
// up to that long, so adjacent output is merged into fewer, larger frames; anything
// else queued sends everything before it at once, so order never changes.
type Outbox struct {
	limits  OutboxLimits
	onClose func(CloseReason)
	// gate holds back the actions the connection's protocol version does not know;
	// nil (every current version) holds back nothing.
	gate atomic.Pointer[versioning.ActionGate]
	// catalog says whether the connection may see the session catalog's
	// notifications (root/sessionAdded, root/sessionRemoved): whether its person may
	// read sessions. Set at the handshake and again whenever rights are rechecked.
	catalog atomic.Bool

	mu        sync.Mutex // guards the fields below; never held across I/O
	frames    [][]byte
	pending   int
	byChannel map[string]int      // pending bytes per channel
	held      map[string][][]byte // channels waiting for their subscribe answer
	latency   map[string]time.Duration
	// dueNow says a queued frame is to go at once; otherwise due is when the
	// earliest held terminal/data must go (zero with nothing queued).
	dueNow bool
	due    time.Time
	// behindSince is when a channel first went past ChannelBytes, zero while none is.
	behindSince time.Time
	// tailOwned says the last queued frame was made by a merge here, so it is this
	// outbox's own and the next merge may append to it in place.
	tailOwned bool
	closed    bool
	finish    CloseReason // set by Finish: flush, then close with this reason
	wake      chan struct{}

	// direct, when set, lets a producer write what is due on its own goroutine
	// (see SetDirect); busy says someone (a producer, or the writer between Next and
	// Wrote) is writing a batch, and nobody else may start one.
	direct Direct
	busy   bool
}

// Direct writes a batch on the goroutine that queued it, for an outbox whose writer
// is idle: a keystroke's echo is then written by the socket reader that read the
// keystroke, and its output by the pseudoterminal's reader, and the writer goroutine
// is not woken for either (issue 13: each wake-up costs tens of microseconds on a
// paravirtualised VM). Room must say whether n bytes go out at once without waiting
// for the peer, so that a producer (a terminal's mailbox) never blocks on a slow
// client; when it says no, the writer goroutine takes the batch as before.
type Direct interface {
	Room(n int) bool
	Write(frames [][]byte) error
}

// directBytes is the most a producer writes itself: a keystroke's frames, not a
// flood's (whose frames the writer merges while it is behind).
const directBytes = 4 << 10

// directAloneBytes is the most a producer writes itself for a frame this outbox is
// the only subscriber of (DeliverAlone): a flood's chunk to its one reader then goes
// out from the pty's reader, with no hand-off to the writer goroutine and no thread
// woken for it (issue 13: the busy machine's CPU per MB, 20 -> 17 ms). With more
// subscribers the writer goroutines still write, so that the writes of one chunk to
// many connections spread over the CPUs rather than run one after another on the
// reader's (the fanout scenario's 50 subscribers carried less that way). It is a
// flood chunk's largest frame (the terminal's reader gathers up to 256 KiB, escaped
// here in a few percent more) with room to spare.
const directAloneBytes = 384 << 10

// AloneSubscriber is a Subscriber that can be told it is a frame's only subscriber
// (see Outbox.DeliverAlone).
type AloneSubscriber interface {
	Subscriber
	DeliverAlone(channel string, frame []byte)
}

// directRounds bounds how many batches in a row one producer writes before leaving
// the rest to the writer goroutine.
const directRounds = 4

// Finished is what Next returns once a finishing outbox has been flushed.
type Finished struct{ Reason CloseReason }

func (f *Finished) Error() string { return string(f.Reason) }

// NewOutbox makes a queue bounded by limits; onClose runs once, outside the lock,
// when the outbox closes itself because of a limit.
func NewOutbox(limits OutboxLimits, onClose func(CloseReason)) *Outbox {
	return &Outbox{
		limits:    limits,
		onClose:   onClose,
		byChannel: map[string]int{},
		held:      map[string][][]byte{},
		latency:   map[string]time.Duration{},
		wake:      make(chan struct{}, 1),
	}
}

// SetDirect lets producers write an idle outbox's due frames themselves (see
// Direct). It is set before the outbox is handed to any producer. The writer that
// uses Next must then call Wrote after writing each batch Next returned.
func (o *Outbox) SetDirect(d Direct) {
	o.mu.Lock()
	o.direct = d
	o.mu.Unlock()
}

// SetLatency sets how long the channel's terminal/data may be held for merging (the
// subscriber's delivery.maxLatencyMs); 0 sends each at once. It is capped at a second.
func (o *Outbox) SetLatency(channel string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d <= 0 {
		delete(o.latency, channel)
		return
	}
	o.latency[channel] = min(d, maxLatency)
}

// Gate sets what holds back the actions the connection's negotiated version does not
// know (nil: nothing); it is set at the handshake, before any channel is subscribed.
func (o *Outbox) Gate(g *versioning.ActionGate) { o.gate.Store(g) }

// ShowCatalog sets whether the session catalog's notifications reach this
// connection (see CatalogSubscriber).
func (o *Outbox) ShowCatalog(may bool) { o.catalog.Store(may) }

// DeliverCatalog queues a notification of the session catalog on the root channel,
// when this connection may see it; it is ordered with the root's actions, and held
// like them while the root's subscribe answer is being made.
func (o *Outbox) DeliverCatalog(frame []byte) {
	if o.catalog.Load() {
		o.Deliver(messages.RootURI, frame)
	}
}

// Deliver queues a channel's frame, or holds it while that channel's subscribe answer
// is still being made.
func (o *Outbox) Deliver(channel string, frame []byte) {
	echotrace.Mark("outbox deliver")
	o.deliver(channel, directBytes, frame)
}

// DeliverAlone is Deliver for a frame this outbox is the only subscriber of: a
// frame of a flood's size is written directly too (see directAloneBytes).
func (o *Outbox) DeliverAlone(channel string, frame []byte) {
	o.deliver(channel, directAloneBytes, frame)
}

// DeliverBatch queues several frames of a channel in order, as Deliver queues each,
// but writes them together: frames that arrive together (an echo and the output it
// caused, from another node) go out in one write, and the client reads them at one
// wake-up.
func (o *Outbox) DeliverBatch(channel string, frames [][]byte) {
	o.deliver(channel, directBytes, frames...)
}

func (o *Outbox) deliver(channel string, limit int, frames ...[]byte) {
	o.mu.Lock()
	if o.closed || o.finish != "" {
		o.mu.Unlock()
		return
	}
	wake, behind := false, false
	g := o.gate.Load()
	for _, frame := range frames {
		if g != nil && channel != "" && !g.Admits(frame) {
			continue
		}
		w, b := o.queueLocked(channel, frame)
		wake, behind = wake || w, behind || b
	}
	over := behind || (o.limits.Bytes > 0 && o.pending > o.limits.Bytes)
	var direct [][]byte
	if !over && o.mayWriteDirectLocked(limit) {
		direct = o.takeLocked()
		o.busy = true
	} else if o.busy {
		wake = false // whoever is writing looks at the queue when done
	}
	o.mu.Unlock()
	if over {
		o.fail(ReasonSlowConsumer)
		return
	}
	if direct != nil {
		o.writeDirect(direct, limit)
		return
	}
	if wake {
		o.signal()
	}
}

// queueLocked queues or holds one frame of a channel; it reports whether the writer
// must be woken, and whether the channel has been behind for too long. o.mu is held.
func (o *Outbox) queueLocked(channel string, frame []byte) (wake, behind bool) {
	before := o.pending
	if h, ok := o.held[channel]; ok {
		o.held[channel] = append(h, frame)
		o.pending += len(frame)
		return false, false
	}
	if n := len(o.frames); channel != "" && n > 0 && len(o.frames[n-1])+len(frame) <= maxMergedFrame {
		// A connection behind its output gets adjacent terminal/data of one channel
		// merged into one frame: fewer, larger writes for whoever is slowest.
		if merged, ok := messages.MergeDataFramesInto(o.frames[n-1], frame, o.tailOwned); ok {
			o.pending += len(merged) - len(o.frames[n-1])
			o.frames[n-1] = merged
			o.tailOwned = true
		} else {
			o.push(frame)
		}
	} else {
		o.push(frame)
	}
	wake = o.schedule(channel, frame)
	if channel != "" {
		o.byChannel[channel] += o.pending - before
		behind = o.stillBehind(o.byChannel[channel])
	}
	return wake, behind
}

// mayWriteDirectLocked reports whether the producer holding o.mu may write what is
// queued itself: a direct writer is set, nobody is writing, everything queued is due
// now and at most limit bytes.
func (o *Outbox) mayWriteDirectLocked(limit int) bool {
	return o.direct != nil && !o.busy && !o.closed && o.finish == "" && o.dueNow &&
		len(o.frames) > 0 && o.pending <= limit
}

// takeLocked takes every queued frame for writing; o.mu is held.
func (o *Outbox) takeLocked() [][]byte {
	out := o.frames
	o.frames = nil
	o.tailOwned = false
	o.dueNow, o.due = false, time.Time{}
	o.behindSince = time.Time{}
	for _, f := range out {
		o.pending -= len(f)
	}
	clear(o.byChannel)
	return out
}

// writeDirect writes frames, taken by this producer with o.busy set, on its own
// goroutine if the socket has room, and what was queued meanwhile after them (a few
// batches at most); anything else is left to the writer goroutine.
func (o *Outbox) writeDirect(frames [][]byte, limit int) {
	for round := 1; ; round++ {
		n := 0
		for _, f := range frames {
			n += len(f)
		}
		if !o.direct.Room(n) {
			o.mu.Lock()
			o.frames = append(frames, o.frames...)
			o.pending += n
			o.tailOwned = false
			o.dueNow = true
			o.busy = false
			o.mu.Unlock()
			o.signal()
			return
		}
		echotrace.Mark("outbox direct write")
		if err := o.direct.Write(frames); err != nil {
			o.Close() // as the writer does on a failed write; it then ends
			return
		}
		o.mu.Lock()
		if round < directRounds && o.mayWriteDirectBusyLocked(limit) {
			frames = o.takeLocked()
			o.mu.Unlock()
			continue
		}
		o.busy = false
		more := len(o.frames) > 0 || o.finish != "" || o.closed
		o.mu.Unlock()
		if more {
			o.signal()
		}
		return
	}
}

// mayWriteDirectBusyLocked is mayWriteDirectLocked for the producer that is
// already writing.
func (o *Outbox) mayWriteDirectBusyLocked(limit int) bool {
	o.busy = false
	ok := o.mayWriteDirectLocked(limit)
	o.busy = true
	return ok
}

// push appends a frame that was not merged; o.mu is held.
func (o *Outbox) push(frame []byte) {
	o.frames = append(o.frames, frame)
	o.pending += len(frame)
	o.tailOwned = false
}

// schedule moves the queue's due time for a frame just queued, and reports whether
// the writer must be woken to honour it; o.mu is held.
func (o *Outbox) schedule(channel string, frame []byte) bool {
	if o.dueNow {
		return false // the writer is already on its way
	}
	lat := o.latency[channel]
	if lat == 0 || !messages.IsDataFrame(frame) {
		o.dueNow = true
		return true
	}
	at := time.Now().Add(lat)
	if o.due.IsZero() || at.Before(o.due) {
		o.due = at
		return true
	}
	return false
}

// stillBehind reports whether a channel with pending bytes queued has been past
// ChannelBytes for longer than the grace; o.mu is held.
func (o *Outbox) stillBehind(pending int) bool {
	if o.limits.ChannelBytes <= 0 || pending <= o.limits.ChannelBytes {
		return false
	}
	now := time.Now()
	if o.behindSince.IsZero() {
		o.behindSince = now
		return false
	}
	return now.Sub(o.behindSince) >= o.limits.Grace
}

// Send queues a frame that belongs to no channel (an answer).
func (o *Outbox) Send(frame []byte) { o.Deliver("", frame) }

// Hold starts holding a channel's frames until Release.
func (o *Outbox) Hold(channel string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.held[channel]; !ok {
		o.held[channel] = nil
	}
}

// Release queues answer (if any), then every frame held for the channels, in order.
func (o *Outbox) Release(answer []byte, channels ...string) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.tailOwned = false
	o.dueNow = true
	if answer != nil {
		o.frames = append(o.frames, answer)
		o.pending += len(answer)
	}
	for _, ch := range channels {
		for _, f := range o.held[ch] {
			o.frames = append(o.frames, f)
			o.byChannel[ch] += len(f)
		}
		delete(o.held, ch)
	}
	// A subscribe's answer and the output held behind it (a terminal just opened)
	// are written here too while the writer is idle.
	var direct [][]byte
	if o.mayWriteDirectLocked(directBytes) {
		direct = o.takeLocked()
		o.busy = true
	}
	busy := o.busy
	o.mu.Unlock()
	if direct != nil {
		o.writeDirect(direct, directBytes)
		return
	}
	if !busy {
		o.signal()
	}
}

func (o *Outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Next waits for frames that are due (see Outbox) and takes all of them.
func (o *Outbox) Next(ctx context.Context) ([][]byte, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		o.mu.Lock()
		closed, finish := o.closed, o.finish
		// While a producer writes a batch, nothing else may start one; it wakes
		// the writer when it is done.
		busy := o.busy && !closed
		have := len(o.frames) > 0 && !busy
		var wait time.Duration
		if have {
			if !o.dueNow && finish == "" {
				wait = time.Until(o.due)
			}
			if wait <= 0 {
				out := o.takeLocked()
				o.busy = o.direct != nil // until Wrote
				o.mu.Unlock()
				return out, nil
			}
		}
		o.mu.Unlock()
		if !have && !busy {
			if finish != "" {
				return nil, &Finished{finish}
			}
			if closed {
				return nil, context.Canceled
			}
		}
		var fire <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C
		}
		select {
		case <-o.wake:
		case <-fire:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Wrote tells an outbox with a direct writer that the batch Next returned is
// written, so producers may write again.
func (o *Outbox) Wrote() {
	o.mu.Lock()
	o.busy = false
	o.mu.Unlock()
}

// Finish accepts no more frames; the writer flushes what is queued, then Next
// returns *Finished with the reason the connection is to be closed with.
func (o *Outbox) Finish(reason CloseReason) {
	o.mu.Lock()
	if o.finish == "" {
		o.finish = reason
	}
	o.mu.Unlock()
	o.signal()
}

// Pending is the number of bytes queued and not yet taken by the writer.
func (o *Outbox) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending
}

// Close drops everything queued; later deliveries are ignored.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.frames, o.held, o.pending = nil, map[string][][]byte{}, 0
	clear(o.byChannel)
	o.mu.Unlock()
	o.signal()
}

func (o *Outbox) fail(reason CloseReason) {
	o.mu.Lock()
	already := o.closed
	o.mu.Unlock()
	if already {
		return
	}
	o.Close()
	if o.onClose != nil {
		o.onClose(reason)
	}
}
