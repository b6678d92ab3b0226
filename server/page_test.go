package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// get fetches path from the host with extra request headers.
func (h *testHost) get(method, path string, header http.Header) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, "http://"+h.addr+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, string(body)
}

// policy splits a Content-Security-Policy into its directives' sources.
func policy(csp string) map[string][]string {
	p := map[string][]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			p[f[0]] = f[1:]
		}
	}
	return p
}

// TestPageAtRoot: a browser's GET of / is the page, under a policy that allows no
// inline script, no eval, no framing and connections to this host only, with
// nosniff and no referrer; the page itself holds no inline script.
func TestPageAtRoot(t *testing.T) {
	h := startHost(t)
	resp, body := h.get(http.MethodGet, "/", http.Header{"Accept": {"text/html"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s %q", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("GET /: Content-Type %q", ct)
	}
	for header, want := range map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
	} {
		if got := resp.Header.Get(header); got != want {
			t.Errorf("GET /: %s %q, want %q", header, got, want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	p := policy(csp)
	wantSources := map[string][]string{
		"default-src":     {"'self'"},
		"script-src":      {"'self'"},
		"frame-ancestors": {"'none'"},
		"object-src":      {"'none'"},
		"base-uri":        {"'none'"},
		"connect-src":     {"'self'", "ws://" + h.addr, "wss://" + h.addr},
	}
	for d, want := range wantSources {
		if !slices.Equal(p[d], want) {
			t.Errorf("policy %s is %q, want %q (policy: %s)", d, p[d], want, csp)
		}
	}
	// xterm.js writes style elements and attributes of its own; nothing else is inline.
	if !slices.Equal(p["style-src"], []string{"'self'", "'unsafe-inline'"}) {
		t.Errorf("policy style-src is %q", p["style-src"])
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "*") {
		t.Errorf("the policy allows eval or any host: %s", csp)
	}

	// Every script is a file of the page's own, and no element has an inline handler.
	scripts := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(body, -1)
	if len(scripts) == 0 {
		t.Fatalf("the page has no script: %s", body)
	}
	for _, s := range scripts {
		if !strings.Contains(s[1], `src="/assets/`) || strings.TrimSpace(s[2]) != "" {
			t.Errorf("an inline script, or one from elsewhere: %s", s[0])
		}
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+\s*=`).FindString(body); m != "" {
		t.Errorf("the page has an inline handler %q", m)
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)="(/[^"]*)"`).FindAllStringSubmatch(body, -1) {
		if resp, _ := h.get(http.MethodGet, ref[1], nil); resp.StatusCode != http.StatusOK {
			t.Errorf("the page refers to %s, which answers %s", ref[1], resp.Status)
		}
	}
}

// TestPageAssets: the page's files are served with their own content types (nosniff
// would make a browser refuse a script served as anything else), answer HEAD and
// If-None-Match, and an asset path the build has not made is not found; a plain GET
// of any other path is still the WebSocket's (426).
func TestPageAssets(t *testing.T) {
	h := startHost(t)
	for path, want := range map[string]string{
		"/assets/app.js":       "text/javascript; charset=utf-8",
		"/assets/app.css":      "text/css; charset=utf-8",
		"/assets/icon.svg":     "image/svg+xml",
		"/assets/licenses.txt": "text/plain; charset=utf-8",
	} {
		resp, body := h.get(http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK || body == "" {
			t.Errorf("GET %s: %s, %d bytes", path, resp.Status, len(body))
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != want {
			t.Errorf("GET %s: Content-Type %q, want %q", path, ct, want)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		etag := resp.Header.Get("ETag")
		head, headBody := h.get(http.MethodHead, path, nil)
		if head.StatusCode != http.StatusOK || headBody != "" || head.Header.Get("Content-Type") != want {
			t.Errorf("HEAD %s: %s %q, %d bytes", path, head.Status, head.Header.Get("Content-Type"), len(headBody))
		}
		if again, _ := h.get(http.MethodGet, path, http.Header{"If-None-Match": {etag}}); etag == "" || again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s: %s", path, etag, again.Status)
		}
	}
	if resp, _ := h.get(http.MethodGet, "/assets/no-such-file.js", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a missing asset: %s, want 404", resp.Status)
	}
	if resp, _ := h.get(http.MethodGet, "/somewhere", nil); resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("a plain GET of another path: %s, want 426 from the WebSocket", resp.Status)
	}
	if resp, _ := h.get(http.MethodPost, "/", nil); resp.StatusCode == http.StatusOK {
		t.Errorf("POST / is answered with the page")
	}
}

// TestPageLoopbackNames: a host on loopback serves its page only to loopback names,
// as its WebSocket does, so a rebound name gets nothing from it.
func TestPageLoopbackNames(t *testing.T) {
	h := startHost(t)
	req, _ := http.NewRequest(http.MethodGet, "http://"+h.addr+"/", nil)
	req.Host = "rebound.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the page for Host rebound.example: %s, want 403", resp.Status)
	}
	req.Host = "localhost"
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the page for Host localhost: %s", resp.Status)
	}
}

// TestWebSocketBesidePage: an upgrade goes to the WebSocket on every path, the
// page's own included.
func TestWebSocketBesidePage(t *testing.T) {
	h := startHost(t)
	for _, path := range []string{"/", "/assets/app.js", "/anything"} {
		c := h.dialPath(t, path+"?tkn="+h.owner, nil)
		if _, err := c.Initialize(c.ctx(), "beside"+strings.ReplaceAll(path, "/", "-"), messages.RootURI); err != nil {
			t.Errorf("initialize over a WebSocket on %s: %v", path, err)
		}
	}
}

// TestSubprotocolSignIn: the page's sign-in, a token offered as the subprotocol
// termhost.bearer.TOKEN, signs in; the host echoes termhost where it was offered too
// (so the token does not come back), else the bearer subprotocol, as a browser needs
// one of its own back. A wrong token offered that way is refused outright, on
// loopback too, where a wrong ?tkn= is let in as nobody.
func TestSubprotocolSignIn(t *testing.T) {
	h := startHost(t)
	bearer := "termhost.bearer." + h.owner
	for _, tc := range []struct {
		name    string
		offered []string
		echoed  string
	}{
		{"bearer alone", []string{bearer}, bearer},
		{"as the page offers it", []string{"termhost", bearer}, "termhost"},
		{"bearer first", []string{bearer, "termhost"}, "termhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := h.dialPath(t, "/", &websocket.DialOptions{Subprotocols: tc.offered})
			if got := c.WS().Subprotocol(); got != tc.echoed {
				t.Errorf("echoed subprotocol %q, want %q", got, tc.echoed)
			}
			if _, err := c.Initialize(c.ctx(), "sub-"+tc.name, messages.RootURI); err != nil {
				t.Fatal(err)
			}
			if ok, msg := c.canRead(); !ok {
				t.Errorf("not signed in: %s", msg)
			}
		})
	}

	for _, tc := range []struct{ name, protocol string }{
		{"wrong token", "termhost.bearer.th_not-a-token"},
		{"empty token", "termhost.bearer."},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := client.Dial(ctx, "ws://"+h.addr+"/", &websocket.DialOptions{Subprotocols: []string{"termhost", tc.protocol}})
		cancel()
		var up *client.UpgradeError
		if !errors.As(err, &up) || up.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %v, want a 401 refusal", tc.name, err)
		} else if !strings.Contains(up.Body, "sign in") {
			t.Errorf("%s: refusal %q does not say to sign in", tc.name, up.Body)
		}
	}

	// Clients that offer no subprotocol are answered with none, as before.
	c := h.dialPath(t, "/?tkn="+h.owner, nil)
	if got := c.WS().Subprotocol(); got != "" {
		t.Errorf("a client that offered none got subprotocol %q", got)
	}
}

// dialPath opens a WebSocket to path (with its query) on the host.
func (h *testHost) dialPath(t *testing.T, path string, opts *websocket.DialOptions) *conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, "ws://"+h.addr+path, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &conn{t: t, Conn: c}
}

// TestPageURL: the address serve prints carries the token in the fragment only.
func TestPageURL(t *testing.T) {
	for _, tc := range []struct{ hostport, token, want string }{
		{"127.0.0.1:9187", "th_AbC-_9", "http://127.0.0.1:9187/#tkn=th_AbC-_9"},
		{"[::1]:9187", "th_x", "http://[::1]:9187/#tkn=th_x"},
		{"localhost:1", "a b&c", "http://localhost:1/#tkn=a+b%26c"},
	} {
		if got := server.PageURL(tc.hostport, tc.token); got != tc.want {
			t.Errorf("PageURL(%q, %q) = %q, want %q", tc.hostport, tc.token, got, tc.want)
		}
	}
}
