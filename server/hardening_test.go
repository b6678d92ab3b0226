package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
	"github.com/termhost/termhost/server"
)

// Hardening: what a careless or hostile client leaves behind when it goes, and what
// one local process may hold of the host.

// openDescriptors is how many files this process holds open; the host runs in it.
func openDescriptors(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	return len(fds)
}

// TestAbruptDropsReleaseSockets: connections that vanish without a close frame (a
// killed client, a pulled cable) give back their sockets, with and without a token,
// before and after the handshake; the host's descriptor count returns to where it
// was and the owner still gets in.
func TestAbruptDropsReleaseSockets(t *testing.T) {
	h := startHost(t)
	keep := h.dial("keeper")
	uri := "ahp-terminal:/drop-sockets"
	keep.createTerminal(uri, nil)
	stillServes(keep, uri, "before")
	base := openDescriptors(t)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var socks []*websocket.Conn
	for i := range 100 {
		token := h.owner
		if i%2 == 0 {
			token = "" // anonymous, as a local process without the token file would be
		}
		ws, _, err := websocket.Dial(ctx, h.url(token), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i%4 < 2 { // half of them sign the protocol in too, and subscribe
			init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
				"channel": messages.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": "dropper",
				"initialSubscriptions": []string{messages.RootURI, uri},
			}})
			rawExchange(t, ws, string(init))
		}
		socks = append(socks, ws)
	}
	for _, ws := range socks {
		_ = ws.CloseNow() // no close frame: the TCP connection just ends
	}

	// No event says the host let a descriptor go, so the count is polled under a deadline.
	var now int
	if !poll(waitTimeout, func() bool { now = openDescriptors(t); return now <= base }) {
		t.Fatalf("after 100 abrupt drops the process holds %d descriptors, was %d", now, base)
	}
	stillServes(keep, uri, "after")
	fresh := h.dial("fresh-owner")
	fresh.mustRequest("ping", map[string]any{"channel": messages.RootURI})
}

// TestAnonymousConnectionsAreBounded: a local process without a token may hold only so
// many sockets; the next is refused with a reason, the owner still gets in, and a
// socket given back makes room again.
func TestAnonymousConnectionsAreBounded(t *testing.T) {
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var held []*websocket.Conn
	for i := range 64 {
		ws, _, err := websocket.Dial(ctx, h.url(""), nil)
		if err != nil {
			t.Fatalf("anonymous connection %d of the 64 allowed: %v", i, err)
		}
		held = append(held, ws)
	}
	_, resp, err := websocket.Dial(ctx, h.url(""), nil)
	if err == nil {
		t.Fatal("a 65th connection without a token was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the 65th anonymous connection: %v, response %+v; want 503", err, resp)
	}
	if body := refusalBody(resp); !strings.Contains(body, "too many connections without a token") {
		t.Fatalf("the refusal says %q; want it to say why", body)
	}
	owner := h.dial("owner-still-in")
	owner.mustRequest("ping", map[string]any{"channel": messages.RootURI})

	_ = held[0].CloseNow()
	if !poll(waitTimeout, func() bool {
		ws, _, err := websocket.Dial(ctx, h.url(""), nil)
		if err != nil {
			return false
		}
		held = append(held, ws)
		return true
	}) {
		t.Fatal("a socket given back did not make room for another anonymous connection")
	}
	for _, ws := range held {
		_ = ws.CloseNow()
	}
}

// refusalBody reads why an upgrade was refused.
func refusalBody(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return b.String()
}

// TestBusyRevokedConnectionIsClosed: a member subscribed to the root who keeps sending
// frames is closed with 1008 once its token is revoked, as a quiet one is; its own
// frames must not keep it signed in as nobody.
func TestBusyRevokedConnectionIsClosed(t *testing.T) {
	h := startHost(t)
	cli, err := auth.Open(filepath.Dir(h.store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cli.AddToken("busy", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.dialAs(t, tok, "busy", messages.RootURI)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // a frame every 5 ms until the connection ends
		defer close(sent)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		ping := []byte(`{"jsonrpc":"2.0","method":"ping","params":{"channel":"ahp-root://"}}`)
		for {
			select {
			case <-stop:
				return
			case <-c.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.WS().Write(ctx, websocket.MessageText, ping)
			cancel()
		}
	}()
	defer func() { close(stop); <-sent }()

	if _, err := cli.Revoke("busy"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(waitTimeout):
		t.Fatal("a busy connection stayed open after its token was revoked")
	}
	var ce websocket.CloseError
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != string(delivery.ReasonSignedOut) {
		t.Fatalf("the connection ended with %v, want 1008 %q", err, delivery.ReasonSignedOut)
	}
}

// rootTerminals is the root list as a new client's handshake gives it.
func rootTerminals(t *testing.T, h *testHost, clientID string) []messages.TerminalInfo {
	t.Helper()
	_, res := h.dialAs(t, h.owner, clientID, messages.RootURI)
	st := rootSnapshot(t, res)
	if st.Terminals == nil {
		return nil
	}
	return *st.Terminals
}

// TestNamesAndTitlesAreBounded: a name or title over MaxTitleBytes is refused with a
// reason, so nobody's handshake carries megabytes of someone's name; one at the limit
// is kept whole.
func TestNamesAndTitlesAreBounded(t *testing.T) {
	h := startHost(t)
	c := h.dial("namer")
	huge := strings.Repeat("n", 3<<20)
	_, err := c.request("createTerminal", map[string]any{"channel": "ahp-terminal:/huge", "claim": map[string]any{"kind": "client", "clientId": "namer"}, "name": huge})
	if e := rpcError(t, err, messages.CodeInvalidParams); !strings.Contains(e.Message, "the name is 3145728 bytes; at most 1024") {
		t.Errorf("a 3 MiB name: %q", e.Message)
	}
	atLimit := strings.Repeat("l", limits.MaxTitleBytes)
	uri := "ahp-terminal:/at-limit"
	c.createTerminal(uri, map[string]any{"name": atLimit})
	for _, row := range rootTerminals(t, h, "reader") {
		if row.Resource == "ahp-terminal:/huge" {
			t.Fatal("the refused terminal is on the root list")
		}
		if row.Resource == uri && row.Title != atLimit {
			t.Errorf("a name at the limit came back as %d bytes", len(row.Title))
		}
	}

	seq := c.dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": strings.Repeat("t", 1<<20)})
	n := c.waitFor("the refused title", envelopeFrom(uri, "namer", seq))
	if want := "the title is 1048576 bytes; at most 1024"; n.Envelope.RejectionReason != want {
		t.Errorf("a 1 MiB title: rejectionReason %q, want %q", n.Envelope.RejectionReason, want)
	}
	seq = c.dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "short"})
	if n := c.waitFor("the short title", envelopeFrom(uri, "namer", seq)); n.Envelope.RejectionReason != "" {
		t.Errorf("a short title was refused: %s", n.Envelope.RejectionReason)
	}
	stillServes(c, uri, "bounded")
}

// TestChannelURIsAreChecked: a URI that is too long or holds control or bidirectional
// formatting characters is refused wherever a client names a channel, and a terminal
// cannot be created under a session's or a chat's URI.
func TestChannelURIsAreChecked(t *testing.T) {
	h := startHost(t)
	c := h.dial("uris")
	claim := map[string]any{"kind": "client", "clientId": "uris"}
	for name, uri := range map[string]string{
		"NUL":          "ahp-terminal:/a\x00b",
		"newline":      "ahp-terminal:/a\nb",
		"RLO":          "ahp-terminal:/invoice\u202etxt.exe",
		"too long":     "ahp-terminal:/" + strings.Repeat("x", limits.MaxURIBytes),
		"session's":    "ahp-session:/victim/chat",
		"root's":       "ahp-root://x",
		"a file":       "file:///etc/passwd",
		"no scheme":    "victim",
		"chat's":       "ahp-chat:/victim",
		"other scheme": "x-mine:/t",
	} {
		_, err := c.request("createTerminal", map[string]any{"channel": uri, "claim": claim})
		if e := rpcError(t, err, messages.CodeInvalidParams); !strings.Contains(e.Message, "URI") {
			t.Errorf("createTerminal on a %s URI: %q does not say what is wrong with the URI", name, e.Message)
		}
		if name == "NUL" || name == "RLO" || name == "too long" {
			_, err := c.request("subscribe", map[string]any{"channel": uri})
			rpcError(t, err, messages.CodeInvalidParams)
			_, err = c.request("createSession", map[string]any{"channel": strings.Replace(uri, "ahp-terminal:", "ahp-session:", 1)})
			rpcError(t, err, messages.CodeInvalidParams)
		}
	}
	if rows := rootTerminals(t, h, "uri-reader"); len(rows) != 0 {
		t.Fatalf("refused terminals are on the root list: %+v", rows)
	}

	// The session created after the refused terminal owns its own chat.
	chat := c.openSession("ahp-session:/victim", t.TempDir())
	id := c.say(chat, "!echo mine-$((20+22))")
	c.waitFor("the victim's own turn", func(n *client.Notification) bool {
		return n.Envelope != nil && n.Envelope.Channel == chat && n.Envelope.Type == "chat/turnComplete" && strings.Contains(string(n.Envelope.Action), id)
	})
	// An editor's own scheme is a terminal's.
	c.createTerminal("agenthost-terminal:/editor-1", nil)
	stillServes(c, "agenthost-terminal:/editor-1", "editor")
}

// TestDefaultDirectoryIsTheHome: a host started without a home folder of its own
// names the user's home as defaultDirectory, never a bare "file:" that a client
// would pass back as a cwd.
func TestDefaultDirectoryIsTheHome(t *testing.T) {
	h := startHost(t, func(c *server.Config) { c.Root.Home = "" })
	_, res := h.dialAs(t, h.owner, "home", messages.RootURI)
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/"
	}
	if want := (&url.URL{Scheme: "file", Path: home}).String(); res.DefaultDirectory != want {
		t.Fatalf("defaultDirectory %q, want %q", res.DefaultDirectory, want)
	}
}

// TestJSONRPCToTheLetter: a request with a null id is answered (with id null), not
// dropped; "jsonrpc" must be "2.0"; method and member names are matched exactly.
func TestJSONRPCToTheLetter(t *testing.T) {
	h := startHost(t)
	ws := h.rawOwner(t, "strict", messages.RootURI)
	r := rawExchange(t, ws, `{"jsonrpc":"2.0","id":null,"method":"ping","params":{"channel":"ahp-root://"}}`)
	if id, has := r["id"]; !has || id != nil || r["error"] != nil {
		t.Errorf("a ping with id null: answered %v", r)
	}
	for frame, want := range map[string]struct {
		code float64
		says string
	}{
		`{"id":7,"method":"ping"}`:                                                         {messages.CodeInvalidRequest, `"jsonrpc" must be "2.0"`},
		`{"jsonrpc":"2.0","id":7,"method":"PING"}`:                                         {messages.CodeMethodNotFound, "Method not found: PING"},
		`{"jsonrpc":"2.0","id":7,"METHOD":"ping"}`:                                         {messages.CodeInvalidRequest, `did you mean "method"?`},
		`{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{"Channel":"ahp-root://"}}`: {messages.CodeInvalidParams, `"Channel" is not a member here: member names are case-sensitive (did you mean "channel"?)`},
	} {
		checkRPCError(t, rawExchange(t, ws, frame), frame, want.code, want.says)
	}

	// An action whose member names are in the wrong case is refused, not typed.
	c := h.dial("strict-typist")
	uri := "ahp-terminal:/strict"
	c.createTerminal(uri, nil)
	c.seq++
	writeRaw(t, c.WS(), []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"`+uri+`","clientSeq":`+strconv.FormatInt(c.seq, 10)+`,"action":{"type":"terminal/input","DATA":"echo shouted\r"}}}`))
	n := c.waitFor("the refused action", envelopeFrom(uri, "strict-typist", c.seq))
	if !strings.Contains(n.Envelope.RejectionReason, `"DATA" is not a member here`) {
		t.Errorf("an action with DATA: rejectionReason %q", n.Envelope.RejectionReason)
	}
	stillServes(c, uri, "strict")
}

// TestRebindingRefused: a page whose name was rebound to 127.0.0.1 sends its own name
// in Host and a matching Origin; a loopback host refuses it, while loopback names and
// the hosts --allow-origin names are served.
func TestRebindingRefused(t *testing.T) {
	h := startHost(t, withAllowOrigins("app.example.com"))
	_, port, _ := net.SplitHostPort(h.addr)
	upgrade := func(host, origin string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		hdr := http.Header{}
		if origin != "" {
			hdr.Set("Origin", origin)
		}
		ws, resp, err := websocket.Dial(ctx, "ws://"+h.addr+"/", &websocket.DialOptions{HTTPHeader: hdr, Host: host})
		if err == nil {
			defer ws.CloseNow()
			// The root state is what a rebinding page would be after.
			rawExchange(t, ws, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatalf("Host %s: %v", host, err)
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"evil.example:" + port, "http://evil.example:" + port, http.StatusForbidden},
		{"evil.example", "", http.StatusForbidden},
		{"127.0.0.1.evil.example:" + port, "", http.StatusForbidden},
		{"localhost:" + port, "http://localhost:" + port, http.StatusSwitchingProtocols},
		{"127.0.0.1:" + port, "", http.StatusSwitchingProtocols},
		{"[::1]:" + port, "", http.StatusSwitchingProtocols},
		{"app.example.com:" + port, "https://app.example.com", http.StatusSwitchingProtocols},
	} {
		if got := upgrade(tc.host, tc.origin); got != tc.want {
			t.Errorf("Host %s, Origin %q: status %d, want %d", tc.host, tc.origin, got, tc.want)
		}
	}
}

// TestUnknownRootConfigKeysRefused: root config is served to everyone, so a key its
// schema does not name is refused with a reason and never stored.
func TestUnknownRootConfigKeysRefused(t *testing.T) {
	h := startHost(t)
	c := h.dial("configurer")
	seq := c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"defaultShell": "/bin/sh", "evil": strings.Repeat("x", 100)}})
	n := c.waitFor("the refused config", envelopeFrom(messages.RootURI, "configurer", seq))
	if want := `"evil" is not a root config key here; the keys are defaultShell and enableCustomTerminalTool`; n.Envelope.RejectionReason != want {
		t.Errorf("rejectionReason %q, want %q", n.Envelope.RejectionReason, want)
	}
	_, res := h.dialAs(t, h.owner, "config-reader", messages.RootURI)
	st := rootSnapshot(t, res)
	if _, stored := st.Config.Values["evil"]; stored || st.Config.Values["defaultShell"] != "" {
		t.Errorf("a refused change was stored: %v", st.Config.Values)
	}
	seq = c.dispatch(messages.RootURI, map[string]any{"type": "root/configChanged", "config": map[string]any{"enableCustomTerminalTool": true}})
	if n := c.waitFor("a known key", envelopeFrom(messages.RootURI, "configurer", seq)); n.Envelope.RejectionReason != "" {
		t.Errorf("a known key was refused: %s", n.Envelope.RejectionReason)
	}
}
