package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/coder/websocket"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// Hostile input: whatever one connection sends, the host answers it or ignores it
// cleanly, keeps serving every other connection and loses no state.

// rawOwner opens a socket as the owner and completes the handshake by hand.
func (h *testHost) rawOwner(t *testing.T, clientID string, subs ...string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"channel": messages.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": clientID, "initialSubscriptions": subs,
	}})
	if r := rawExchange(t, ws, string(init)); r["error"] != nil {
		t.Fatalf("initialize: %v", r)
	}
	return ws
}

func writeRaw(t *testing.T, ws *websocket.Conn, frame []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// stillServes checks the bystander's host: a ping is answered and its terminal echoes.
func stillServes(c *conn, uri, marker string) {
	c.t.Helper()
	c.mustRequest("ping", map[string]any{"channel": messages.RootURI})
	c.input(uri, "echo "+marker+"-$((6*7))\r")
	c.waitOutput(uri, marker+"-42")
}

func dispatchFrame(channel string, seq int, action string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + channel + `","clientSeq":` + fmt.Sprint(seq) + `,"action":` + action + `}}`)
}

// TestFrameSizeLimit: a frame of exactly MaxFrameBytes (a paste) is taken; one byte
// more closes that connection with 1009, and the terminal keeps everything it had.
func TestFrameSizeLimit(t *testing.T) {
	const limit = 64 << 10
	h := startHost(t, withMaxFrameBytes(limit))
	by := h.dial("bystander")
	uri := "ahp-terminal:/size-limit"
	by.createTerminal(uri, nil)
	by.input(uri, "echo before-$((1+1))\r")
	by.waitOutput(uri, "before-2")

	c := h.dial("paster")
	// A paste that makes a frame of exactly the limit is taken...
	head := `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + uri + `","clientSeq":1,"action":{"type":"terminal/input","data":"# `
	tail := `\r"}}}`
	exact := head + strings.Repeat("p", limit-len(head)-len(tail)) + tail
	if len(exact) != limit {
		t.Fatalf("frame is %d bytes", len(exact))
	}
	writeRaw(t, c.WS(), []byte(exact))
	echo := by.waitFor("the echo of the paste", envelopeFrom(uri, "paster", 1))
	if a, _ := echo.Envelope.Decode(); echo.Envelope.RejectionReason != "" || a.Data == nil || len(*a.Data) != limit-len(head)-len(tail)+3 {
		t.Fatalf("paste at the limit: %s", truncate(string(echo.Params), 200))
	}
	// ...and one byte more closes that connection with 1009, and only it.
	over := head + strings.Repeat("p", limit-len(head)-len(tail)+1) + tail
	_ = c.WS().Write(c.ctx(), websocket.MessageText, []byte(over))
	select {
	case <-c.Done():
	case <-c.ctx().Done():
		t.Fatal("an oversized frame did not close the connection")
	}
	if st := websocket.CloseStatus(c.Err()); st != websocket.StatusMessageTooBig {
		t.Fatalf("close status %v (%v), want 1009", st, c.Err())
	}
	stillServes(by, uri, "after")

	snap, err := by.Subscribe(by.ctx(), uri)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := snap.TerminalState()
	var text strings.Builder
	for _, p := range st.Content {
		text.WriteString(p.Text())
	}
	if !strings.Contains(text.String(), "before-2") || !strings.Contains(text.String(), "after-42") {
		t.Fatalf("terminal lost output: %q", truncate(text.String(), 300))
	}
}

// TestDeeplyNestedJSON: nesting past what the decoder takes is a parse error, not a
// crash or a stack overflow; deep nesting it takes is skipped where it is unknown.
func TestDeeplyNestedJSON(t *testing.T) {
	h := startHost(t)
	by := h.dial("bystander")
	uri := "ahp-terminal:/nested"
	by.createTerminal(uri, nil)
	ws := h.rawOwner(t, "nester", uri)

	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		name  string
		frame string
		code  float64 // 0: a result is wanted
		id    any
	}{
		// Past encoding/json's nesting limit: not JSON to the host, so a parse error
		// whose id is null, since no id could be read.
		{"arrays past the limit", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep(200000, "[", "]") + `}`, messages.CodeParseError, nil},
		{"objects past the limit", `{"jsonrpc":"2.0","id":2,"method":"ping","params":` + deep(200000, `{"a":`, "}") + `}`, messages.CodeParseError, nil},
		{"unclosed", `{"jsonrpc":"2.0","id":3,"method":"ping","params":` + strings.Repeat("[", 500000), messages.CodeParseError, nil},
		// Deep but within the limit: the unknown value is skipped.
		{"deep params", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"channel":"ahp-root://","x":` + deep(5000, "[", "]") + `}}`, 0, float64(4)},
		{"deep id", `{"jsonrpc":"2.0","id":` + deep(5000, "[", "]") + `,"method":"ping"}`, messages.CodeInvalidRequest, nil},
		{"deep subscribe channel", `{"jsonrpc":"2.0","id":5,"method":"subscribe","params":{"channel":` + deep(5000, `{"a":`, "}") + `}}`, messages.CodeInvalidParams, float64(5)},
	} {
		r := rawExchange(t, ws, tc.frame)
		if r["id"] != tc.id {
			t.Errorf("%s: id %v, want %v", tc.name, r["id"], tc.id)
		}
		e, _ := r["error"].(map[string]any)
		switch {
		case tc.code == 0 && e != nil:
			t.Errorf("%s: %v", tc.name, e)
		case tc.code != 0 && (e == nil || e["code"] != tc.code):
			t.Errorf("%s: got %v, want code %v", tc.name, r, tc.code)
		}
	}
	// A deep unknown field inside an action is carried and ignored: the input runs.
	writeRaw(t, ws, dispatchFrame(uri, 1, `{"type":"terminal/input","data":"echo deep-ok-$((2+3))\r","x":`+deep(5000, "[", "]")+`}`))
	by.waitOutput(uri, "deep-ok-5")
	stillServes(by, uri, "nested")
}

// rawWS is a WebSocket client written by hand, for what a well-behaved library will
// not do: many frames in one write, a handshake abandoned halfway.
type rawWS struct {
	nc net.Conn
	br *bufio.Reader
}

func upgradeRequest(h *testHost, token string) string {
	return "GET /?tkn=" + token + " HTTP/1.1\r\nHost: " + h.addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
}

// dialRawWS upgrades a plain TCP connection, failing unless the host answers 101.
func dialRawWS(t *testing.T, h *testHost, token string) *rawWS {
	t.Helper()
	nc, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	r := &rawWS{nc: nc, br: bufio.NewReader(nc)}
	if _, err := io.WriteString(nc, upgradeRequest(h, token)); err != nil {
		t.Fatal(err)
	}
	r.readUpgrade(t)
	return r
}

func (r *rawWS) readUpgrade(t *testing.T) {
	t.Helper()
	for first := true; ; first = false {
		line, err := r.br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the upgrade: %v", err)
		}
		if first && !strings.HasPrefix(line, "HTTP/1.1 101") {
			t.Fatalf("upgrade answered %q", line)
		}
		if line == "\r\n" {
			return
		}
	}
}

// readFrame reads one unfragmented frame from the host (which never masks).
func (r *rawWS) readFrame() (opcode byte, payload []byte, err error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r.br, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(hdr[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r.br, ext[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(ext[0])<<8 | uint64(ext[1])
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r.br, ext[:]); err != nil {
			return 0, nil, err
		}
		n = 0
		for _, b := range ext {
			n = n<<8 | uint64(b)
		}
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r.br, payload)
	return hdr[0] & 0x0f, payload, err
}

// TestDispatchFlood: 100,000 dispatches from one connection, of every kind, written
// as fast as the socket takes them, many to a write. Memory stays bounded, another
// connection is answered throughout, and nothing is lost or reordered: every refusal
// comes back, and the flood's last input runs after all the rest.
func TestDispatchFlood(t *testing.T) {
	h := startHost(t)
	by := h.dial("bystander")
	byURI := "ahp-terminal:/flood-bystander"
	by.createTerminal(byURI, nil)
	uri := "ahp-terminal:/flooded"
	by.mustRequest("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": ""}})

	// A member, so that a config change is refused at the grant gate.
	f := dialRawWS(t, h, h.addUser("flo", auth.RoleMember))
	_, _ = f.nc.Write(maskedTextFrame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"flo","initialSubscriptions":["` + uri + `"]}}`))

	// The flooder reads everything the host sends it, as a live client does, keeping
	// counts: refusals, accepted resizes, and whether the last input's output came.
	type tally struct {
		rejections, resizes int
		err                 error
	}
	done := make(chan tally, 1)
	go func() {
		var n tally
		for {
			op, p, err := f.readFrame()
			if err != nil {
				n.err = err
				done <- n
				return
			}
			if op != 1 || !bytes.Contains(p, []byte(`"clientId":"flo"`)) && !bytes.Contains(p, []byte("flood-done-42")) {
				continue
			}
			switch {
			case bytes.Contains(p, []byte(`"rejectionReason"`)):
				n.rejections++
			case bytes.Contains(p, []byte(`"type":"terminal/resized"`)):
				n.resizes++
			case bytes.Contains(p, []byte("flood-done-42")):
				done <- n
				return
			}
		}
	}()

	const total = 100_000
	var ms runtime.MemStats
	var peak uint64
	wantRejections, wantResizes, lastCols := 0, 0, 80
	var batch []byte
	for i := range total {
		seq := i + 1
		var frame string
		switch k := i % 25; {
		case k == 0: // accepted: the shell runs a no-op
			frame = string(dispatchFrame(uri, seq, `{"type":"terminal/input","data":":\r"}`))
		case k == 1: // accepted: echoed to every subscriber
			lastCols = 80 + (i/25)%40
			wantResizes++
			frame = string(dispatchFrame(uri, seq, fmt.Sprintf(`{"type":"terminal/resized","cols":%d,"rows":24}`, lastCols)))
		case k%7 == 2: // refused at the gate: members may not change the config
			wantRejections++
			frame = string(dispatchFrame(messages.RootURI, seq, `{"type":"root/configChanged","config":{"enableCustomTerminalTool":true}}`))
		case k%7 == 3: // to no channel: ignored
			frame = string(dispatchFrame("ahp-terminal:/nowhere", seq, `{"type":"terminal/input","data":"x"}`))
		case k%7 == 4: // not an action: refused
			wantRejections++
			frame = string(dispatchFrame(uri, seq, `42`))
		case k%7 == 5: // the host's own action: refused by the terminal
			wantRejections++
			frame = string(dispatchFrame(uri, seq, `{"type":"terminal/data","data":"forged"}`))
		case k%7 == 6: // unknown to the terminal: refused
			wantRejections++
			frame = string(dispatchFrame(uri, seq, `{"type":"terminal/bogus"}`))
		default: // an envelope of the wrong shape: dropped
			frame = `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + uri + `","clientSeq":"x","action":{}}}`
		}
		batch = append(batch, maskedTextFrame(frame)...)
		if len(batch) > 32<<10 || i == total-1 {
			if _, err := f.nc.Write(batch); err != nil {
				t.Fatalf("flood write at %d: %v", i, err)
			}
			batch = batch[:0]
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
		if i == total/2 {
			// Mid-flood, the other connection is answered and its shell echoes.
			stillServes(by, byURI, "mid-flood")
		}
	}
	_, _ = f.nc.Write(maskedTextFrame(string(dispatchFrame(uri, total+1, `{"type":"terminal/input","data":"echo flood-done-$((40+2))\r"}`))))
	stillServes(by, byURI, "after-flood")

	select {
	case n := <-done:
		if n.err != nil {
			t.Fatalf("the flooding connection ended: %v", n.err)
		}
		if n.rejections != wantRejections || n.resizes != wantResizes {
			t.Errorf("flooder got %d refusals and %d resizes back, want %d and %d", n.rejections, n.resizes, wantRejections, wantResizes)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the flood's last input never ran")
	}
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapInuse)
	t.Logf("heap in use peaked at %d MiB", peak>>20)
	if peak > 512<<20 {
		t.Errorf("heap in use reached %d MiB during the flood", peak>>20)
	}
	snap, err := by.Subscribe(by.ctx(), uri)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := snap.TerminalState(); st.Cols == nil || *st.Cols != lastCols || st.Lifecycle.Status != messages.StatusRunning {
		t.Errorf("flooded terminal's state: %s", truncate(string(snap.State), 300))
	}
}

// TestAcceptedFloodCostsLittle: once the host's replay ring is full, each accepted
// action must still cost little. Measured in bytes allocated per action (the whole
// process, so generously), not in time.
func TestAcceptedFloodCostsLittle(t *testing.T) {
	// The bug this pins: Journal.record once copied the whole ring into a new slice
	// for every envelope after the ring was full, 400 KiB to 900 KiB per action.
	h := startHost(t)
	owner := h.dial("owner")
	uri := "ahp-terminal:/accepted-flood"
	owner.mustRequest("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": ""}})
	f := dialRawWS(t, h, h.owner)
	_, _ = f.nc.Write(maskedTextFrame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"acc","initialSubscriptions":["` + uri + `"]}}`))
	// The reader counts the echoes and pokes the test, which reads the count.
	var echoed atomic.Int64
	poke := make(chan struct{}, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			op, p, err := f.readFrame()
			if err != nil {
				return
			}
			if op == 1 && bytes.Contains(p, []byte(`"type":"terminal/resized"`)) && bytes.Contains(p, []byte(`"clientId":"acc"`)) {
				echoed.Add(1)
				select {
				case poke <- struct{}{}:
				default:
				}
			}
		}
	}()
	sent := 0
	flood := func(n int) {
		t.Helper()
		var batch []byte
		for range n {
			sent++
			batch = append(batch, maskedTextFrame(string(dispatchFrame(uri, sent, fmt.Sprintf(`{"type":"terminal/resized","cols":%d,"rows":24}`, 80+sent%40))))...)
		}
		if _, err := f.nc.Write(batch); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(2 * time.Minute)
		for echoed.Load() < int64(sent) {
			select {
			case <-poke:
			case <-ended:
				t.Fatal("the flooding connection ended")
			case <-deadline:
				t.Fatalf("%d of %d resizes echoed", echoed.Load(), sent)
			}
		}
	}
	const ring = 8192 // the replay ring's length (server.New)
	flood(ring + 100)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 1000
	flood(n)
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated per accepted action once the ring is full", per)
	if per > 64<<10 {
		t.Errorf("each accepted action allocates %d KiB once the replay ring is full: something copies per action", per>>10)
	}
}

func lastN(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestInvalidUTF8 sends bytes that are not UTF-8 inside JSON strings (the socket
// library does not check text frames). Whatever the host sends on must be UTF-8, or a
// browser watching the terminal would have to fail its connection (RFC 6455 8.1).
func TestInvalidUTF8(t *testing.T) {
	h := startHost(t)
	by := h.dial("bystander")
	uri := "ahp-terminal:/utf8"
	by.createTerminal(uri, nil)
	ws := h.rawOwner(t, "mangler", messages.RootURI, uri)

	writeRaw(t, ws, dispatchFrame(uri, 1, "{\"type\":\"terminal/input\",\"data\":\"echo bad-\xff\xfe-bytes ok-$((6*7))\\r\"}"))
	by.waitOutput(uri, "ok-42")
	echo := by.waitFor("the echo of the mangled input", envelopeFrom(uri, "mangler", 1))
	if !utf8.Valid(echo.Params) {
		t.Errorf("the input's echo is not UTF-8: %q", echo.Params)
	}
	if a, _ := echo.Envelope.Decode(); a.Data == nil || !strings.Contains(*a.Data, "bad-\uFFFD") {
		t.Errorf("echoed input %s", echo.Envelope.Action)
	}

	writeRaw(t, ws, dispatchFrame(uri, 2, "{\"type\":\"terminal/titleChanged\",\"title\":\"t\xc3\x28itle\"}"))
	title := by.waitFor("the echo of the mangled title", envelopeFrom(uri, "mangler", 2))
	if !utf8.Valid(title.Params) {
		t.Errorf("the title's echo is not UTF-8: %q", title.Params)
	}
	row := waitRoot(by, func(rows []messages.TerminalInfo) bool {
		r := findRow(rows, uri)
		return r != nil && strings.HasPrefix(r.Title, "t\uFFFD")
	})
	if r := findRow(row, uri); !utf8.ValidString(r.Title) {
		t.Errorf("root title %q", r.Title)
	}

	// A refused or malformed action is echoed to its sender: that echo too.
	writeRaw(t, ws, dispatchFrame(uri, 3, "{\"type\":\"terminal/input\",\"data\":7,\"x\":\"\xff\"}"))
	// Requests: the id and the method name come back in the answer.
	for _, frame := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"p\xffng\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":10,\xff\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"subscribe\",\"params\":{\"channel\":\"ahp-terminal:/\xff\"}}",
	} {
		writeRaw(t, ws, []byte(frame))
	}
	answers := 0
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for answers < 4 {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("reading answers: %v (got %d of 4)", err, answers)
		}
		if !utf8.Valid(data) {
			t.Errorf("host sent a frame that is not UTF-8: %q", data)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("host sent non-JSON %q", data)
		}
		if _, isNote := m["method"]; !isNote {
			answers++
			if m["id"] == "\uFFFD\uFFFD" && m["error"] != nil {
				t.Errorf("ping with a mangled id: %v", m)
			}
		}
	}
	stillServes(by, uri, "utf8")
}

// TestUnknownFieldsIgnored: fields the host does not know, at every level, are
// ignored, and an accepted action is echoed exactly as it was sent.
func TestUnknownFieldsIgnored(t *testing.T) {
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	uri := "ahp-terminal:/unknown-fields"
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","future":true,"params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"u","capabilities":{"x":[1,{"y":null}]},"initialSubscriptions":["ahp-root://"]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"createTerminal","params":{"channel":"` + uri + `","claim":{"kind":"client","clientId":"u","x":1},"color":"blue","_meta":{"someone-else":{"a":1},"x-termhost":{"future":1}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"` + uri + `","since":12}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"channel":"ahp-root://","extra":{"deep":[1,2,3]}}}`,
	} {
		if r := rawExchange(t, ws, frame); r["error"] != nil {
			t.Fatalf("%.60s: %v", frame, r)
		}
	}
	writeRaw(t, ws, []byte(`{"jsonrpc":"2.0","method":"dispatchAction","trace":"t1","params":{"channel":"`+uri+`","clientSeq":1,"priority":"high","action":{"type":"terminal/input","data":"echo unknown-ok-$((3*3))\r","future":{"a":[1]}}}}`))
	writeRaw(t, ws, []byte(`{"jsonrpc":"2.0","method":"someFutureNotification","params":{"x":1}}`))
	var echoed, ran bool
	for !(echoed && ran) {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for the input's echo and output: %v", err)
		}
		var n struct {
			Params client.Envelope `json:"params"`
		}
		_ = json.Unmarshal(data, &n)
		if n.Params.Origin != nil && n.Params.Origin.ClientSeq == 1 {
			if n.Params.RejectionReason != "" {
				t.Fatalf("input with unknown fields rejected: %s", data)
			}
			if !strings.Contains(string(n.Params.Action), `"future":{"a":[1]}`) {
				t.Errorf("the echo is not the action as sent: %s", n.Params.Action)
			}
			echoed = true
		}
		ran = ran || strings.Contains(string(data), "unknown-ok-9")
	}
}

// TestWrongTypesInParams: a param of the wrong type is -32602 with a sentence that
// names the field and what it must be; nothing is made, and the connection goes on.
func TestWrongTypesInParams(t *testing.T) {
	h := startHost(t)
	fresh := func() *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ws.CloseNow() })
		return ws
	}
	pre := fresh()
	for _, tc := range []struct{ params, want string }{
		{`{"channel":"ahp-root://","protocolVersions":"1.0.0","clientId":"x"}`, "protocolVersions must be an array"},
		{`{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":5}`, "clientId must be a string"},
		{`{"channel":"ahp-root://","protocolVersions":[1],"clientId":"x"}`, "must be a string"},
		{`{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"x","initialSubscriptions":"ahp-root://"}`, "initialSubscriptions must be an array"},
		{`[]`, "params must be an object"},
		{`"initialize"`, "params must be an object"},
		{`null`, "params are required"},
	} {
		r := rawExchange(t, pre, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+tc.params+`}`)
		checkRPCError(t, r, "initialize "+tc.params, messages.CodeInvalidParams, tc.want)
	}

	ws := h.rawOwner(t, "typo")
	for _, tc := range []struct{ method, params, want string }{
		{"subscribe", `{"channel":5}`, "channel must be a string"},
		{"subscribe", `"ahp-root://"`, "params must be an object"},
		{"subscribe", ``, "params are required"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","cols":"80","rows":24}`, "cols must be a whole number, not string"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","cols":80.5,"rows":24}`, "cols must be a whole number, not 80.5"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","rows":1e99}`, "rows must be a whole number, not 1e99"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","claim":"me"}`, "claim must be an object"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","claim":{"kind":7}}`, "claim.kind must be a string"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","name":["a"]}`, "name must be a string"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","_meta":{"x-termhost":{"command":"ls","args":"-l"}}}`, "args must be an array"},
		{"createTerminal", `{"channel":"ahp-terminal:/t","_meta":{"x-termhost":{"command":"ls","env":{"A":1}}}}`, "must be a string"},
		{"disposeTerminal", `{"channel":["ahp-terminal:/t"]}`, "channel must be a string"},
		{"reconnect", `{"clientId":"typo","lastSeenServerSeq":"5","subscriptions":[]}`, "lastSeenServerSeq must be a whole number of 0 or more, not string"},
		{"reconnect", `{"clientId":"typo","lastSeenServerSeq":-1,"subscriptions":[]}`, "lastSeenServerSeq must be a whole number of 0 or more, not -1"},
		{"reconnect", `{"clientId":"typo","lastSeenServerSeq":0,"subscriptions":"ahp-root://"}`, "subscriptions must be an array"},
	} {
		frame := `{"jsonrpc":"2.0","id":7,"method":"` + tc.method + `"`
		if tc.params != "" {
			frame += `,"params":` + tc.params
		}
		r := rawExchange(t, ws, frame+"}")
		checkRPCError(t, r, tc.method+" "+tc.params, messages.CodeInvalidParams, tc.want)
	}
	// A dispatch is a notification: a wrong type in the action comes back as a
	// rejection; one in the envelope, where no channel can be read, is dropped.
	writeRaw(t, ws, []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":7,"clientSeq":1,"action":{"type":"terminal/input","data":"x"}}}`))
	writeRaw(t, ws, []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-root://","clientSeq":"2","action":{"type":"root/configChanged","config":{}}}}`))
	writeRaw(t, ws, dispatchFrame(messages.RootURI, 3, `{"type":"root/configChanged","config":[1]}`))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for the rejection: %v", err)
		}
		var n struct {
			Params client.Envelope `json:"params"`
		}
		_ = json.Unmarshal(data, &n)
		if o := n.Params.Origin; o != nil {
			if o.ClientSeq != 3 || !strings.Contains(n.Params.RejectionReason, "config must be an object") {
				t.Fatalf("unexpected echo %s", data)
			}
			break
		}
	}
	// Nothing was made, and the connection goes on.
	if r := rawExchange(t, ws, `{"jsonrpc":"2.0","id":8,"method":"subscribe","params":{"channel":"ahp-terminal:/t"}}`); r["error"] == nil {
		t.Errorf("a terminal was made by a request with wrong types: %v", r)
	}
}

func checkRPCError(t *testing.T, r map[string]any, what string, code float64, want string) {
	t.Helper()
	e, _ := r["error"].(map[string]any)
	if e == nil || e["code"] != code {
		t.Errorf("%s: got %v, want error %v", what, r, code)
		return
	}
	msg, _ := e["message"].(string)
	if !strings.Contains(msg, want) {
		t.Errorf("%s: message %q does not say %q", what, msg, want)
	}
	// The message is for a person: no Go type names, no "a number, not number 1.5".
	for _, goism := range []string{"uint64", "int64", "float64", "[]string", "struct", "map[", "not number "} {
		if strings.Contains(msg, goism) {
			t.Errorf("%s: message %q names a Go type", what, msg)
		}
	}
}

// tapHandler shows every log record to tap before the test's own handler.
type tapHandler struct {
	slog.Handler
	tap func(slog.Record)
}

func (h tapHandler) Handle(ctx context.Context, r slog.Record) error {
	h.tap(r)
	return h.Handler.Handle(ctx, r)
}
func (h tapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return tapHandler{h.Handler.WithAttrs(as), h.tap}
}
func (h tapHandler) WithGroup(n string) slog.Handler {
	return tapHandler{h.Handler.WithGroup(n), h.tap}
}

func withLogTap(tap func(slog.Record)) hostOption {
	return func(c *server.Config) { c.Logger = slog.New(tapHandler{c.Logger.Handler(), tap}) }
}

// TestSlowReaderIsClosed: a client that stops reading while a terminal floods output
// is closed, with a reason that says why, once its queue passes the bound; the shell
// runs on and another connection keeps being served.
func TestSlowReaderIsClosed(t *testing.T) {
	closing := make(chan string, 8)
	h := startHost(t, withOutboxBytes(1<<20), withLogTap(func(r slog.Record) {
		if r.Message != "closing connection" {
			return
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "reason" {
				select {
				case closing <- a.Value.String():
				default:
				}
			}
			return true
		})
	}))
	by := h.dial("bystander")
	byURI := "ahp-terminal:/slow-bystander"
	by.createTerminal(byURI, nil)
	owner := h.dial("flood-owner")
	uri := "ahp-terminal:/slow-flood"
	owner.mustRequest("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "flood-owner"}})

	// The slow reader reads the handshake's answer and then nothing, until the host
	// says it is giving up on it. (A tiny socket buffer would only slow the test: on
	// loopback, with its 64 KiB segments, a window that small never reopens and the
	// data, close frame included, would crawl through on the persist timer.)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	slow, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	slow.SetReadLimit(64 << 20)
	if r := rawExchange(t, slow, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"slow","initialSubscriptions":["`+uri+`"]}}`); r["error"] != nil {
		t.Fatal(r)
	}

	stop := filepath.Join(t.TempDir(), "stop")
	owner.input(uri, "while [ ! -e "+stop+" ]; do head -c 262144 /dev/zero | tr '\\0' y; done; echo; echo flood-stopped-$((40+2)); exit 42\r")

	var reason string
	select {
	case reason = <-closing:
	case <-ctx.Done():
		t.Fatal("the host never gave up on a connection that does not read")
	}
	if reason != string(delivery.ReasonSlowConsumer) {
		t.Fatalf("closing for %q", reason)
	}
	// Reading now drains what the socket holds and ends with the close frame.
	var rerr error
	for rerr == nil {
		_, _, rerr = slow.Read(ctx)
	}
	var ce websocket.CloseError
	if !errors.As(rerr, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != string(delivery.ReasonSlowConsumer) {
		t.Fatalf("the slow reader ended with %v, want 1008 %q", rerr, delivery.ReasonSlowConsumer)
	}

	// The flood goes on; the other connection is served meanwhile.
	stillServes(by, byURI, "while-flooding")
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The shell ran the loop to its end: it exits with 42 once told to stop.
	waitRoot(by, func(rows []messages.TerminalInfo) bool {
		r := findRow(rows, uri)
		return r != nil && r.ExitCode != nil && *r.ExitCode == 42
	})
	// Closed as slow, it reconnects and catches up: a snapshot of the flooded
	// terminal, since replaying what it missed would take far more than the state.
	again := h.dialRaw(h.owner)
	if _, err := again.Initialize(again.ctx(), "slow"); err != nil {
		t.Fatal(err)
	}
	raw := again.mustRequest("reconnect", map[string]any{"channel": messages.RootURI, "clientId": "slow", "lastSeenServerSeq": 1, "subscriptions": []string{uri}})
	var caught struct {
		Type      string `json:"type"`
		Snapshots []struct {
			Resource string                 `json:"resource"`
			State    messages.TerminalState `json:"state"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(raw, &caught); err != nil {
		t.Fatal(err)
	}
	if caught.Type != "snapshot" || len(caught.Snapshots) != 1 || caught.Snapshots[0].Resource != uri ||
		!strings.Contains(caught.Snapshots[0].State.Text(), "flood-stopped-42") {
		t.Fatalf("reconnect after being closed as slow: %s", truncate(string(raw), 400))
	}
	_ = again.Close() // it reads no more of the flood than this test needs

	snap, err := by.Subscribe(by.ctx(), uri)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := snap.TerminalState()
	var text strings.Builder
	for _, p := range st.Content {
		text.WriteString(p.Text())
	}
	if !strings.Contains(text.String(), "yyyy") || !strings.Contains(text.String(), "flood-stopped-42") {
		t.Errorf("flooded terminal's content ends %q", lastN(text.String(), 200))
	}
	select {
	case r := <-closing:
		t.Errorf("another connection was closed too: %s", r)
	default:
	}
}

// countActors is the number of live actors in the host's system.
func countActors(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// TestHandshakeDrops: a thousand connections that open and drop at every point of the
// handshake leave nothing behind: the goroutine and actor counts return to where they
// were, and the host goes on serving.
func TestHandshakeDrops(t *testing.T) {
	h := startHost(t)
	keep := h.dial("keeper")
	uri := "ahp-terminal:/drops"
	keep.createTerminal(uri, nil)
	stillServes(keep, uri, "before")
	baseGoroutines, baseActors := runtime.NumGoroutine(), countActors(h.srv.System())

	upgrade := upgradeRequest(h, h.owner)
	initialize := maskedTextFrame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"drop","initialSubscriptions":["ahp-root://","` + uri + `"]}}`)
	for i := range 1000 {
		nc, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		switch i % 5 {
		case 0: // connect and go
		case 1: // half a request line
			_, _ = io.WriteString(nc, "GET /?tkn="+h.owner)
		case 2: // all but the end of the headers
			_, _ = io.WriteString(nc, upgrade[:len(upgrade)-2])
		case 3, 4: // upgraded, then gone; the last also sent initialize
			_, _ = io.WriteString(nc, upgrade)
			(&rawWS{nc: nc, br: bufio.NewReader(nc)}).readUpgrade(t)
			if i%5 == 4 {
				_, _ = nc.Write(initialize)
			}
		}
		_ = nc.Close()
	}

	// No event says a goroutine has ended, so the counts are polled, under a deadline.
	var g, a int
	if !poll(waitTimeout, func() bool {
		g, a = runtime.NumGoroutine(), countActors(h.srv.System())
		return g <= baseGoroutines+5 && a <= baseActors
	}) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("after 1000 dropped handshakes: %d goroutines (were %d), %d actors (were %d)\n%s", g, baseGoroutines, a, baseActors, buf)
	}
	stillServes(keep, uri, "after")
}

// poll checks cond every few milliseconds until it holds or timeout passes, for
// conditions no event announces (a goroutine ending, an object being collected).
func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}

// maskedTextFrame is one client-to-server text frame (RFC 6455 5.2), masked as a
// client must, for a payload under 64 KiB.
func maskedTextFrame(payload string) []byte {
	key := [4]byte{1, 2, 3, 4}
	var b []byte
	b = append(b, 0x81)
	if len(payload) < 126 {
		b = append(b, 0x80|byte(len(payload)))
	} else {
		b = append(b, 0x80|126, byte(len(payload)>>8), byte(len(payload)))
	}
	b = append(b, key[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^key[i%4])
	}
	return b
}
