// Package mcpbridge is `termhost mcp`: an MCP server on stdin and stdout for agents that can only spawn
// one: it passes each JSON-RPC message through to a host's /mcp, over MCP's
// streamable HTTP transport, and every message the host sends back out again. It is
// a proxy of messages, not an MCP implementation: it reads of a message only what the
// transport needs (its id and method, an initialize result's protocolVersion, the
// names the newer protocol wants repeated in headers).
//
// The two transports are the spec's (2025-11-25, "Transports"): stdio is one JSON-RPC
// message per line; streamable HTTP is a POST per message, answered with one JSON
// message or an event stream of them, plus an optional GET stream for what the
// server sends unasked. Headers and behaviours follow the Go SDK's client
// (go-sdk mcp/streamable.go, streamableClientConn) so the host sees what the SDK
// would send.
package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The streamable HTTP transport's headers (MCP 2025-11-25 and the SDK's
// streamable_headers.go).
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerLastEventID     = "Last-Event-ID"
)

// statelessProtocol is the first protocol version (SEP-2575) without sessions or the
// standalone GET stream, and whose requests repeat their method and name in headers.
// Versions are dates, so they compare as strings.
const statelessProtocol = "2026-07-28"

// metaProtocolVersion is the _meta key a request of statelessProtocol or later
// carries its version in; the header must repeat it.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// codeBridge is the JSON-RPC error code of answers the bridge makes itself, when the
// host could not be reached or refused a request: JSON-RPC 2.0 leaves -32000 to
// -32099 to the implementation for server errors.
const codeBridge = -32000

// codeParseError is JSON-RPC 2.0's code for a message that is not JSON.
const codeParseError = -32700

// Limits and timings of the bridge.
const (
	// maxMessage bounds one message read from stdin or one event from the host.
	maxMessage = 64 << 20
	// maxErrorBody bounds how much of a refusal's body is read for its message.
	maxErrorBody = 64 << 10
	// deleteTimeout bounds the DELETE that ends the session at exit (the SDK's too).
	deleteTimeout = 5 * time.Second
	// The standalone stream reconnects after listenRetryFirst, doubling up to
	// listenRetryMax while it keeps failing.
	listenRetryFirst = time.Second
	listenRetryMax   = 30 * time.Second
	// resumeTries bounds how often a request's broken event stream is resumed (GET
	// with Last-Event-ID) without a new event before the request is answered with
	// an error.
	resumeTries = 3
)

// RedactedURL is u without a ?tkn= token, for logs and messages.
func RedactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	if q.Has("tkn") {
		q.Set("tkn", "REDACTED")
		p.RawQuery = q.Encode()
	}
	return p.String()
}

// Config is what a bridge runs with.
type Config struct {
	// URL is the host's MCP endpoint (http://HOST:PORT/mcp?…); Token signs in (may be
	// empty); TokenPhrase names it in a refusal's message ("the token from --token").
	URL, Token, TokenPhrase string
	// Log gets what the bridge says; nothing is ever written to stdout but messages.
	Log *slog.Logger
}

// Run bridges stdin and stdout to the host's endpoint until stdin ends or ctx is
// done, then ends the MCP session with a DELETE and returns nil.
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout io.Writer) error {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	b := &bridge{
		cfg:    cfg,
		shown:  RedactedURL(cfg.URL),
		client: &http.Client{Transport: transport},
		log:    cfg.Log.With("url", RedactedURL(cfg.URL)),
		out:    &stdoutLines{w: stdout},
	}
	b.log.Info("termhost mcp: bridging stdin and stdout to the host's MCP endpoint")
	return b.run(ctx, stdin)
}

// Endpoint is the URL the bridge posts to: flagURL, else $TERMHOST_MCP_URL, else the
// host of $TERMHOST_URL (or of defaultURL) at /mcp. A ws:// or wss:// URL becomes
// http:// or https://; its query (session, chat, tools) is kept. An error is the
// user's to mend.
func Endpoint(flagURL, defaultURL string) (string, error) {
	raw, from := flagURL, "--url"
	if raw == "" {
		raw, from = os.Getenv("TERMHOST_MCP_URL"), "$TERMHOST_MCP_URL"
	}
	derive := raw == ""
	if derive {
		raw, from = os.Getenv("TERMHOST_URL"), "$TERMHOST_URL"
		if raw == "" {
			raw = defaultURL
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%s must be http://HOST:PORT/mcp (or https://), not %q", from, raw)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return "", fmt.Errorf("%s must be http://HOST:PORT/mcp (or https://), not %q", from, raw)
	}
	if derive || u.Path == "" || u.Path == "/" {
		u.Path, u.RawPath = "/mcp", ""
	}
	return u.String(), nil
}

// bridge is one run of `termhost mcp`.
type bridge struct {
	cfg    Config
	shown  string // the URL for messages and logs, a ?tkn= in it redacted
	client *http.Client
	log    *slog.Logger
	out    *stdoutLines

	// wg counts the goroutines the bridge started (requests in flight, the standalone
	// stream); run waits for them before it returns.
	wg sync.WaitGroup

	// mu guards the session's state below; it is never held across I/O.
	mu              sync.Mutex
	sessionID       string // from the host's answer to initialize; "" before, or once gone
	protocolVersion string // from the initialize result; "" before
	listening       bool   // the standalone stream was started
}

// run forwards stdin's messages until it ends or ctx is done, then ends the session.
func (b *bridge) run(ctx context.Context, stdin io.Reader) error {
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		// This goroutine ends at the end of stdin. When the bridge stops on a signal
		// it may still be blocked in Read; the process is about to exit then.
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), maxMessage)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			select {
			case lines <- line:
			case <-reqCtx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()

	var err error
loop:
	for {
		select {
		case line := <-lines:
			b.forward(reqCtx, line)
		case err = <-readErr:
			switch {
			case errors.Is(err, bufio.ErrTooLong):
				err = fmt.Errorf("a message on stdin is longer than the %d MiB the bridge takes", maxMessage>>20)
			case err != nil:
				err = fmt.Errorf("reading stdin: %w", err)
			}
			break loop
		case <-ctx.Done():
			b.log.Info("termhost mcp: stopped by a signal")
			break loop
		}
	}
	// In-flight requests and the standalone stream end with the bridge: the client
	// that would read their answers is gone.
	cancel()
	b.endSession(context.WithoutCancel(ctx))
	b.wg.Wait()
	return err
}

// stdinMessage is a message (or batch) from stdin, and what its POST needs of it.
type stdinMessage struct {
	body       []byte
	calls      []json.RawMessage // the ids of its requests, which expect answers
	initialize string            // the id key of an initialize request in it, else ""
	// Of a single request or notification (not a batch):
	method, name, metaVersion string
}

// rpcEnvelope is what the bridge reads of a JSON-RPC message.
type rpcEnvelope struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (e *rpcEnvelope) isCall() bool {
	return e.Method != "" && len(e.ID) > 0 && string(e.ID) != "null"
}

// parseStdinMessage reads a line from stdin; an error means it is not a JSON-RPC message.
func parseStdinMessage(line []byte) (*stdinMessage, error) {
	o := &stdinMessage{body: line}
	var msgs []rpcEnvelope
	if line[0] == '[' {
		if err := json.Unmarshal(line, &msgs); err != nil {
			return nil, err
		}
	} else {
		var m rpcEnvelope
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, err
		}
		msgs = []rpcEnvelope{m}
		o.method = m.Method
		var p struct {
			Name string         `json:"name"`
			URI  string         `json:"uri"`
			Meta map[string]any `json:"_meta"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			o.metaVersion, _ = p.Meta[metaProtocolVersion].(string)
			switch m.Method {
			case "tools/call", "prompts/get":
				o.name = p.Name
			case "resources/read":
				o.name = p.URI
			}
		}
	}
	for _, m := range msgs {
		if m.isCall() {
			o.calls = append(o.calls, m.ID)
			if m.Method == "initialize" {
				o.initialize = idKey(m.ID)
			}
		}
	}
	return o, nil
}

// idKey is a JSON-RPC id as a map key: 7 and 7.0 are one id, "7" another.
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	switch v := v.(type) {
	case string:
		return "s" + v
	case float64:
		return fmt.Sprintf("n%g", v)
	}
	return string(id)
}

// forward posts one line from stdin. Requests go on concurrently, so a long tool
// call holds up nothing; notifications and responses are posted before the next
// line is read, so the host receives them in the order the client sent them (the
// host answers them at once with 202 Accepted).
func (b *bridge) forward(ctx context.Context, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	o, err := parseStdinMessage(line)
	if err != nil {
		b.log.Warn("termhost mcp: a line on stdin is not JSON; answered with a parse error", "err", err)
		b.answerError(json.RawMessage("null"), codeParseError, "termhost mcp: a line on stdin is not a JSON-RPC message: "+err.Error(), 0)
		return
	}
	if len(o.calls) == 0 {
		b.post(ctx, o)
		return
	}
	b.wg.Go(func() { b.post(ctx, o) })
}

// post sends o to the host and writes every message of the answer to stdout. A call
// the host leaves unanswered (refused, unreachable, a stream cut short) is answered
// with an error saying why.
func (b *bridge) post(ctx context.Context, o *stdinMessage) {
	pending := map[string]json.RawMessage{}
	for _, id := range o.calls {
		pending[idKey(id)] = id
	}
	defer func() {
		if ctx.Err() != nil {
			return // the bridge is stopping: nobody is waiting
		}
		for _, id := range pending {
			b.answerError(id, codeBridge, "termhost mcp: the host's answer ended without a response to this request", 0)
		}
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.cfg.URL, bytes.NewReader(o.body))
	if err != nil {
		b.failCalls(pending, "termhost mcp: "+err.Error(), 0)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	sessionID := b.setHeaders(req.Header, o)
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			b.failCalls(pending, b.unreachable(err), 0)
			b.log.Warn("termhost mcp: posting to the host failed", "method", o.method, "err", err)
		}
		return
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b.refused(ctx, resp, o, sessionID, pending)
		return
	}
	if sid := resp.Header.Get(headerSessionID); sid != "" {
		b.mu.Lock()
		switch {
		case b.sessionID == "" || o.initialize != "":
			b.sessionID = sid // initialize makes a session; a second initialize a new one
		case sid != b.sessionID:
			b.log.Warn("termhost mcp: the host named another session than the one in use; keeping the first", "method", o.method)
		}
		b.mu.Unlock()
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		return // a notification or a response: nothing comes back
	}
	deliver := func(msg []byte) { b.deliver(ctx, msg, o.initialize, pending) }
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		b.readJSON(resp.Body, deliver)
	case "text/event-stream":
		lastID, err := readEvents(resp.Body, deliver)
		if len(pending) > 0 && ctx.Err() == nil {
			if err != nil {
				b.log.Warn("termhost mcp: the host's event stream broke before its answer", "method", o.method, "err", err)
			}
			b.resume(ctx, sessionID, lastID, deliver, pending)
		}
	default:
		if len(pending) > 0 {
			b.failCalls(pending, fmt.Sprintf("termhost mcp: the host at %s answered with %q, neither JSON nor an event stream; is --url the host's /mcp?", b.shown, resp.Header.Get("Content-Type")), resp.StatusCode)
		}
	}
}

// setHeaders sets a POST's sign-in and MCP headers, and returns the session it names.
func (b *bridge) setHeaders(hdr http.Header, o *stdinMessage) string {
	b.mu.Lock()
	sessionID, version := b.sessionID, b.protocolVersion
	b.mu.Unlock()
	if o.initialize != "" {
		// An initialize starts a session: it names none, and it carries its
		// protocol version in its params, as the SDK's client sends it.
		sessionID, version = "", ""
	}
	if o.metaVersion != "" {
		version = o.metaVersion // the SDK's protocolVersionFromMessage
	}
	b.signIn(hdr, sessionID, version)
	if version >= statelessProtocol && o.method != "" {
		// SEP-2243's standard headers, which the SDK's server checks against the
		// body. (Mcp-Param-* headers, for tool arguments a tool's schema marks
		// x-mcp-header, would need the tool list; termhost's tools mark none.)
		hdr.Set(headerMethod, o.method)
		if o.name != "" {
			hdr.Set(headerName, o.name)
		}
	}
	return sessionID
}

// signIn sets the headers every request of the bridge carries.
func (b *bridge) signIn(hdr http.Header, sessionID, version string) {
	if b.cfg.Token != "" {
		hdr.Set("Authorization", "Bearer "+b.cfg.Token)
	}
	if sessionID != "" {
		hdr.Set(headerSessionID, sessionID)
	}
	if version != "" {
		hdr.Set(headerProtocolVersion, version)
	}
}

// deliver writes what the host sent, one message or a batch of them, to stdout, one
// line a message; a response settles its pending call. The answer to initialize sets
// the protocol version (and may open the standalone stream) before the client sees
// it and can send more.
func (b *bridge) deliver(ctx context.Context, data []byte, initialize string, pending map[string]json.RawMessage) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || ctx.Err() != nil {
		return // an empty event primes a stream; after the end, nobody reads stdout
	}
	if data[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(data, &batch); err != nil {
			b.log.Warn("termhost mcp: the host sent a batch that is not JSON; dropped", "err", err)
			return
		}
		for _, m := range batch {
			b.deliver(ctx, m, initialize, pending)
		}
		return
	}
	var e rpcEnvelope
	if err := json.Unmarshal(data, &e); err != nil {
		b.log.Warn("termhost mcp: the host sent a message that is not JSON; dropped", "err", err)
		return
	}
	if e.Method == "" && len(e.ID) > 0 {
		key := idKey(e.ID)
		delete(pending, key)
		if key == initialize && len(e.Result) > 0 {
			b.initialized(ctx, e.Result)
		}
	}
	b.out.writeLine(data, b.log)
}

// initialized records an initialize result's protocol version. A version before
// statelessProtocol has the standalone GET stream, for what the host sends unasked
// (logging messages, resources/updated), which is then opened.
func (b *bridge) initialized(ctx context.Context, result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) != nil || r.ProtocolVersion == "" {
		return
	}
	b.mu.Lock()
	b.protocolVersion = r.ProtocolVersion
	start := !b.listening && r.ProtocolVersion < statelessProtocol
	if start {
		b.listening = true
	}
	b.mu.Unlock()
	if start {
		b.wg.Go(func() {
			b.listen(ctx)
			b.mu.Lock()
			b.listening = false // a later initialize (a new session) may open it again
			b.mu.Unlock()
		})
	}
}

// listen keeps the standalone stream open while the bridge lives, reconnecting with
// a growing delay when it drops or fails. It stops when the host has none to offer
// (405, or another refusal, as the SDK's client treats them) or the session is gone.
func (b *bridge) listen(ctx context.Context) {
	delay := listenRetryFirst
	lastID := ""
	for {
		b.mu.Lock()
		sessionID := b.sessionID
		b.mu.Unlock()
		resp, err := b.get(ctx, sessionID, lastID)
		if ctx.Err() != nil {
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		switch {
		case err != nil:
			b.log.Warn("termhost mcp: opening the stream of the host's notifications failed; retrying", "err", err, "after", delay)
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			b.log.Debug("termhost mcp: the host offers no stream of notifications (405)")
			return
		case resp.StatusCode == http.StatusNotFound && sessionID != "":
			resp.Body.Close()
			b.sessionGone(sessionID)
			b.log.Warn("termhost mcp: the host no longer has the session; its notifications stop", "session", sessionID)
			return
		case resp.StatusCode >= 200 && resp.StatusCode <= 299 && mediaType(resp.Header.Get("Content-Type")) == "text/event-stream":
			delay = listenRetryFirst
			id, err := readEvents(resp.Body, func(m []byte) { b.deliver(ctx, m, "", nil) })
			resp.Body.Close()
			if ctx.Err() != nil {
				return
			}
			if id != "" {
				lastID = id
			}
			b.log.Debug("termhost mcp: the stream of the host's notifications ended; reconnecting", "err", err, "after", delay)
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			resp.Body.Close()
			b.log.Warn("termhost mcp: the host failed to open the stream of its notifications; retrying", "status", resp.Status, "after", delay)
		default:
			resp.Body.Close()
			b.log.Warn("termhost mcp: the host refused the stream of its notifications; none will come", "status", resp.Status, "content_type", resp.Header.Get("Content-Type"))
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, listenRetryMax)
	}
}

// get opens an event stream with GET: the standalone one, or the rest of a broken
// one after lastEventID.
func (b *bridge) get(ctx context.Context, sessionID, lastEventID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	version := b.protocolVersion
	b.mu.Unlock()
	b.signIn(req.Header, sessionID, version)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set(headerLastEventID, lastEventID)
	}
	return b.client.Do(req)
}

// resume picks up a request's event stream that broke before its answer, as the
// transport allows when the host numbered its events (MCP 2025-11-25, "Resumability
// and Redelivery"): GET with the last event's id. It gives up after resumeTries
// attempts that bring nothing new.
func (b *bridge) resume(ctx context.Context, sessionID, lastID string, deliver func([]byte), pending map[string]json.RawMessage) {
	delay := listenRetryFirst
	for stale := 0; stale < resumeTries && len(pending) > 0 && lastID != ""; {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		delay = min(2*delay, listenRetryMax)
		resp, err := b.get(ctx, sessionID, lastID)
		if err != nil {
			b.log.Warn("termhost mcp: resuming the host's event stream failed", "err", err)
			stale++
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 || mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
			resp.Body.Close()
			b.log.Warn("termhost mcp: the host refused to resume its event stream", "status", resp.Status)
			return
		}
		id, _ := readEvents(resp.Body, deliver)
		resp.Body.Close()
		if id != "" && id != lastID {
			lastID, stale, delay = id, 0, listenRetryFirst
		} else {
			stale++
		}
	}
}

// refused answers the calls of a POST the host refused with a non-2xx status: with
// the host's own JSON-RPC error where it sent one for a call, else with a sentence
// saying what to do.
func (b *bridge) refused(ctx context.Context, resp *http.Response, o *stdinMessage, sessionID string, pending map[string]json.RawMessage) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode == http.StatusNotFound && sessionID != "" {
		b.sessionGone(sessionID)
	}
	if mediaType(resp.Header.Get("Content-Type")) == "application/json" {
		// The SDK's server answers some refusals (an unsupported protocol version, a
		// header that does not match the body) with a JSON-RPC error for the call:
		// that is the host's answer, passed on as it is.
		var e rpcEnvelope
		if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 && len(e.ID) > 0 {
			if _, ok := pending[idKey(e.ID)]; ok {
				b.deliver(ctx, body, "", pending)
			}
		}
	}
	msg := b.refusal(resp, sessionID, body)
	if len(o.calls) == 0 {
		b.log.Warn("termhost mcp: the host refused a message", "method", o.method, "status", resp.Status, "err", msg)
		return
	}
	b.failCalls(pending, msg, resp.StatusCode)
}

// refusal is the sentence for a refused POST.
func (b *bridge) refusal(resp *http.Response, sessionID string, body []byte) string {
	detail := strings.Join(strings.Fields(string(body)), " ")
	if len(detail) > 300 {
		detail = detail[:300] + "…"
	}
	if detail != "" {
		detail = ": " + detail
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized:
		return fmt.Sprintf("termhost mcp: the host at %s did not accept %s (401 Unauthorized); give the token of one of its users with --token or $TERMHOST_TOKEN (`termhost token add` on the host makes one)", b.shown, b.cfg.TokenPhrase)
	case code == http.StatusNotFound && sessionID != "":
		return "termhost mcp: the host no longer has this MCP session (404 Not Found): it ended, timed out or the host restarted; restart the MCP client to start a new one"
	case code == http.StatusNotFound:
		return fmt.Sprintf("termhost mcp: the host at %s has no MCP endpoint there (404 Not Found); --url should name its /mcp", b.shown)
	case code >= 500:
		return fmt.Sprintf("termhost mcp: the host at %s failed to answer (%s)%s", b.shown, resp.Status, detail)
	}
	return fmt.Sprintf("termhost mcp: the host at %s refused the request (%s)%s", b.shown, resp.Status, detail)
}

// sessionGone forgets a session the host no longer has, so that a new initialize
// starts another rather than naming it.
func (b *bridge) sessionGone(sessionID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessionID == sessionID {
		b.sessionID, b.protocolVersion = "", ""
	}
}

// unreachable is the sentence for a POST that never reached the host.
func (b *bridge) unreachable(err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("termhost mcp: no termhost is running at %s (connection refused); start one with `termhost serve`", b.shown)
	}
	return fmt.Sprintf("termhost mcp: could not reach the host at %s: %v", b.shown, err)
}

// failCalls answers every pending call with an error and settles it.
func (b *bridge) failCalls(pending map[string]json.RawMessage, msg string, status int) {
	for key, id := range pending {
		b.answerError(id, codeBridge, msg, status)
		delete(pending, key)
	}
}

// answerError writes a JSON-RPC error response for id to stdout. Its data names the
// HTTP status the host answered with, when there was one.
func (b *bridge) answerError(id json.RawMessage, code int, msg string, status int) {
	type rpcError struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]int `json:"data,omitempty"`
	}
	e := rpcError{Code: code, Message: msg}
	if status != 0 {
		e.Data = map[string]int{"httpStatus": status}
	}
	line, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		b.log.Error("termhost mcp: encoding an error response", "err", err)
		return
	}
	b.out.writeLine(line, b.log)
}

// readJSON reads an application/json answer: one message or a batch.
func (b *bridge) readJSON(body io.Reader, deliver func([]byte)) {
	data, err := io.ReadAll(io.LimitReader(body, maxMessage+1))
	switch {
	case err != nil:
		b.log.Warn("termhost mcp: reading the host's answer failed", "err", err)
	case len(data) > maxMessage:
		b.log.Warn("termhost mcp: the host's answer is larger than the bridge takes; dropped", "limit_bytes", maxMessage)
	default:
		deliver(data)
	}
}

// readEvents reads a server-sent event stream (the WHATWG HTML spec, "Server-sent
// events"), calling deliver with the data of each message event, and returns the id
// of the last event that had one. It returns at the end of the stream, with the
// error that ended it, if any.
func readEvents(r io.Reader, deliver func([]byte)) (lastID string, err error) {
	sc := bufio.NewScanner(r) // ScanLines takes \n and \r\n, the line ends servers use
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	var data bytes.Buffer
	var event string
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // a blank line dispatches the event
			if data.Len() > 0 && (event == "" || event == "message") {
				deliver(bytes.Clone(data.Bytes()))
			}
			data.Reset()
			event = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment, such as the SDK's ": ok" that flushes the headers
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(value)
		case "event":
			event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				lastID = string(value)
			}
		}
	}
	return lastID, sc.Err()
}

// endSession ends the MCP session with DELETE, as the SDK's client does on Close, so
// the host can let go of it now rather than at its idle timeout.
func (b *bridge) endSession(ctx context.Context) {
	b.mu.Lock()
	sessionID, version := b.sessionID, b.protocolVersion
	b.mu.Unlock()
	if sessionID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.cfg.URL, nil)
	if err != nil {
		b.log.Warn("termhost mcp: ending the session", "err", err)
		return
	}
	b.signIn(req.Header, sessionID, version)
	resp, err := b.client.Do(req)
	if err != nil {
		b.log.Warn("termhost mcp: ending the session failed; the host lets it go when it idles out", "err", err)
		return
	}
	resp.Body.Close()
	b.log.Debug("termhost mcp: ended the session", "status", resp.Status)
}

// stdoutLines writes whole lines to stdout from any goroutine.
type stdoutLines struct {
	// mu serializes lines on w and guards the fields below. It is held across the
	// write: stdout has this one writer, and a client that stops reading should
	// hold back the answers that are coming, not have them queue without bound.
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	err error // the first write error; nothing is written after it
}

// writeLine writes msg as one line: compacted, since a message may arrive spread
// over lines (an event's data lines) and stdio's framing is one message a line.
func (l *stdoutLines) writeLine(msg []byte, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.buf.Reset()
	if err := json.Compact(&l.buf, msg); err != nil {
		log.Warn("termhost mcp: a message that is not JSON; dropped", "err", err)
		return
	}
	l.buf.WriteByte('\n')
	if _, err := l.w.Write(l.buf.Bytes()); err != nil {
		l.err = err
		log.Warn("termhost mcp: writing to stdout failed; nothing more is written", "err", err)
	}
}

// mediaType is a Content-Type's media type, without parameters; "" if malformed.
func mediaType(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return t
}
