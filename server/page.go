package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// pageFiles is the browser page, built from ../web by `npm run build` (esbuild,
// with xterm.js bundled in) and committed, so that `go run` needs no npm.
//
//go:embed web/dist
var pageFiles embed.FS

// pageTypes are the content types of the page's files, by extension. They are
// fixed here rather than taken from the mime package, whose table a machine's
// /etc/mime.types can change, so that nosniff never meets a type a browser refuses.
var pageTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
}

// pageAsset is one file of the page, read once from pageFiles.
type pageAsset struct {
	name        string
	body        []byte
	contentType string
	etag        string
}

// pageAssets maps each URL path the page is served at to its file: "/" is
// index.html, "/assets/NAME" every other file of the build.
type pageAssets map[string]*pageAsset

// The browser page signs in with a subprotocol: a browser cannot set Authorization on
// a WebSocket, and a token in the URL ends up in logs and history. It offers
// Sec-WebSocket-Protocol: termhost, termhost.bearer.TOKEN; a token is base64url after
// "th_", so it is a valid subprotocol token (RFC 6455 4.1, RFC 7230 token). A browser
// fails a connection whose answer names none of the subprotocols it offered, so one is
// echoed: termhost where offered, so the token does not come back, else the bearer one.
const (
	pageSubprotocol   = "termhost"
	bearerSubprotocol = "termhost.bearer."
)

// PageURL is the address of the browser page on hostport that signs in with token:
// the token goes in the fragment (#tkn=), which a browser never sends, so it reaches
// no request line and no log; the page keeps it in the tab's sessionStorage and
// takes it out of the address bar.
func PageURL(hostport, token string) string {
	return "http://" + hostport + "/#tkn=" + url.QueryEscape(token)
}

// pageAssetPrefix is where the page's scripts, styles and icon are served.
const pageAssetPrefix = "/assets/"

// loadPage reads the embedded build; an unknown extension is an error, so a file the
// build starts to make is given a content type on purpose.
func loadPage(files fs.FS) (pageAssets, error) {
	assets := pageAssets{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("server: reading the browser page: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		ctype, ok := pageTypes[path.Ext(name)]
		if !ok {
			return nil, fmt.Errorf("server: the browser page's %s has no content type", name)
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, fmt.Errorf("server: reading the browser page: %w", err)
		}
		sum := sha256.Sum256(body)
		a := &pageAsset{name: name, body: body, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		if name == "index.html" {
			assets["/"] = a
		} else {
			assets[pageAssetPrefix+name] = a
		}
	}
	if assets["/"] == nil {
		return nil, fmt.Errorf("server: the browser page has no index.html")
	}
	return assets, nil
}

// embeddedPage is the page as built into this binary.
func embeddedPage() (pageAssets, error) {
	dist, err := fs.Sub(pageFiles, "web/dist")
	if err != nil {
		return nil, err
	}
	return loadPage(dist)
}

// isWebSocketUpgrade reports whether r asks for a WebSocket (Upgrade: websocket),
// which goes to the upgrade on any path, the page's own included.
func isWebSocketUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

// pageFor is the file a plain GET or HEAD of r's path is answered with, and
// whether r is one: anything else, every upgrade included, is the WebSocket's.
func (a pageAssets) pageFor(r *http.Request) (*pageAsset, bool) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || isWebSocketUpgrade(r) {
		return nil, false
	}
	if f := a[r.URL.Path]; f != nil {
		return f, true
	}
	// A path under /assets/ is the page's: one the build has not made is not
	// found, rather than a WebSocket that was not asked for.
	return nil, strings.HasPrefix(r.URL.Path, pageAssetPrefix)
}

// pageCSP is the Content-Security-Policy of the page: its own script only (no inline
// script, no eval), connections to its own host only. xterm.js's DOM renderer writes
// <style> elements and style attributes of its own (DomRenderer, Viewport), so styles
// may be inline; nothing else may.
func pageCSP(host string) string {
	connect := "'self'"
	if validHostHeader(host) {
		// 'self' covers ws: to the same host in CSP Level 3 browsers; naming it
		// keeps older ones working.
		connect += " ws://" + host + " wss://" + host
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self' 'unsafe-inline'",
		"connect-src " + connect,
		"img-src 'self'",
		"font-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// validHostHeader reports whether host can stand in a policy as it is: a name or an
// address and a port, with nothing that could end a directive or add a source.
func validHostHeader(host string) bool {
	if host == "" || len(host) > 255 {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// servePage answers a GET or HEAD of one of the page's files (nil: not found) with
// the headers that keep it from being framed, sniffed or leaking its address.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request, f *pageAsset) {
	// The page carries no data, but a host on loopback answers only to loopback
	// names, as the WebSocket does (see loopbackHostName).
	if s.loopbackOnly && !s.loopbackHostName(r.Host) {
		http.Error(w, "termhost: this host serves loopback names only (localhost, 127.0.0.1, [::1]); start it with --allow-origin HOST to be reached as "+r.Host, http.StatusForbidden)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP(r.Host))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if f == nil {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	// Revalidated each time: the names carry no hash, and a new binary must not
	// pair a cached script with a new page.
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
}
