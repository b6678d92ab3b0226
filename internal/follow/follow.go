// Package follow shows one terminal of a host the way `termhost attach` and `run`
// do: its snapshot, then every terminal/data, across dropped connections (a
// reconnect resumes where it left off, or catches up from the scrollback), with
// termhost's own status lines set apart from the output, and the terminal's exit.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// Follower shows one terminal's output, the snapshot's content first and then every
// terminal/data after it, across dropped connections: on a drop it opens a new one
// and sends `reconnect` as its first request (PROTOCOL.md 2.4), so the host replays
// what was missed; a host that no longer knows this client gets a fresh handshake and
// the snapshot, from which only what was not shown yet is printed. Input and sizes
// sent while no connection is up wait for the next one.
//
// follow runs on one goroutine; input and resize may be called from any.
type Follower struct {
	Host     Host
	ClientID string
	URI      string
	Out      io.Writer // the terminal's output
	Status   *StatusLine
	// Patience is how long to keep trying to reconnect before giving up.
	Patience time.Duration

	mu        sync.Mutex // guards conn, clientSeq, queued, size and refused
	conn      *client.Conn
	clientSeq int64
	queued    []string // input typed while no connection was up, in order
	queuedLen int
	size      []int // the last size asked for: cols, rows
	refused   bool  // a refusal of our input has been shown

	// Touched only by the goroutine running start and follow.
	lastSeq uint64 // the last serverSeq of this terminal shown
	tail    []byte // the end of what was shown, to find our place in a snapshot
	isPty   bool
	exit    *Exit // set once terminal/exited was seen
}

const (
	// tailKeep is how much of the output shown is kept to find where a snapshot
	// goes on from it.
	tailKeep = 4096
	// queuedMax bounds input held while disconnected; more is dropped, and said so.
	queuedMax = 1 << 20
	// DefaultPatience is how long a Follower tries to reconnect. The host remembers
	// a client for 10 minutes (README "Resuming"); past that it would only offer a
	// snapshot anyway.
	DefaultPatience = 5 * time.Minute
	// requestTimeout bounds one request's round trip.
	requestTimeout = 30 * time.Second
)

// Host is the host a Follower follows a terminal on.
type Host interface {
	// URL is the host's address, as the person gave it.
	URL() string
	// Dial opens a connection, signed in, without a handshake.
	Dial(ctx context.Context) (*client.Conn, error)
	// Explain turns a failed request into what the person should read.
	Explain(err error) error
	// NotFound is the error for a terminal the host does not have.
	NotFound(name string) error
}

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}

// Start subscribes on conn, an initialized connection, and shows the snapshot's
// content; Exited then says whether the terminal had already exited. conn is the
// Follower's from here on, even when Start fails, so Dispose and Close can use it.
func (f *Follower) Start(ctx context.Context, conn *client.Conn) error {
	rctx, cancel := withTimeout(ctx)
	defer cancel()
	snap, err := conn.Subscribe(rctx, f.URI)
	if err != nil {
		f.setConn(conn)
		var rpc *messages.Error
		if errors.As(err, &rpc) && rpc.Code == messages.CodeNotFound {
			return f.Host.NotFound(f.URI)
		}
		return f.Host.Explain(err)
	}
	if err := f.catchUp(snap); err != nil {
		f.setConn(conn)
		return err
	}
	f.setConn(conn)
	return nil
}

// Exited is the terminal's exit once Start or Follow saw it, else nil. Call it from
// the goroutine that runs them.
func (f *Follower) Exited() *Exit { return f.exit }

// IsPty says whether the terminal runs under a pseudoterminal, as its snapshot said.
// Call it from the goroutine that runs Start.
func (f *Follower) IsPty() bool { return f.isPty }

// catchUp shows a snapshot's content and carries on from its fromSeq.
func (f *Follower) catchUp(snap *client.RawSnapshot) error {
	r, err := f.resumeFrom(snap)
	if err != nil {
		var permanent *permanentError
		if errors.As(err, &permanent) {
			return permanent.err
		}
		return err
	}
	return r.apply()
}

// unseen is what of text, a terminal's content now, comes after tail, the end of
// what was shown before. When tail cannot be found (the content was cleared or
// trimmed past it), it is all of text, and false.
func unseen(tail []byte, text string) (string, bool) {
	if len(tail) == 0 {
		return text, true
	}
	i := strings.LastIndex(text, string(tail))
	if i < 0 {
		return text, false
	}
	return text[i+len(tail):], true
}

func (f *Follower) show(data string) error {
	if data == "" {
		return nil
	}
	if _, err := io.WriteString(f.Out, data); err != nil {
		return err
	}
	f.Status.wrote(data)
	f.tail = append(f.tail, data...)
	if len(f.tail) > tailKeep {
		f.tail = slices.Clone(f.tail[len(f.tail)-tailKeep:])
	}
	return nil
}

// follow shows the terminal's output until it exits (its exit, nil), ctx ends
// (ctx's error) or the connection cannot be had back.
func (f *Follower) Follow(ctx context.Context) (*Exit, error) {
	conn := f.current()
	for f.exit == nil {
		select {
		case n, ok := <-conn.Notifications:
			if !ok {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err := f.reconnect(ctx, conn.Err()); err != nil {
					return nil, err
				}
				conn = f.current()
				continue
			}
			if n.Envelope != nil {
				if err := f.handle(n.Envelope); err != nil {
					return nil, err
				}
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.exit, nil
}

// handle applies one envelope of the terminal: output is shown, the exit kept.
func (f *Follower) handle(env *client.Envelope) error {
	if env.Channel != f.URI || env.ServerSeq <= f.lastSeq {
		return nil // another channel, or already shown (a replay overlapping the live stream)
	}
	f.lastSeq = env.ServerSeq
	if env.RejectionReason != "" {
		if env.Type == messages.TerminalInput && env.Origin != nil && env.Origin.ClientID == f.ClientID {
			f.mu.Lock()
			first := !f.refused
			f.refused = true
			f.mu.Unlock()
			if first {
				f.Status.Line("input refused: " + env.RejectionReason)
			}
		}
		return nil
	}
	switch env.Type {
	case messages.TerminalData:
		a, err := env.Decode()
		if err != nil || a.Data == nil {
			return nil
		}
		return f.show(*a.Data)
	case messages.TerminalCleared:
		// The host's content starts again empty: a snapshot's place is found in
		// what comes from now on.
		f.tail = f.tail[:0]
	case messages.TerminalExited:
		a, err := env.Decode()
		if err != nil {
			a = &messages.Action{}
		}
		f.exit = ExitFromAction(a)
	}
	return nil
}

func (f *Follower) current() *client.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn
}

// setConn makes conn the one input goes to, and sends it what waited for it: the
// size asked for, then the input typed meanwhile.
func (f *Follower) setConn(conn *client.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conn = conn
	if f.size != nil {
		f.sendLocked(map[string]any{"type": messages.TerminalResized, "cols": f.size[0], "rows": f.size[1]})
	}
	queued := f.queued
	f.queued, f.queuedLen = nil, 0
	for _, data := range queued {
		f.inputLocked(data)
	}
}

// input sends data as terminal/input, or keeps it for the next connection.
func (f *Follower) Input(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputLocked(data)
}

func (f *Follower) inputLocked(data string) {
	if !f.sendLocked(map[string]any{"type": messages.TerminalInput, "data": data}) {
		if f.queuedLen+len(data) > queuedMax {
			return
		}
		f.queued = append(f.queued, data)
		f.queuedLen += len(data)
	}
}

// resize sends terminal/resized now, and again on every new connection.
func (f *Follower) Resize(cols, rows int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.size = []int{cols, rows}
	f.sendLocked(map[string]any{"type": messages.TerminalResized, "cols": cols, "rows": rows})
}

// sendLocked dispatches an action on the current connection and reports whether it
// went. A write that failed is a connection going: follow sees it end and reconnects.
func (f *Follower) sendLocked(action map[string]any) bool {
	if f.conn == nil {
		return false
	}
	select {
	case <-f.conn.Done():
		return false
	default:
	}
	f.clientSeq++
	ctx, cancel := withTimeout(context.Background())
	defer cancel()
	return f.conn.Dispatch(ctx, f.URI, f.clientSeq, action) == nil
}

// reconnect gets a connection back after the one in use ended with cause, trying
// with a growing pause until patience runs out. The status line says so, on one line
// that ends before what was missed is shown.
func (f *Follower) reconnect(ctx context.Context, cause error) error {
	f.mu.Lock()
	f.conn = nil
	f.mu.Unlock()
	f.Status.begin(fmt.Sprintf("connection to %s lost; reconnecting…", f.Host.URL()))
	give := time.Now().Add(f.Patience)
	pause := 100 * time.Millisecond
	for {
		r, err := f.resume(ctx)
		if err == nil {
			f.Status.end(r.how)
			return r.apply()
		}
		var permanent *permanentError
		if errors.As(err, &permanent) {
			f.Status.end("failed")
			return permanent.err
		}
		if ctx.Err() != nil {
			f.Status.end("stopped")
			return ctx.Err()
		}
		if time.Now().After(give) {
			f.Status.end("gave up")
			return fmt.Errorf("lost the connection to %s (%v) and could not get it back in %v: %w", f.Host.URL(), cause, f.Patience, err)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			f.Status.end("stopped")
			return ctx.Err()
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// permanentError is a reconnect that trying again will not mend.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// resumed is a connection had back: how, for the status line, and apply, which shows
// what was missed.
type resumed struct {
	how   string
	apply func() error
}

// resume opens a new connection and resumes on it.
func (f *Follower) resume(ctx context.Context) (*resumed, error) {
	rctx, cancel := withTimeout(ctx)
	defer cancel()
	conn, err := f.Host.Dial(rctx)
	if err != nil {
		var up *client.UpgradeError
		if errors.As(err, &up) && (up.StatusCode == http.StatusUnauthorized || up.StatusCode == http.StatusForbidden) {
			return nil, &permanentError{err}
		}
		return nil, err
	}
	r, err := f.resumeOn(rctx, conn)
	if err != nil {
		_ = conn.WS().CloseNow()
		return nil, err
	}
	f.setConn(conn)
	return r, nil
}

func (f *Follower) resumeOn(ctx context.Context, conn *client.Conn) (*resumed, error) {
	res, err := conn.Reconnect(ctx, f.ClientID, f.lastSeq, f.URI)
	var rpc *messages.Error
	switch {
	case errors.As(err, &rpc):
		// The host does not remember this client (it restarted, or we were gone too
		// long): a handshake of our own, and the snapshot.
		if _, err := conn.Initialize(ctx, f.ClientID); err != nil {
			return nil, f.rpcPermanent(err)
		}
		snap, err := conn.Subscribe(ctx, f.URI)
		if err != nil {
			return nil, f.rpcPermanent(err)
		}
		return f.resumeFrom(snap)
	case err != nil:
		return nil, err
	case res.Type == "replay":
		if slices.Contains(res.Missing, f.URI) {
			return nil, &permanentError{fmt.Errorf("the terminal %s is gone from %s (disposed, or no longer yours to read)", f.URI, f.Host.URL())}
		}
		return &resumed{how: "reconnected; nothing was missed", apply: func() error {
			for _, env := range res.Actions {
				if err := f.handle(env); err != nil {
					return err
				}
			}
			return nil
		}}, nil
	}
	for i := range res.Snapshots {
		if res.Snapshots[i].Resource == f.URI {
			return f.resumeFrom(&res.Snapshots[i])
		}
	}
	return nil, &permanentError{fmt.Errorf("the terminal %s is gone from %s", f.URI, f.Host.URL())}
}

// resumeFrom carries on from a snapshot: what of its content was not shown yet.
func (f *Follower) resumeFrom(snap *client.RawSnapshot) (*resumed, error) {
	st, err := snap.TerminalState()
	if err != nil {
		return nil, &permanentError{fmt.Errorf("the terminal's state: %w", err)}
	}
	rest, found := unseen(f.tail, st.Text())
	r := &resumed{how: "reconnected; caught up from the terminal's scrollback", apply: func() error {
		if err := f.show(rest); err != nil {
			return err
		}
		f.lastSeq = snap.FromSeq
		f.isPty = st.IsPty != nil && *st.IsPty
		if e := ExitFromState(st); e != nil {
			f.exit = e
		}
		return nil
	}}
	if !found {
		r.how = "reconnected; some output may have been missed, so the terminal's scrollback is shown again"
	}
	return r, nil
}

// rpcPermanent: a JSON-RPC error once a fresh handshake was tried is the host's
// answer, not a network's hiccup.
func (f *Follower) rpcPermanent(err error) error {
	var rpc *messages.Error
	if errors.As(err, &rpc) {
		if rpc.Code == messages.CodeNotFound {
			return &permanentError{fmt.Errorf("the terminal %s is gone from %s", f.URI, f.Host.URL())}
		}
		return &permanentError{f.Host.Explain(err)}
	}
	return err
}

// dispose disposes the terminal on the current connection, if one is up.
func (f *Follower) Dispose(ctx context.Context) error {
	conn := f.current()
	if conn == nil {
		return errors.New("no connection to the host")
	}
	rctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := conn.Request(rctx, "disposeTerminal", map[string]any{"channel": f.URI})
	return f.Host.Explain(err)
}

// Close ends the current connection, if one is up; Follow then returns.
func (f *Follower) Close() {
	conn := f.current()
	if conn == nil {
		return
	}
	go func() {
		for range conn.Notifications { // so the close handshake is read
		}
	}()
	_ = conn.Close()
}
