package actors

import (
	"context"
	"sync"

	"github.com/termhost/termhost/messages"
)

// Subscriber is what a channel actor hands its frames to. Deliver must never block:
// it is called from inside a Terminal's mailbox.
type Subscriber interface {
	Deliver(channel string, frame []byte)
}

// CloseReason names why the host ended a connection; it is the close frame's text.
type CloseReason string

// Reasons a connection is closed by the host.
const (
	ReasonSlowConsumer    CloseReason = "termhost: this connection fell too far behind reading its output; reconnect to get a snapshot"
	ReasonShutdown        CloseReason = "termhost: the host is shutting down"
	ReasonVersionMismatch CloseReason = "termhost: no protocol version in common"
)

// maxMergedFrame caps a frame built by merging queued terminal/data.
const maxMergedFrame = 1 << 20

// Outbox is one connection's outbound queue: producers append frames and never wait;
// one writer goroutine takes them in order. It is bounded in bytes: a connection whose
// pending bytes pass MaxBytes is closed with ReasonSlowConsumer rather than holding
// memory without bound or slowing a shell other people share.
type Outbox struct {
	maxBytes int
	onClose  func(CloseReason)

	mu      sync.Mutex // guards the fields below; never held across I/O
	frames  [][]byte
	pending int
	held    map[string][][]byte // channels waiting for their subscribe answer
	// tailOwned says the last queued frame was made by a merge here, so it is this
	// outbox's own and the next merge may append to it in place.
	tailOwned bool
	closed    bool
	finish    CloseReason // set by Finish: flush, then close with this reason
	wake      chan struct{}
}

// Finished is what Next returns once a finishing outbox has been flushed.
type Finished struct{ Reason CloseReason }

func (f *Finished) Error() string { return string(f.Reason) }

// NewOutbox makes a queue bounded at maxBytes pending; onClose runs once, outside the
// lock, when the outbox closes itself because of a limit.
func NewOutbox(maxBytes int, onClose func(CloseReason)) *Outbox {
	return &Outbox{maxBytes: maxBytes, onClose: onClose, held: map[string][][]byte{}, wake: make(chan struct{}, 1)}
}

// Deliver queues a channel's frame, or holds it while that channel's subscribe answer
// is still being made.
func (o *Outbox) Deliver(channel string, frame []byte) {
	o.mu.Lock()
	if o.closed || o.finish != "" {
		o.mu.Unlock()
		return
	}
	if h, ok := o.held[channel]; ok {
		o.held[channel] = append(h, frame)
		o.pending += len(frame)
	} else if n := len(o.frames); channel != "" && n > 0 && len(o.frames[n-1]) < maxMergedFrame {
		// A connection behind its output gets adjacent terminal/data of one channel
		// merged into one frame: fewer, larger writes for whoever is slowest.
		if merged, ok := messages.MergeDataFramesInto(o.frames[n-1], frame, o.tailOwned); ok {
			o.pending += len(merged) - len(o.frames[n-1])
			o.frames[n-1] = merged
			o.tailOwned = true
		} else {
			o.frames = append(o.frames, frame)
			o.pending += len(frame)
			o.tailOwned = false
		}
	} else {
		o.frames = append(o.frames, frame)
		o.pending += len(frame)
		o.tailOwned = false
	}
	over := o.maxBytes > 0 && o.pending > o.maxBytes
	o.mu.Unlock()
	if over {
		o.fail(ReasonSlowConsumer)
		return
	}
	o.signal()
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
	if answer != nil {
		o.frames = append(o.frames, answer)
		o.pending += len(answer)
	}
	for _, ch := range channels {
		o.frames = append(o.frames, o.held[ch]...)
		delete(o.held, ch)
	}
	o.mu.Unlock()
	o.signal()
}

func (o *Outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Next waits for frames and takes all of them.
func (o *Outbox) Next(ctx context.Context) ([][]byte, error) {
	for {
		o.mu.Lock()
		if len(o.frames) > 0 {
			out := o.frames
			o.frames = nil
			o.tailOwned = false
			for _, f := range out {
				o.pending -= len(f)
			}
			o.mu.Unlock()
			return out, nil
		}
		closed, finish := o.closed, o.finish
		o.mu.Unlock()
		if finish != "" {
			return nil, &Finished{finish}
		}
		if closed {
			return nil, context.Canceled
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
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
