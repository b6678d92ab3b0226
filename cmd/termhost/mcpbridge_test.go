package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// testMCPHost is an in-process MCP server behind the streamable HTTP handler of the
// SDK, signed in with one Bearer token, standing in for a host's /mcp.
type testMCPHost struct {
	srv     *sdk.Server
	url     string
	release chan struct{} // closing it lets the slow tool answer

	getFlushed     chan struct{} // closed once the standalone stream is registered
	getFlushedOnce sync.Once

	mu      sync.Mutex
	deletes []string // the Mcp-Session-Id of each DELETE
	resumes int      // GETs that resume a stream after a Last-Event-ID
}

func startTestMCPHost(t *testing.T, token string) *testMCPHost {
	t.Helper()
	h := &testMCPHost{release: make(chan struct{}), getFlushed: make(chan struct{})}
	h.srv = sdk.NewServer(&sdk.Implementation{Name: "test-host", Version: "0"}, nil)
	type text struct {
		Text string `json:"text"`
	}
	answer := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(h.srv, &sdk.Tool{Name: "echo", Description: "says its text back"},
		func(ctx context.Context, req *sdk.CallToolRequest, in text) (*sdk.CallToolResult, any, error) {
			return answer(in.Text), nil, nil
		})
	sdk.AddTool(h.srv, &sdk.Tool{Name: "slow", Description: "answers once the test lets it"},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			select {
			case <-h.release:
				return answer("slow done"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	sdk.AddTool(h.srv, &sdk.Tool{Name: "log", Description: "logs its text to the client"},
		func(ctx context.Context, req *sdk.CallToolRequest, in text) (*sdk.CallToolResult, any, error) {
			err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "test", Data: in.Text})
			return answer("logged"), nil, err
		})
	sdk.AddTool(h.srv, &sdk.Tool{Name: "break", Description: "cuts its event stream before it answers"},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "test", Data: "before the break"}); err != nil {
				return nil, nil, err
			}
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{})
			return answer("after the break"), nil, nil
		})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv },
		// An event store numbers the events, so a cut stream can be resumed.
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodDelete:
			h.mu.Lock()
			h.deletes = append(h.deletes, r.Header.Get("Mcp-Session-Id"))
			h.mu.Unlock()
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			h.mu.Lock()
			h.resumes++
			h.mu.Unlock()
		case r.Method == http.MethodGet:
			w = &flushSignal{ResponseWriter: w, flushed: func() { h.getFlushedOnce.Do(func() { close(h.getFlushed) }) }}
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { closeIfOpen(h.release) })
	h.url = ts.URL + "/mcp"
	return h
}

func closeIfOpen(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// flushSignal tells when the SDK flushes a standalone stream's headers. The SDK does
// that holding the stream's lock, which it releases only once the stream is ready
// to deliver (go-sdk streamable.go, acquireStream): a notification sent after the
// flush is delivered on it.
type flushSignal struct {
	http.ResponseWriter
	flushed func()
}

func (f *flushSignal) Flush() {
	_ = http.NewResponseController(f.ResponseWriter).Flush()
	f.flushed()
}

func (f *flushSignal) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// bridgeTestLog is the bridge's stderr in a test: into the test's log while it runs.
type bridgeTestLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *bridgeTestLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("bridge: %s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// bridgeRun is mcpBridge running in the test on pipes.
type bridgeRun struct {
	stdin  *io.PipeWriter // the client's end of the bridge's stdin
	stdout *io.PipeReader // the client's end of the bridge's stdout
	done   chan struct{}  // closed when mcpBridge has returned err
	err    error
}

// startBridgeInProcess runs mcpBridge with args. When the test ends its stdin is
// closed, and it must return nil.
func startBridgeInProcess(t *testing.T, args ...string) *bridgeRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	log := &bridgeTestLog{t: t}
	b := &bridgeRun{stdin: inW, stdout: outR, done: make(chan struct{})}
	args = append(args, "--state-dir", t.TempDir())
	go func() {
		b.err = mcpBridge(args, inR, outW, log)
		_ = outW.Close()
		close(b.done)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		select {
		case <-b.done:
			if b.err != nil {
				t.Errorf("mcpBridge returned %v at the end of stdin", b.err)
			}
		case <-ctx.Done():
			t.Errorf("mcpBridge did not return at the end of stdin")
		}
		log.mu.Lock()
		log.done = true
		log.mu.Unlock()
	})
	return b
}

// receiveOrFail receives from c, or fails the test naming what it waited for.
func receiveOrFail[T any](t *testing.T, ctx context.Context, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-ctx.Done():
		t.Fatalf("no %s before the deadline", what)
	}
	var zero T
	return zero
}

func toolText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

func callToolText(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s answered with an error: %s", name, toolText(t, res))
	}
	return toolText(t, res)
}

// TestBridgeProxiesAnSDKServer drives mcpBridge with the SDK's client on its stdin
// and stdout and the SDK's server behind it: tools are listed and called, calls run
// side by side, logging notifications arrive (on a call's stream and, unasked, on
// the standalone stream), a cut stream is resumed, and the end of stdin ends the
// session with DELETE.
func TestBridgeProxiesAnSDKServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	host := startTestMCPHost(t, "right")
	b := startBridgeInProcess(t, "--url", host.url, "--token", "right")

	logs := make(chan string, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "0"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			logs <- fmt.Sprint(req.Params.Data)
		},
	})
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: b.stdout, Writer: b.stdin}, nil)
	if err != nil {
		t.Fatalf("connecting through the bridge: %v", err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("listing tools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"break", "echo", "log", "slow"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// A call that is still running holds up neither a ping nor other calls.
	slowDone := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		if err != nil {
			slowDone <- "error: " + err.Error()
			return
		}
		slowDone <- toolText(t, res)
	}()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("ping beside a running call: %v", err)
	}
	var wg sync.WaitGroup
	echoes := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			want := fmt.Sprintf("echo %d", i)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
			switch {
			case err != nil:
				echoes <- err
			case toolText(t, res) != want:
				echoes <- fmt.Errorf("echo answered %q, want %q", toolText(t, res), want)
			}
		})
	}
	wg.Wait()
	close(echoes)
	for err := range echoes {
		t.Error(err)
	}
	select {
	case got := <-slowDone:
		t.Fatalf("the slow call answered before it was let: %q", got)
	default:
	}
	close(host.release)
	if got := receiveOrFail(t, ctx, slowDone, "answer from the slow call"); got != "slow done" {
		t.Fatalf("the slow call answered %q", got)
	}

	// A notification in a call's stream.
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("setting the logging level: %v", err)
	}
	if got := callToolText(t, ctx, cs, "log", map[string]any{"text": "from the tool"}); got != "logged" {
		t.Fatalf("log answered %q", got)
	}
	if got := receiveOrFail(t, ctx, logs, "logging notification from the tool"); got != "from the tool" {
		t.Fatalf("logging notification %q, want %q", got, "from the tool")
	}

	// A notification sent unasked arrives on the standalone stream.
	receiveOrFail(t, ctx, host.getFlushed, "standalone stream from the bridge")
	var sessions int
	for ss := range host.srv.Sessions() {
		sessions++
		if err := ss.Log(context.Background(), &sdk.LoggingMessageParams{Level: "info", Data: "unasked"}); err != nil {
			t.Fatalf("logging to the standalone stream: %v", err)
		}
	}
	if sessions != 1 {
		t.Fatalf("the host has %d sessions, want 1", sessions)
	}
	if got := receiveOrFail(t, ctx, logs, "unasked logging notification"); got != "unasked" {
		t.Fatalf("logging notification %q, want %q", got, "unasked")
	}

	// A stream the host cuts before its answer is resumed after its last event.
	if got := callToolText(t, ctx, cs, "break", map[string]any{}); got != "after the break" {
		t.Fatalf("break answered %q", got)
	}
	if got := receiveOrFail(t, ctx, logs, "logging notification before the break"); got != "before the break" {
		t.Fatalf("logging notification %q, want %q", got, "before the break")
	}
	host.mu.Lock()
	resumes := host.resumes
	host.mu.Unlock()
	if resumes == 0 {
		t.Fatal("the bridge had the answer after the break without resuming the stream")
	}

	if err := cs.Close(); err != nil {
		t.Fatalf("closing the client: %v", err)
	}
	receiveOrFail(t, ctx, b.done, "exit of the bridge")
	if b.err != nil {
		t.Fatalf("mcpBridge at the end of stdin: %v", b.err)
	}
	host.mu.Lock()
	deletes := slices.Clone(host.deletes)
	host.mu.Unlock()
	if len(deletes) != 1 || deletes[0] == "" {
		t.Fatalf("DELETEs for sessions %q, want one naming the session", deletes)
	}
}

// readStdoutLine reads one line the bridge wrote to stdout, or fails at the deadline.
func readStdoutLine(t *testing.T, ctx context.Context, r *bufio.Reader) map[string]any {
	t.Helper()
	type read struct {
		line string
		err  error
	}
	c := make(chan read, 1)
	go func() {
		line, err := r.ReadString('\n')
		c <- read{line, err}
	}()
	got := receiveOrFail(t, ctx, c, "line on stdout")
	if got.err != nil {
		t.Fatalf("reading stdout: %v (read %q)", got.err, got.line)
	}
	var msg map[string]any
	if err := json.Unmarshal([]byte(got.line), &msg); err != nil {
		t.Fatalf("stdout line %q: %v", got.line, err)
	}
	return msg
}

// TestBridgeExplainsRefusals: a call the host refuses, or cannot be sent, is
// answered with a JSON-RPC error for its id saying what to do; a notification the
// host refuses writes nothing.
func TestBridgeExplainsRefusals(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	const notification = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

	// A refused connection: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()

	for _, tc := range []struct {
		name, url, token string
		want             []string
		status           float64
	}{
		{"wrong token", startTestMCPHost(t, "right").url, "wrong",
			[]string{"did not accept the token from --token (401 Unauthorized)", "--token or $TERMHOST_TOKEN"}, 401},
		{"no host", closedURL, "right",
			[]string{"no termhost is running at " + closedURL, "termhost serve"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			b := startBridgeInProcess(t, "--url", tc.url, "--token", tc.token)
			out := bufio.NewReader(b.stdout)
			// The notification goes first and is answered with nothing: the first
			// line is the answer to the call.
			for _, line := range []string{notification, fmt.Sprintf(initialize, 7)} {
				if _, err := io.WriteString(b.stdin, line); err != nil {
					t.Fatal(err)
				}
			}
			msg := readStdoutLine(t, ctx, out)
			e, _ := msg["error"].(map[string]any)
			if msg["id"] != float64(7) || e == nil {
				t.Fatalf("answer %v, want an error for id 7", msg)
			}
			text, _ := e["message"].(string)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("error message %q does not say %q", text, w)
				}
			}
			data, _ := e["data"].(map[string]any)
			if status, _ := data["httpStatus"].(float64); status != tc.status {
				t.Errorf("error data %v, want httpStatus %v", e["data"], tc.status)
			}
		})
	}
}

// TestBridgeEndpoint: where the bridge posts when --url does not say.
func TestBridgeEndpoint(t *testing.T) {
	for _, tc := range []struct {
		flag, mcpEnv, hostEnv string
		want                  string
	}{
		{flag: "http://h:1/mcp?tools=pty&session=s", want: "http://h:1/mcp?tools=pty&session=s"},
		{flag: "ws://h:1/", want: "http://h:1/mcp"},
		{flag: "wss://h:1?chat=c", want: "https://h:1/mcp?chat=c"},
		{mcpEnv: "https://h/x/mcp", hostEnv: "ws://other:2/", want: "https://h/x/mcp"},
		{hostEnv: "wss://h:2/?session=s", want: "https://h:2/mcp?session=s"},
		{hostEnv: "ws://h:2/some/path", want: "http://h:2/mcp"},
		{want: "http://127.0.0.1:9187/mcp"},
		{flag: "ftp://h/mcp", want: "error"},
		{flag: "/mcp", want: "error"},
	} {
		t.Setenv("TERMHOST_MCP_URL", tc.mcpEnv)
		t.Setenv("TERMHOST_URL", tc.hostEnv)
		got, err := mcpEndpoint(tc.flag)
		var usage usageError
		switch {
		case tc.want == "error" && !errors.As(err, &usage):
			t.Errorf("--url %q: %q, %v; want a usage error", tc.flag, got, err)
		case tc.want != "error" && (err != nil || got != tc.want):
			t.Errorf("--url %q, $TERMHOST_MCP_URL %q, $TERMHOST_URL %q: %q, %v; want %q", tc.flag, tc.mcpEnv, tc.hostEnv, got, err, tc.want)
		}
	}
}

// TestBridgeEndToEnd runs the real binary both ways: `termhost serve`, and an agent's
// SDK client that spawns `termhost mcp` and runs a command with the bash tool.
func TestBridgeEndToEnd(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	addr := strings.TrimSuffix(strings.TrimPrefix(h.url, "ws://"), "/")
	cmd := exec.Command(h.bin, "mcp", "--url", "http://"+addr+"/mcp?tools=pty", "--token", h.token())
	cmd.Env = append(os.Environ(), "TERMHOST_URL=", "TERMHOST_TOKEN=", "TERMHOST_MCP_URL=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting through `termhost mcp`: %v\nits stderr:\n%s", err, stderr.String())
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("listing tools: %v\nbridge stderr:\n%s", err, stderr.String())
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"bash", "bash_output", "monitor"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo bridged"}})
	if err != nil {
		t.Fatalf("calling bash: %v\nbridge stderr:\n%s", err, stderr.String())
	}
	if text := toolText(t, res); !strings.Contains(text, "bridged") || res.IsError {
		t.Fatalf("bash answered (error %v) %q", res.IsError, text)
	}
	// Closing stdin ends the bridge; CommandTransport waits for it to exit.
	if err := cs.Close(); err != nil {
		t.Fatalf("`termhost mcp` at the end of stdin: %v\nits stderr:\n%s", err, stderr.String())
	}
}
