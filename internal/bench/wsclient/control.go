package wsclient

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// Target is the host the bench drives.
type Target struct {
	// URL is the host's WebSocket address, ws://HOST:PORT/.
	URL string
	// Token signs the bench in, as ?tkn=; "" signs in with none.
	Token string
}

// DialURL is the WebSocket address with the token as ?tkn=.
func (t Target) DialURL() (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "", fmt.Errorf("bench: --url %q: %w", t.URL, err)
	}
	if t.Token != "" {
		q := u.Query()
		q.Set("tkn", t.Token)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// Control is a control connection: the AHP client of package client, signed in and
// initialized without subscriptions, with a router that hands each channel's action
// envelopes to whoever watches that channel and drops the rest, so the client's
// notification queue never fills.
type Control struct {
	*client.Conn
	id  string
	seq atomic.Int64

	mu      sync.Mutex // guards watches
	watches map[string]*Watch
}

// Watch is one channel's envelopes, in order, on C.
type Watch struct {
	C    <-chan *client.Envelope
	ch   chan *client.Envelope
	done chan struct{}
}

// DialControl connects to t and initializes as client id, with no subscriptions.
func DialControl(ctx context.Context, t Target, id string) (*Control, error) {
	u, err := t.DialURL()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", t.URL, err)
	}
	if _, err := c.Initialize(ctx, id); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bench: initialize: %w", err)
	}
	k := &Control{Conn: c, id: id, watches: map[string]*Watch{}}
	go k.route()
	return k, nil
}

func (k *Control) route() {
	for n := range k.Notifications {
		if n.Envelope == nil {
			continue
		}
		k.mu.Lock()
		w := k.watches[n.Envelope.Channel]
		k.mu.Unlock()
		if w == nil {
			continue
		}
		select {
		case w.ch <- n.Envelope:
		case <-w.done:
		}
	}
}

// ID is the client id the connection initialized with, which its claims name.
func (k *Control) ID() string { return k.id }

// NextSeq is the clientSeq of this connection's next dispatch.
func (k *Control) NextSeq() int64 { return k.seq.Add(1) }

// Watch starts collecting a channel's envelopes; call it before the subscribe.
func (k *Control) Watch(channel string) *Watch {
	ch := make(chan *client.Envelope, 1024)
	w := &Watch{C: ch, ch: ch, done: make(chan struct{})}
	k.mu.Lock()
	k.watches[channel] = w
	k.mu.Unlock()
	return w
}

// Unwatch stops collecting a channel's envelopes.
func (k *Control) Unwatch(channel string) {
	k.mu.Lock()
	if w := k.watches[channel]; w != nil {
		close(w.done)
		delete(k.watches, channel)
	}
	k.mu.Unlock()
}

// Create opens a terminal claimed by this client. command "" is the host's shell at
// its prompt; otherwise a one-command terminal (termhost's x-termhost extension).
func (k *Control) Create(ctx context.Context, uri, command string) error {
	var meta map[string]any
	if command != "" {
		meta = map[string]any{"x-termhost": map[string]any{"command": command}}
	}
	return k.create(ctx, uri, meta)
}

// CreateOn opens a one-command terminal (command "" is the shell) on the named node
// of a cluster; node "" lets the cluster place it.
func (k *Control) CreateOn(ctx context.Context, uri, command, node string) error {
	meta := map[string]any{}
	if command != "" {
		meta["x-termhost"] = map[string]any{"command": command}
	}
	if node != "" {
		meta["node"] = node
	}
	return k.create(ctx, uri, meta)
}

// create sends createTerminal claimed by this client, with meta as its _meta unless
// meta is nil.
func (k *Control) create(ctx context.Context, uri string, meta map[string]any) error {
	p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": k.id}}
	if meta != nil {
		p["_meta"] = meta
	}
	if _, err := k.Request(ctx, "createTerminal", p); err != nil {
		return fmt.Errorf("createTerminal %s: %w", uri, err)
	}
	return nil
}

// SubscribeTerminal subscribes to a terminal and returns its snapshot's state.
func (k *Control) SubscribeTerminal(ctx context.Context, uri string) (*messages.TerminalState, error) {
	snap, err := k.Subscribe(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", uri, err)
	}
	return snap.TerminalState()
}

// Input types data into a terminal (terminal/input).
func (k *Control) Input(ctx context.Context, uri, data string) error {
	return k.Dispatch(ctx, uri, k.seq.Add(1), map[string]any{"type": messages.TerminalInput, "data": data})
}

// Dispose disposes of a terminal.
func (k *Control) Dispose(ctx context.Context, uri string) error {
	if _, err := k.Request(ctx, "disposeTerminal", map[string]any{"channel": uri}); err != nil {
		return fmt.Errorf("disposeTerminal %s: %w", uri, err)
	}
	return nil
}

// WaitExited waits for terminal/exited on a watched channel, unless the snapshot
// taken at subscribe time already says the process exited.
func (k *Control) WaitExited(ctx context.Context, w *Watch, snap *messages.TerminalState) error {
	if snap != nil && snap.Lifecycle != nil && snap.Lifecycle.Status == messages.StatusExited {
		return nil
	}
	for {
		select {
		case env := <-w.ch:
			if env.Type == messages.TerminalExited && env.RejectionReason == "" {
				return nil
			}
		case <-k.Done():
			return fmt.Errorf("connection closed while waiting for terminal/exited: %v", k.Err())
		case <-ctx.Done():
			return fmt.Errorf("waiting for terminal/exited: %w", ctx.Err())
		}
	}
}
