package server_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/server"
)

// browserTimeout bounds the whole browser run: Chromium's start and every step, each
// of which waits for what a person would see with a deadline of its own (20 s).
const browserTimeout = 3 * time.Minute

// browserTools finds what the browser test needs, or skips saying what is missing
// (.ci/run installs all three).
func browserTools(t *testing.T) (node, chromium, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("browser test skipped: node is not installed (.ci/run installs it)")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("browser test skipped: no Chromium at %s (apt-get install chromium, or set CHROMIUM; .ci/run installs it)", chromium)
	}
	web, err := filepath.Abs(filepath.Join("..", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Skip("browser test skipped: playwright-core is not installed (npm ci --prefix web; .ci/run does it)")
	}
	return node, chromium, filepath.Join(web, "test", "browser.mjs")
}

// TestBrowserPage drives the page a person opens at / in headless Chromium
// (web/test/browser.mjs, with playwright-core): signed in by the #tkn= address, it
// lists the terminals, creates one, types echo hi and sees hi; a second page sees the
// first one's typing live; the window's size, a new title, clear and dispose reach
// the host and the other page; with a pseudoterminal, the commands shell
// integration found are listed and scroll back to their line. A page without a
// token, or with a wrong one, is asked to sign in and shows nothing. A screenshot of
// the page is kept in the test's artifact folder (go test -artifacts keeps it).
func TestBrowserPage(t *testing.T) {
	node, chromium, script := browserTools(t)
	usePty := ptyAvailable()
	h := startHost(t, withPty(usePty))

	// A terminal made by another client before the page opens: the page lists it.
	c := h.dial("go-side")
	c.createTerminal("ahp-terminal:/made-by-go", map[string]any{"name": "made-by-go"})

	artifacts := t.ArtifactDir()
	ctx, cancel := context.WithTimeout(t.Context(), browserTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(),
		"TERMHOST_URL=http://"+h.addr+"/",
		"TERMHOST_SIGNIN_URL="+server.PageURL(h.addr, h.owner),
		"TERMHOST_TOKEN="+h.owner,
		"TERMHOST_LISTED=made-by-go",
		"TERMHOST_ARTIFACTS="+artifacts,
		"CHROMIUM="+chromium,
		"TERMHOST_PTY="+map[bool]string{true: "1", false: "0"}[usePty],
	)
	// Chromium would otherwise outlive a node killed at the deadline.
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var screenshot string
	sawOK := false
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		t.Log(line)
		if p, ok := strings.CutPrefix(line, "screenshot: "); ok {
			screenshot = p
		}
		sawOK = sawOK || line == "ok"
	}
	err = cmd.Wait()
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Log(s)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the browser run did not end within %v", browserTimeout)
	}
	if err != nil || !sawOK {
		t.Fatalf("the browser page failed (%v); its screenshots are in %s", err, artifacts)
	}
	if screenshot == "" {
		t.Fatal("the browser run took no screenshot")
	}
	if fi, err := os.Stat(screenshot); err != nil || fi.Size() == 0 {
		t.Fatalf("screenshot %s: %v", screenshot, err)
	}
	t.Logf("screenshot of the page: %s", screenshot)
}
