// Package client is a small AHP client over WebSocket: requests with their answers,
// notifications, and the stream of action envelopes the host sends. termhost's own
// tests and its bench verb use it. It is not an API: it answers what those need.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/termhost/termhost/messages"
)

// Conn is one connection to a host. Requests may be made from many goroutines.
type Conn struct {
	ws *websocket.Conn

	mu      sync.Mutex // guards nextID, pending and err
	nextID  int64
	pending map[string]chan *response
	err     error

	// Notifications carries every notification in order. It is buffered; a reader
	// that falls behind blocks the connection's reader, as a real client would.
	Notifications chan *Notification
	done          chan struct{}
}

// Notification is a frame without an id.
type Notification struct {
	Method string
	Params json.RawMessage
	// Envelope is decoded for `action` notifications.
	Envelope *Envelope
}

// Envelope is an action envelope with the action still raw and its type read out.
type Envelope struct {
	Channel         string           `json:"channel"`
	Action          json.RawMessage  `json:"action"`
	ServerSeq       uint64           `json:"serverSeq"`
	Origin          *messages.Origin `json:"origin,omitempty"`
	RejectionReason string           `json:"rejectionReason,omitempty"`
	Type            string           `json:"-"`
}

// Decode decodes the action.
func (e *Envelope) Decode() (*messages.Action, error) {
	var a messages.Action
	err := json.Unmarshal(e.Action, &a)
	return &a, err
}

type response struct {
	Result json.RawMessage
	Error  *messages.Error
}

// UpgradeError is a host's refusal of the WebSocket upgrade: a plain HTTP answer,
// such as 401 for a token the host does not take, with the start of its body (the
// host's own sentence).
type UpgradeError struct {
	StatusCode int
	Body       string
	Err        error
}

func (e *UpgradeError) Error() string {
	return fmt.Sprintf("the host answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

func (e *UpgradeError) Unwrap() error { return e.Err }

// Dial connects to url (ws://…). Options may be nil. A host that answers the upgrade
// with anything but 101 Switching Protocols gives an *UpgradeError.
func Dial(ctx context.Context, url string, opts *websocket.DialOptions) (*Conn, error) {
	ws, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(resp.Body) // the library keeps at most 1 KiB of it
			}
			return nil, &UpgradeError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(body)), Err: err}
		}
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	c := &Conn{ws: ws, pending: map[string]chan *response{}, Notifications: make(chan *Notification, 4096), done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// WS is the underlying socket, for tests that send raw frames.
func (c *Conn) WS() *websocket.Conn { return c.ws }

// Done is closed when the connection ends; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Conn) readLoop() {
	defer close(c.done)
	defer close(c.Notifications)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *messages.Error `json:"error"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		if f.Method != "" {
			n := &Notification{Method: f.Method, Params: f.Params}
			if f.Method == "action" {
				n.Envelope, _ = decodeEnvelope(f.Params)
			}
			c.Notifications <- n
			continue
		}
		key := string(f.ID)
		c.mu.Lock()
		ch := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if ch != nil {
			ch <- &response{Result: f.Result, Error: f.Error}
		}
	}
}

// Request sends a request and waits for its answer. A JSON-RPC error comes back as
// *messages.Error.
func (c *Conn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	ch := make(chan *response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextIDValue(id), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("connection closed before %s was answered: %w", method, c.Err())
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Call is one request of Pipelined.
type Call struct {
	Method string
	Params any
}

// Pipelined writes every call's request before it reads any answer, in the order
// given (as a client does that sends its subscribe right behind its create), then
// waits for each answer. A JSON-RPC error comes back as *messages.Error in its place.
func (c *Conn) Pipelined(ctx context.Context, calls ...Call) ([]json.RawMessage, []error) {
	results, errs := make([]json.RawMessage, len(calls)), make([]error, len(calls))
	ids, chans, frames := make([]string, len(calls)), make([]chan *response, len(calls)), make([][]byte, len(calls))
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		for i := range errs {
			errs[i] = err
		}
		return results, errs
	}
	for i := range calls {
		c.nextID++
		ids[i] = strconv.FormatInt(c.nextID, 10)
		chans[i] = make(chan *response, 1)
		c.pending[ids[i]] = chans[i]
	}
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		for _, id := range ids {
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}
	for i, call := range calls {
		frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextIDValue(ids[i]), "method": call.Method, "params": call.Params})
		if err != nil {
			forget()
			errs[i] = err
			return results, errs
		}
		frames[i] = frame
	}
	for i, frame := range frames {
		if err := c.ws.Write(ctx, websocket.MessageText, frame); err != nil {
			forget()
			for j := i; j < len(errs); j++ {
				errs[j] = err
			}
			return results, errs
		}
	}
	for i, ch := range chans {
		select {
		case r, ok := <-ch:
			switch {
			case !ok:
				errs[i] = fmt.Errorf("connection closed before %s was answered: %w", calls[i].Method, c.Err())
			case r.Error != nil:
				errs[i] = r.Error
			default:
				results[i] = r.Result
			}
		case <-ctx.Done():
			forget()
			for j := i; j < len(errs); j++ {
				errs[j] = fmt.Errorf("%s: %w", calls[j].Method, ctx.Err())
			}
			return results, errs
		}
	}
	return results, errs
}

// decodeEnvelope decodes an action envelope and reads out its action's type.
func decodeEnvelope(raw json.RawMessage) (*Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, err
	}
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(env.Action, &t)
	env.Type = t.Type
	return &env, nil
}

func (c *Conn) nextIDValue(id string) json.RawMessage { return json.RawMessage(id) }

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, frame)
}

// Dispatch sends a dispatchAction.
func (c *Conn) Dispatch(ctx context.Context, channel string, clientSeq int64, action any) error {
	return c.Notify(ctx, "dispatchAction", map[string]any{"channel": channel, "clientSeq": clientSeq, "action": action})
}

// Close closes the connection normally.
func (c *Conn) Close() error {
	return c.ws.Close(websocket.StatusNormalClosure, "")
}

// InitializeResult is the part of initialize's answer clients use.
type InitializeResult struct {
	ProtocolVersion       string          `json:"protocolVersion"`
	ServerSeq             uint64          `json:"serverSeq"`
	Snapshots             []RawSnapshot   `json:"snapshots"`
	DefaultDirectory      string          `json:"defaultDirectory"`
	TerminalCommandPrefix string          `json:"terminalCommandPrefix"`
	Raw                   json.RawMessage `json:"-"`
}

// RawSnapshot is a snapshot whose state is still raw.
type RawSnapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  uint64          `json:"fromSeq"`
}

// Initialize does the handshake with the newest version and the given subscriptions.
func (c *Conn) Initialize(ctx context.Context, clientID string, subs ...string) (*InitializeResult, error) {
	raw, err := c.Request(ctx, "initialize", map[string]any{
		"channel": messages.RootURI, "protocolVersions": []string{"1.0.0", "0.9.0"},
		"clientId": clientID, "initialSubscriptions": subs,
	})
	if err != nil {
		return nil, err
	}
	var r InitializeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	r.Raw = raw
	return &r, nil
}

// Subscribe subscribes and returns the snapshot.
func (c *Conn) Subscribe(ctx context.Context, channel string) (*RawSnapshot, error) {
	raw, err := c.Request(ctx, "subscribe", map[string]any{"channel": channel})
	if err != nil {
		return nil, err
	}
	var r struct {
		Snapshot *RawSnapshot `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Snapshot == nil {
		return nil, errors.New("subscribe answered without a snapshot")
	}
	return r.Snapshot, nil
}

// TerminalState decodes a snapshot's state as a terminal's.
func (s *RawSnapshot) TerminalState() (*messages.TerminalState, error) {
	var st messages.TerminalState
	err := json.Unmarshal(s.State, &st)
	return &st, err
}

// Unsubscribe sends unsubscribe for channel.
func (c *Conn) Unsubscribe(ctx context.Context, channel string) error {
	return c.Notify(ctx, "unsubscribe", map[string]any{"channel": channel})
}

// ReconnectResult is reconnect's answer (PROTOCOL.md 2.4): Type "replay" with the
// envelopes missed and the subscriptions that could not be resumed, or Type
// "snapshot" with fresh snapshots.
type ReconnectResult struct {
	Type      string
	Actions   []*Envelope
	Missing   []string
	Snapshots []RawSnapshot
}

// Reconnect resumes clientID on this new connection, as its first request: the
// subscriptions go on live after the answer.
func (c *Conn) Reconnect(ctx context.Context, clientID string, lastSeenServerSeq uint64, subs ...string) (*ReconnectResult, error) {
	raw, err := c.Request(ctx, "reconnect", map[string]any{
		"channel": messages.RootURI, "clientId": clientID,
		"lastSeenServerSeq": lastSeenServerSeq, "subscriptions": append([]string{}, subs...),
	})
	if err != nil {
		return nil, err
	}
	var r struct {
		Type      string            `json:"type"`
		Actions   []json.RawMessage `json:"actions"`
		Missing   []string          `json:"missing"`
		Snapshots []RawSnapshot     `json:"snapshots"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("reconnect's answer: %w", err)
	}
	out := &ReconnectResult{Type: r.Type, Missing: r.Missing, Snapshots: r.Snapshots}
	for _, a := range r.Actions {
		env, err := decodeEnvelope(a)
		if err != nil {
			return nil, fmt.Errorf("reconnect's answer: %w", err)
		}
		out.Actions = append(out.Actions, env)
	}
	return out, nil
}

// RootState decodes a snapshot's state as the root's.
func (s *RawSnapshot) RootState() (*messages.RootState, error) {
	var st messages.RootState
	err := json.Unmarshal(s.State, &st)
	return &st, err
}
