package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/termhost/termhost/actors"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
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
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != string(actors.ReasonSignedOut) {
		t.Fatalf("the connection ended with %v, want 1008 %q", err, actors.ReasonSignedOut)
	}
}
