package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// clientEnvelope is an action envelope as package client reads it.
type clientEnvelope = client.Envelope

// target is the host the bench drives.
type target struct {
	url   string
	token string
}

// dialURL is the WebSocket address with the token as ?tkn=.
func (t target) dialURL() (string, error) {
	u, err := url.Parse(t.url)
	if err != nil {
		return "", fmt.Errorf("bench: --url %q: %w", t.url, err)
	}
	if t.token != "" {
		q := u.Query()
		q.Set("tkn", t.token)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// ctl is a control connection: the AHP client of package client, signed in and
// initialized without subscriptions, with a router that hands each channel's action
// envelopes to whoever watches that channel and drops the rest, so the client's
// notification queue never fills.
type ctl struct {
	*client.Conn
	id  string
	seq atomic.Int64

	mu      sync.Mutex // guards watches
	watches map[string]*watch
}

// watch is one channel's envelopes, in order.
type watch struct {
	ch   chan *client.Envelope
	done chan struct{}
}

func dialCtl(ctx context.Context, t target, id string) (*ctl, error) {
	u, err := t.dialURL()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", t.url, err)
	}
	if _, err := c.Initialize(ctx, id); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bench: initialize: %w", err)
	}
	k := &ctl{Conn: c, id: id, watches: map[string]*watch{}}
	go k.route()
	return k, nil
}

func (k *ctl) route() {
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

// watch starts collecting a channel's envelopes; call it before the subscribe.
func (k *ctl) watch(channel string) *watch {
	w := &watch{ch: make(chan *client.Envelope, 1024), done: make(chan struct{})}
	k.mu.Lock()
	k.watches[channel] = w
	k.mu.Unlock()
	return w
}

func (k *ctl) unwatch(channel string) {
	k.mu.Lock()
	if w := k.watches[channel]; w != nil {
		close(w.done)
		delete(k.watches, channel)
	}
	k.mu.Unlock()
}

// create opens a terminal claimed by this client. command "" is the host's shell at
// its prompt; otherwise a one-command terminal (termhost's x-termhost extension).
func (k *ctl) create(ctx context.Context, uri, command string) error {
	p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": k.id}}
	if command != "" {
		p["_meta"] = map[string]any{"x-termhost": map[string]any{"command": command}}
	}
	if _, err := k.Request(ctx, "createTerminal", p); err != nil {
		return fmt.Errorf("createTerminal %s: %w", uri, err)
	}
	return nil
}

func (k *ctl) subscribe(ctx context.Context, uri string) (*messages.TerminalState, error) {
	snap, err := k.Subscribe(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", uri, err)
	}
	return snap.TerminalState()
}

func (k *ctl) input(ctx context.Context, uri, data string) error {
	return k.Dispatch(ctx, uri, k.seq.Add(1), map[string]any{"type": messages.TerminalInput, "data": data})
}

func (k *ctl) dispose(ctx context.Context, uri string) error {
	if _, err := k.Request(ctx, "disposeTerminal", map[string]any{"channel": uri}); err != nil {
		return fmt.Errorf("disposeTerminal %s: %w", uri, err)
	}
	return nil
}

// waitExited waits for terminal/exited on a watched channel, unless the snapshot
// taken at subscribe time already says the process exited.
func (k *ctl) waitExited(ctx context.Context, w *watch, snap *messages.TerminalState) error {
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

// stream is a subscriber that only counts: a bare WebSocket that initializes with one
// subscription and then reads frames, measuring each terminal/data's decoded length
// with one pass over the frame instead of decoding it. Package client decodes every
// frame three times over, which on a shared 2-core machine would measure the client
// more than the host; a real viewer's cost is its own.
type stream struct {
	ws      *websocket.Conn
	channel string
	// dataPrefix is how the host begins a terminal/data frame on this channel;
	// a frame that begins otherwise takes the decoding path.
	dataPrefix []byte
	buf        bytes.Buffer
	// answer is the initialize's answer, which holds the channel's snapshot: what
	// the terminal printed before the stream subscribed is there, not in a frame
	// after it.
	answer []byte
}

// streamEnd is how a stream's reading ended.
type streamEnd struct {
	Bytes  int64 // decoded terminal/data bytes
	Frames int
	Exited bool // terminal/exited arrived
	// CloseCode and CloseReason are the host's close frame; CloseCode is -1 when the
	// connection ended without one.
	CloseCode   int
	CloseReason string
	Err         error
}

// initializeAnswer reads a frame while a stream waits for its initialize's answer
// (id 1): whether this is it, and the host's error if it refused.
func initializeAnswer(frame []byte) (answered bool, err error) {
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *messages.Error `json:"error"`
	}
	if json.Unmarshal(frame, &r) != nil || string(r.ID) != "1" {
		return false, nil
	}
	if r.Error != nil {
		return true, fmt.Errorf("bench: initialize: %w", r.Error)
	}
	return true, nil
}

// countOther takes a frame the fast path did not: a terminal/data of channel counts
// its decoded bytes, and a terminal/exited of it ends the stream (true). Anything
// else (another channel, a rejection, a frame that is not an action) is passed by.
func (end *streamEnd) countOther(frame []byte, channel string) (exited bool) {
	var f struct {
		Method string `json:"method"`
		Params struct {
			Channel         string          `json:"channel"`
			Action          messages.Action `json:"action"`
			RejectionReason string          `json:"rejectionReason"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Method != "action" || f.Params.Channel != channel || f.Params.RejectionReason != "" {
		return false
	}
	switch f.Params.Action.Type {
	case messages.TerminalData:
		if f.Params.Action.Data != nil {
			end.Bytes += int64(len(*f.Params.Action.Data))
		}
	case messages.TerminalExited:
		end.Exited = true
		return true
	}
	return false
}

func dialStream(ctx context.Context, t target, clientID, channel string) (*stream, error) {
	u, err := t.dialURL()
	if err != nil {
		return nil, err
	}
	ws, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", t.url, err)
	}
	ws.SetReadLimit(64 << 20)
	s := &stream{ws: ws, channel: channel, dataPrefix: messages.DataFramePrefix(channel)}
	subs := []string{channel}
	if channel == "" {
		subs = []string{} // a connection that subscribes later, or never
	}
	init, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"channel": messages.RootURI, "protocolVersions": []string{"1.0.0", "0.9.0"},
			"clientId": clientID, "initialSubscriptions": subs,
		},
	})
	if err := ws.Write(ctx, websocket.MessageText, init); err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("bench: initialize: %w", err)
	}
	// The answer comes before any of the channel's actions (the host holds them
	// until the snapshot is queued).
	for {
		frame, err := s.read(ctx)
		if err != nil {
			_ = ws.CloseNow()
			return nil, fmt.Errorf("bench: initialize: %w", err)
		}
		answered, err := initializeAnswer(frame)
		if err != nil {
			_ = ws.CloseNow()
			return nil, err
		}
		if answered {
			s.answer = append([]byte(nil), frame...)
			return s, nil
		}
	}
}

// read reads one frame into the stream's buffer; the slice is valid until the next read.
func (s *stream) read(ctx context.Context) ([]byte, error) {
	_, r, err := s.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	s.buf.Reset()
	if _, err := s.buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return s.buf.Bytes(), nil
}

// drain reads until terminal/exited on the channel, or until the connection ends.
// onData, if set, is told the running byte count after every terminal/data.
func (s *stream) drain(ctx context.Context, onData func(total int64)) streamEnd {
	var end streamEnd
	for {
		frame, err := s.read(ctx)
		if err != nil {
			end.Err = err
			end.CloseCode = int(websocket.CloseStatus(err))
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				end.CloseReason = ce.Reason
			}
			return end
		}
		end.Frames++
		if bytes.HasPrefix(frame, s.dataPrefix) {
			if n, ok := jsonStringLen(frame[len(s.dataPrefix):]); ok {
				end.Bytes += int64(n)
				if onData != nil {
					onData(end.Bytes)
				}
				continue
			}
		}
		if end.countOther(frame, s.channel) {
			return end
		}
	}
}

func (s *stream) close() { _ = s.ws.Close(websocket.StatusNormalClosure, "") }

// jsonStringLen is the decoded length in bytes of the JSON string that b starts inside
// (just after its opening quote), and whether its closing quote was found.
func jsonStringLen(b []byte) (int, bool) {
	n := 0
	for i := 0; i < len(b); {
		// The next backslash, then a quote before it: two vectorised scans of the run
		// between escapes, where IndexAny looks at each byte in turn. The subscribers
		// share the CPUs with the host, so their reading must cost little.
		seg := b[i:]
		j := bytes.IndexByte(seg, '\\')
		if j >= 0 {
			seg = seg[:j]
		}
		if q := bytes.IndexByte(seg, '"'); q >= 0 {
			return n + q, true
		}
		if j < 0 {
			return n, false
		}
		n += j
		i += j
		if i+1 >= len(b) {
			return n, false
		}
		if b[i+1] != 'u' {
			n++ // \n, \r, \t, \", \\, \/, \b, \f
			i += 2
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return n, false
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if r2, ok := hex4(b, i+2); ok && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					n += utf8.RuneLen(dec)
					i += 6
					continue
				}
			}
			r = utf8.RuneError
		}
		n += utf8.RuneLen(r)
	}
	return n, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(v), err == nil
}
