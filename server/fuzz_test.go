package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/coder/websocket"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// FuzzFrame drives JSON-RPC frames through a real connection to a host in this
// process and checks, for every frame:
//   - nothing panics, in the connection's reader and writer or in any actor (a panic
//     in an actor is recovered by its supervisor, so it is watched for on the event
//     stream);
//   - a request (a frame with a string, number or null id) is answered, with that id;
//   - a frame that is not JSON, or not a JSON-RPC message, gets an error whose id is
//     null when none could be read;
//   - a notification gets no answer;
//   - the host goes on: a ping after the frame is answered, and the terminal the
//     frame may have touched still answers.
//
// The fuzzing connection signs in with a role that may do everything with the one
// terminal there is, which runs cat, but may not make terminals, change the config
// or start chat turns: fuzzed bytes must never reach a shell that would run them.
//
//	go test -run '^$' -fuzz FuzzFrame -fuzztime 1m ./server/
func FuzzFrame(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(false, []byte(seed))
		f.Add(true, []byte(seed))
	}
	fz := startFuzzHost(f)
	f.Fuzz(func(t *testing.T, initFirst bool, frame []byte) {
		fz.check(t, initFirst, frame)
	})
}

const (
	// fuzzWait bounds all the waits for one input: the fuzzing engine takes an
	// input that runs ten seconds for a deadlock and kills the worker without a
	// word, so this must fail first, and say what it was waiting for.
	fuzzWait     = 7 * time.Second
	fuzzTerminal = "ahp-terminal:/fuzz"
	fuzzSyncID   = `"fuzz-sync-ping"`
)

func fuzzSeeds() []string {
	term, root := fuzzTerminal, messages.RootURI
	dispatch := func(action string) string {
		return `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + term + `","clientSeq":1,"action":` + action + `}}`
	}
	return []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"` + root + `"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"channel":"` + root + `","protocolVersions":["1.0.0"],"clientId":"f","initialSubscriptions":["` + root + `","` + term + `"]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"channel":"` + root + `","protocolVersions":["9.0.0"],"clientId":"f"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"` + term + `"}}`,
		`{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"` + term + `"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"reconnect","params":{"clientId":"f","lastSeenServerSeq":0,"subscriptions":["` + term + `","` + root + `"]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"createTerminal","params":{"channel":"ahp-terminal:/other"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"disposeTerminal","params":{"channel":"ahp-terminal:/nothing"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"listSessions"}`,
		`{"jsonrpc":"2.0","id":8,"method":"createSession","params":{"channel":"ahp-session:/s"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"dispatchAction","params":{}}`,
		`{"jsonrpc":"2.0","id":10,"method":"noSuchMethod"}`,
		dispatch(`{"type":"terminal/input","data":"hello\r"}`),
		dispatch(`{"type":"terminal/input","data":"\u0003\u0004"}`),
		dispatch(`{"type":"terminal/resized","cols":0,"rows":-5}`),
		dispatch(`{"type":"terminal/resized","cols":99999999999,"rows":1}`),
		dispatch(`{"type":"terminal/claimed","claim":{"kind":"session","session":"ahp-session:/s","turnId":"t","toolCallId":"c"}}`),
		dispatch(`{"type":"terminal/claimed","claim":{"kind":"client","clientId":"f"}}`),
		dispatch(`{"type":"terminal/titleChanged","title":"t"}`),
		dispatch(`{"type":"terminal/cleared"}`),
		dispatch(`{"type":"terminal/data","data":"forged"}`),
		dispatch(`{"type":"chat/turnStarted","turnId":"t","message":{"text":"!true"}}`),
		dispatch(`{"type":"root/configChanged","config":{"defaultShell":"/bin/sh"}}`),
		dispatch(`42`),
		dispatch(`{"type":null}`),
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + root + `","clientSeq":2,"action":{"type":"root/configChanged","config":{}}}}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true}`,
		`{"jsonrpc":2,"id":11,"method":"ping"}`,
		`{"id":12,"method":5}`,
		`{"id":13,"id":{},"method":"ping"}`,
		`{"ID":14,"METHOD":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0.0,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"sub\xc3scribe\"}",
		`[{"jsonrpc":"2.0","id":16,"method":"ping"}]`,
		`[]`, `{}`, `null`, `"ping"`, `1`, ``, ` `, `{`, `}`, `{"jsonrpc":"2.0","id":17,"method":"ping"`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"jsonrpc":"2.0","id":18,"method":"ping","params":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`,
	}
}

type fuzzHost struct {
	srv      *server.Server
	addr     string
	token    string // the fuzzing connection's
	owner    *client.Conn
	mu       sync.Mutex // guards failures
	failures []string   // supervisor events: actors that panicked
}

// startFuzzHost serves a host for the length of the fuzz run. Its logs are dropped:
// a fuzz run makes millions of lines.
func startFuzzHost(f *testing.F) *fuzzHost {
	dir := f.TempDir()
	fuzzer := []string{auth.GroupTerminalRead, auth.GrantTerminalDispose, auth.GrantTerminalInput,
		auth.GrantTerminalResize, auth.GrantTerminalClaim, auth.GrantTerminalRename, auth.GrantTerminalClear}
	roles, _ := json.Marshal(map[string]any{"roles": map[string]any{"fuzzer": fuzzer}, "users": []any{}})
	if err := os.WriteFile(filepath.Join(dir, "users.json"), roles, 0o600); err != nil {
		f.Fatal(err)
	}
	store, err := auth.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	token, err := store.AddToken("fuzz", "fuzzer")
	if err != nil {
		f.Fatal(err)
	}
	owner, err := store.AddToken("harness", auth.RoleOwner)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Root:   root.Options{Home: f.TempDir(), KillGrace: 500 * time.Millisecond, DefaultShell: "/bin/bash"},
		Auth:   store,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	f.Cleanup(func() {
		cancel()
		<-done
	})
	fz := &fuzzHost{srv: srv, addr: ln.Addr().String(), token: token}
	srv.System().EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			fz.mu.Lock()
			fz.failures = append(fz.failures, fmt.Sprintf("actor %v failed: %v", e.Child, e.Reason))
			fz.mu.Unlock()
		}
	})
	dctx, dcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer dcancel()
	fz.owner, err = client.Dial(dctx, "ws://"+fz.addr+"/?tkn="+owner, nil)
	if err != nil {
		f.Fatal(err)
	}
	go func() {
		for range fz.owner.Notifications {
		}
	}()
	if _, err := fz.owner.Initialize(dctx, "harness"); err != nil {
		f.Fatal(err)
	}
	return fz
}

// ensureTerminal makes the terminal the fuzzed frames may touch, if a frame disposed
// of it. It runs cat, deaf to ^C, so typed bytes are only echoed.
func (fz *fuzzHost) ensureTerminal(ctx context.Context, t *testing.T) {
	res, err := fz.srv.System().Root.RequestFuture(fz.srv.RootPID(), &root.ListTerminals{}, untilDone(ctx)).Result()
	if err != nil {
		t.Fatalf("the host does not list its terminals: %v", err)
	}
	if uris, _ := res.([]string); slices.Contains(uris, fuzzTerminal) {
		return
	}
	if _, err := fz.owner.Request(ctx, "createTerminal", map[string]any{"channel": fuzzTerminal,
		"_meta": map[string]any{"x-termhost": map[string]any{"command": "trap '' INT; exec cat"}}}); err != nil {
		t.Fatalf("creating the fuzz terminal: %v", err)
	}
}

// expectation is what the host must answer a frame with.
type expectation struct {
	id           json.RawMessage // a request's id: an answer carrying it
	nullIDError  bool            // an error whose id is null
	notification bool            // no answer at all
}

// expect reads a frame as JSON-RPC 2.0 does. The host reads a text frame with each
// byte that is not UTF-8 replaced, and so does this.
func expect(frame []byte) expectation {
	fr := []byte(strings.ToValidUTF8(string(frame), "\uFFFD"))
	if !json.Valid(fr) {
		return expectation{nullIDError: true}
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	err := json.Unmarshal(fr, &m)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(fr, &probe)
		m.ID = probe.ID
	}
	// JSON-RPC names members exactly: one that is a known member only when case is
	// ignored makes the frame an invalid request.
	var members map[string]json.RawMessage
	wrongCase := false
	if json.Unmarshal(fr, &members) == nil {
		for k := range members {
			for _, known := range []string{"jsonrpc", "id", "method", "params"} {
				if k != known && strings.EqualFold(k, known) {
					wrongCase = true
				}
			}
		}
	}
	switch {
	case bytes.Equal(m.ID, []byte("null")):
		return expectation{id: m.ID} // a request all the same, answered with id null
	case len(m.ID) > 0:
		if c := m.ID[0]; c == '"' || c == '-' || c >= '0' && c <= '9' {
			return expectation{id: m.ID}
		}
		return expectation{nullIDError: true}
	case err != nil || wrongCase || m.JSONRPC != "2.0" || m.Method == nil || *m.Method == "":
		return expectation{nullIDError: true}
	}
	return expectation{notification: true}
}

func (fz *fuzzHost) check(t *testing.T, initFirst bool, frame []byte) {
	want := expect(frame)
	if bytes.Equal(want.id, []byte(fuzzSyncID)) {
		t.Skip("the frame uses the id of the ping that follows it")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzWait)
	defer cancel()
	fz.ensureTerminal(ctx, t)
	ws, _, err := websocket.Dial(ctx, "ws://"+fz.addr+"/?tkn="+fz.token, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	if initFirst {
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"fuzz","initialSubscriptions":["ahp-root://","` + fuzzTerminal + `"]}}`
		if err := ws.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if bytes.HasPrefix(data, []byte(`{"jsonrpc":"2.0","id":0,`)) {
				if bytes.Contains(data, []byte(`"error"`)) {
					t.Fatalf("initialize: %s", data)
				}
				break
			}
		}
	}
	if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
		t.Fatalf("writing the frame: %v", err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+fuzzSyncID+`,"method":"ping"}`)); err != nil && !isClosedByHost(err) {
		t.Fatalf("writing the ping: %v", err)
	}

	// Read until the ping and the frame's own answer, if it wants one, are in.
	var answers []string // answers other than the ping's
	synced, answered := false, want.id == nil
	for !synced || !answered {
		_, data, err := ws.Read(ctx)
		if err != nil {
			// The one frame the host ends a connection for is an initialize offering
			// no version it speaks; it answers first.
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Reason == string(delivery.ReasonVersionMismatch) && answered {
				fz.hostGoesOn(ctx, t, frame)
				return
			}
			t.Fatalf("frame %q: connection ended (%v) after %v with the ping answered %v, the frame answered %v; answers %q", frame, err, time.Since(start), synced, answered, answers)
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Error  *messages.Error `json:"error"`
		}
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("frame %q: host sent non-JSON %q", frame, data)
		}
		if a.Method != nil {
			continue // a notification: an action, a refusal echoed
		}
		switch {
		case bytes.Equal(a.ID, []byte(fuzzSyncID)):
			synced = true
			continue
		case want.id != nil && bytes.Equal(a.ID, want.id):
			answered = true
		}
		answers = append(answers, string(data))
	}
	switch {
	case want.notification && len(answers) > 0:
		t.Fatalf("notification %q was answered: %q", frame, answers)
	case want.nullIDError && !slices.ContainsFunc(answers, func(s string) bool { return strings.Contains(s, `"id":null,"error"`) }):
		t.Fatalf("frame %q: no error with a null id before the next ping's answer; answers %q", frame, answers)
	case want.id != nil && len(answers) != 1:
		t.Fatalf("request %q: %d answers %q", frame, len(answers), answers)
	}
	fz.hostGoesOn(ctx, t, frame)
}

// untilDone is what is left of ctx's time, for an actor request.
func untilDone(ctx context.Context) time.Duration {
	d, _ := ctx.Deadline()
	return max(time.Until(d), time.Millisecond)
}

func isClosedByHost(err error) bool {
	var ce websocket.CloseError
	return errors.As(err, &ce) || errors.Is(err, net.ErrClosed)
}

// hostGoesOn checks no actor failed and the terminal a frame may have reached still
// answers: a subscribe goes through the host and the terminal's mailbox, behind
// whatever the frame sent them.
func (fz *fuzzHost) hostGoesOn(ctx context.Context, t *testing.T, frame []byte) {
	probe := delivery.NewOutbox(delivery.OutboxLimits{Bytes: 1 << 20}, nil)
	res, err := fz.srv.System().Root.RequestFuture(fz.srv.RootPID(), &channel.Subscribe{Channel: fuzzTerminal, Sub: probe}, untilDone(ctx)).Result()
	if r, ok := res.(*channel.SubscribeResult); err != nil || !ok || (r.Err != nil && r.Err.Code != messages.CodeNotFound) {
		t.Fatalf("after frame %q the terminal does not answer: %v %v", frame, res, err)
	}
	fz.srv.System().Root.Send(fz.srv.RootPID(), &channel.Unsubscribe{Channel: fuzzTerminal, Sub: probe})
	fz.mu.Lock()
	failures := fz.failures
	fz.failures = nil
	fz.mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("frame %q: %s", frame, strings.Join(failures, "; "))
	}
}
