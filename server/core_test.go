package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func TestHealthz(t *testing.T) {
	h := startHost(t)
	resp, err := http.Get("http://" + h.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}
}

// rawExchange sends one raw frame and returns the next answer frame.
func rawExchange(t *testing.T, ws *websocket.Conn, frame string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", frame, err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("host sent non-JSON %q", data)
		}
		if _, isNote := m["method"]; !isNote {
			return m
		}
	}
}

func TestPingAndIDsBeforeAndAfterInitialize(t *testing.T) {
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(websocket.StatusNormalClosure, "")

	r := rawExchange(t, ws, `{"jsonrpc":"2.0","id":"abc","method":"ping","params":{"channel":"ahp-root://"}}`)
	if r["id"] != "abc" || r["result"] != nil || r["error"] != nil {
		t.Fatalf("ping with a string id: %v", r)
	}
	r = rawExchange(t, ws, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"],"clientId":"c1"}}`)
	res, _ := r["result"].(map[string]any)
	if r["id"] != float64(7) || res == nil || res["protocolVersion"] != "0.7.0" {
		t.Fatalf("initialize at 0.7.0: %v", r)
	}
	r = rawExchange(t, ws, `{"jsonrpc":"2.0","id":12345678901,"method":"ping","params":{"channel":"ahp-root://"}}`)
	if r["id"] != float64(12345678901) {
		t.Fatalf("ping with a large numeric id: %v", r)
	}
}

func TestVersionNegotiation(t *testing.T) {
	h := startHost(t)
	for _, tc := range []struct {
		offer []string
		want  string
	}{
		{[]string{"0.9.0", "1.0.0"}, "1.0.0"},
		{[]string{"1.3.0"}, "1.3.0"},
		{[]string{"0.5.1"}, "0.5.1"},
		{[]string{"0.8.0", "0.6.2"}, "0.8.0"},
	} {
		c := h.dialRaw(h.owner)
		raw, err := c.Request(c.ctx(), "initialize", map[string]any{"channel": messages.RootURI, "protocolVersions": tc.offer, "clientId": "v"})
		if err != nil {
			t.Fatalf("offer %v: %v", tc.offer, err)
		}
		var r struct{ ProtocolVersion string }
		_ = json.Unmarshal(raw, &r)
		if r.ProtocolVersion != tc.want {
			t.Errorf("offer %v: got %s, want %s", tc.offer, r.ProtocolVersion, tc.want)
		}
	}

	c := h.dialRaw(h.owner)
	_, err := c.Request(c.ctx(), "initialize", map[string]any{"channel": messages.RootURI, "protocolVersions": []string{"2.0.0", "0.5.0"}, "clientId": "v"})
	e := rpcError(t, err, messages.CodeUnsupportedProtocolVersion)
	data, _ := e.Data.(map[string]any)
	if list, _ := data["supportedVersions"].([]any); len(list) == 0 || list[0] != "^1.0.0" {
		t.Fatalf("-32005 without supportedVersions: %+v", e)
	}
	select {
	case <-c.Done():
	case <-c.ctx().Done():
		t.Fatal("the host kept the connection open after an offer it cannot meet")
	}
}

func TestRootSnapshotAndConfig(t *testing.T) {
	h := startHost(t)
	c := h.dialRaw(h.owner)
	res, err := c.Initialize(c.ctx(), "c1", messages.RootURI)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Snapshots) != 1 || res.Snapshots[0].Resource != messages.RootURI {
		t.Fatalf("snapshots: %+v", res.Snapshots)
	}
	var root struct {
		Agents    []any                `json:"agents"`
		Terminals []any                `json:"terminals"`
		Config    *messages.RootConfig `json:"config"`
	}
	if err := json.Unmarshal(res.Snapshots[0].State, &root); err != nil {
		t.Fatal(err)
	}
	if root.Agents == nil || root.Terminals == nil || root.Config == nil {
		t.Fatalf("root state lacks agents, terminals or config: %s", res.Snapshots[0].State)
	}
	for _, key := range []string{"defaultShell", "enableCustomTerminalTool"} {
		if _, ok := root.Config.Values[key]; !ok {
			t.Errorf("config values lack %s", key)
		}
	}
	if !strings.HasPrefix(res.DefaultDirectory, "file:///") {
		t.Errorf("defaultDirectory %q", res.DefaultDirectory)
	}

	// A push of defaultShell is echoed and folded into root state.
	cc := &conn{t: t, Conn: c.Conn, clientID: "c1"}
	cc.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": "/bin/sh"}})
	env := cc.waitAction(messages.RootURI, "root/configChanged")
	if env.RejectionReason != "" || env.Origin == nil || env.Origin.ClientID != "c1" {
		t.Fatalf("configChanged echo: %+v", env)
	}
	cc.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": "relative/sh"}})
	bad := cc.waitFor("rejected configChanged", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.RejectionReason != ""
	})
	if !strings.Contains(bad.Envelope.RejectionReason, "absolute") {
		t.Fatalf("rejection: %q", bad.Envelope.RejectionReason)
	}
}

func TestBadInputGetsAnswersAndHostGoesOn(t *testing.T) {
	h := startHost(t)
	other := h.dial("other")
	uri := "ahp-terminal:/bad-input-bystander"
	other.createTerminal(uri, nil)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(websocket.StatusNormalClosure, "")
	rawExchange(t, ws, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"bad"}}`)

	for _, tc := range []struct {
		frame  string
		code   float64
		nullID bool
		want   string
	}{
		{`{"jsonrpc":"2.0","id":2,"method":`, messages.CodeParseError, true, "Parse error"},
		{`{"jsonrpc":"2.0","id":3}`, messages.CodeInvalidRequest, false, "no method"},
		{`{"jsonrpc":"2.0","id":4,"method":"noSuchMethod","params":{"channel":"ahp-root://"}}`, messages.CodeMethodNotFound, false, "noSuchMethod"},
		{`{"jsonrpc":"2.0","id":5,"method":"createTerminal","params":{"channel":42}}`, messages.CodeInvalidParams, false, "channel must be a string"},
		{`{"jsonrpc":"2.0","id":6,"method":"subscribe","params":{"channel":"ahp-terminal:/nobody-here"}}`, messages.CodeNotFound, false, "nobody-here"},
		{`{"jsonrpc":"2.0","id":7,"method":"createTerminal","params":{"channel":"ahp-terminal:/x","claim":{"kind":"martian"}}}`, messages.CodeInvalidParams, false, "claim"},
		{`[1,2,3]`, messages.CodeInvalidRequest, true, "Invalid request"},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), messages.CodeParseError, true, "Parse error"},
	} {
		r := rawExchange(t, ws, tc.frame)
		e, _ := r["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || !strings.Contains(e["message"].(string), tc.want) {
			t.Errorf("%.60s: got %v, want code %v mentioning %q", tc.frame, r, tc.code, tc.want)
		}
		if tc.nullID && r["id"] != nil {
			t.Errorf("%.60s: id should be null, got %v", tc.frame, r["id"])
		}
	}
	// The connection, the host and the other connection's terminal are untouched.
	r := rawExchange(t, ws, `{"jsonrpc":"2.0","id":99,"method":"ping","params":{"channel":"ahp-root://"}}`)
	if r["id"] != float64(99) {
		t.Fatalf("ping after bad input: %v", r)
	}
	other.input(uri, "echo still-here\r")
	other.waitOutput(uri, "still-here")
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	h := startHost(t)
	other := h.dial("other")
	c := h.dial("big")
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://","pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	_ = c.WS().Write(c.ctx(), websocket.MessageText, []byte(big))
	<-c.Done()
	if st := websocket.CloseStatus(c.Err()); st != websocket.StatusMessageTooBig {
		t.Fatalf("close status %v (%v), want 1009", st, c.Err())
	}
	other.mustRequest("ping", map[string]any{"channel": messages.RootURI})
}
