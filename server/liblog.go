package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// repeatWindow is how long a library's log message, once written, is held back when
// it comes again. protoactor-go's seeds provider, for one, logs an unreachable seed
// at ERROR once a second for as long as the node is down; a node that stays lost
// would otherwise fill an operator's log with the same line.
const repeatWindow = time.Minute

// onceAWhile writes a record whose message was written less than window ago only as
// a count: the next time the message is written, it carries how many were held back
// (attribute "repeated"). It is for the libraries' logs, not termhost's own.
type onceAWhile struct {
	slog.Handler
	window time.Duration
	seen   *repeats
}

type repeats struct {
	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newOnceAWhile(h slog.Handler, window time.Duration) onceAWhile {
	return onceAWhile{h, window, &repeats{last: map[string]time.Time{}, held: map[string]int{}}}
}

func (o onceAWhile) Handle(ctx context.Context, r slog.Record) error {
	o.seen.mu.Lock()
	if at, ok := o.seen.last[r.Message]; ok && r.Time.Sub(at) < o.window {
		o.seen.held[r.Message]++
		o.seen.mu.Unlock()
		return nil
	}
	o.seen.last[r.Message] = r.Time
	held := o.seen.held[r.Message]
	delete(o.seen.held, r.Message)
	o.seen.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held))
	}
	return o.Handler.Handle(ctx, r)
}

// WithAttrs and WithGroup keep one count for the handler and those derived from it.
func (o onceAWhile) WithAttrs(attrs []slog.Attr) slog.Handler {
	return onceAWhile{o.Handler.WithAttrs(attrs), o.window, o.seen}
}

func (o onceAWhile) WithGroup(name string) slog.Handler {
	return onceAWhile{o.Handler.WithGroup(name), o.window, o.seen}
}
