package server

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestEmbeddedPage: the binary carries the page's build, every file with a type.
func TestEmbeddedPage(t *testing.T) {
	assets, err := embeddedPage()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/assets/app.js", "/assets/app.css", "/assets/icon.svg"} {
		if a := assets[path]; a == nil || len(a.body) == 0 {
			t.Errorf("the embedded page has no %s", path)
		}
	}
}

// TestLoadPage: a build with a file of no known type, or without index.html, is an
// error rather than a file served as whatever a browser guesses.
func TestLoadPage(t *testing.T) {
	good := fstest.MapFS{"index.html": {Data: []byte("<!doctype html>")}, "app.js": {Data: []byte("1")}}
	assets, err := loadPage(good)
	if err != nil {
		t.Fatal(err)
	}
	if assets["/"] == nil || assets["/assets/app.js"] == nil || assets["/assets/index.html"] != nil {
		t.Errorf("paths: %v", assets)
	}
	if _, err := loadPage(fstest.MapFS{"index.html": {}, "app.wasm": {}}); err == nil || !strings.Contains(err.Error(), "app.wasm") {
		t.Errorf("a file of no known type: %v", err)
	}
	if _, err := loadPage(fstest.MapFS{"app.js": {}}); err == nil {
		t.Error("a build without index.html loads")
	}
}

// TestPageCSPHost: only a plain host[:port] is named in connect-src; anything that
// could end the directive or add a source leaves just 'self'.
func TestPageCSPHost(t *testing.T) {
	for host, named := range map[string]bool{
		"127.0.0.1:9187":         true,
		"[::1]:9187":             true,
		"localhost":              true,
		"a.localhost:1":          true,
		"":                       false,
		"x; script-src *":        false,
		"evil.example *":         false,
		"host'":                  false,
		strings.Repeat("a", 300): false,
	} {
		csp := pageCSP(host)
		if got := strings.Contains(csp, "ws://"); got != named {
			t.Errorf("host %q: policy %s", host, csp)
		}
		if !strings.Contains(csp, "connect-src 'self'") || strings.Count(csp, "script-src") != 1 {
			t.Errorf("host %q changed the policy: %s", host, csp)
		}
	}
}
