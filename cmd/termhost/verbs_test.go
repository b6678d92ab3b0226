package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// cliHost is a host started for the client verbs' tests, and how they reach it.
type cliHost struct {
	t     *testing.T
	bin   string
	url   string
	state string
}

// startCLIHost runs `termhost serve` on a free loopback port with a state folder of
// its own. Its shells are bash with no rc (HOME is empty): pinned, because how a
// shell runs `-c` decides whether a signal reaches the host as one (bash execs the
// last command; dash waits, and reports 143 as a plain exit).
func startCLIHost(t *testing.T, listen string) *cliHost {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("these tests drive bash, which is not installed")
	}
	t.Setenv("SHELL", bash)
	bin := buildBinary(t)
	state := t.TempDir()
	addr := startHost(t, bin, listen, state)
	return &cliHost{t: t, bin: bin, url: "ws://" + addr + "/", state: state}
}

// result is a verb's run: what it printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the binary as a person would, against h unless args name another --url.
func (h *cliHost) cli(stdin string, args ...string) result {
	h.t.Helper()
	verb, rest := args[0], args[1:]
	full := append([]string{verb, "--url", h.url, "--state-dir", h.state}, rest...)
	return runBin(h.t, h.bin, stdin, full...)
}

func runBin(t *testing.T, bin, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TERMHOST_URL=", "TERMHOST_TOKEN=")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
	case err != nil:
		t.Fatalf("termhost %s: %v", strings.Join(args, " "), err)
	}
	return result{out.String(), errOut.String(), cmd.ProcessState.ExitCode()}
}

// lsJSON is `termhost ls --json`.
func (h *cliHost) lsJSON() []lsRow {
	h.t.Helper()
	r := h.cli("", "ls", "--json")
	if r.code != 0 {
		h.t.Fatalf("ls --json: exit %d, stderr %q", r.code, r.stderr)
	}
	var rows []lsRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		h.t.Fatalf("ls --json printed %q: %v", r.stdout, err)
	}
	return rows
}

func (h *cliHost) token() string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.state, "owner.token"))
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestNewLsKill: a terminal made with new is on ls (table and JSON) with its folder,
// size and claim; kill takes it off; a second kill says it is not there.
func TestNewLsKill(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	cwd := t.TempDir()
	r := h.cli("", "new", "--name", "work", "--cwd", cwd)
	if r.code != 0 || r.stdout != "ahp-terminal:/work\n" {
		t.Fatalf("new: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := h.cli("", "new", "--name", "work"); r.code != 1 || !strings.Contains(r.stderr, `a terminal named "work" is there already`) {
		t.Fatalf("a second new --name work: exit %d, stderr %q", r.code, r.stderr)
	}
	r = h.cli("", "new", "--", "sleep", "1000")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ahp-terminal:/cli-") {
		t.Fatalf("new -- sleep: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	sleeper := strings.TrimSpace(r.stdout)

	rows := h.lsJSON()
	if len(rows) != 2 {
		t.Fatalf("ls --json: %+v, want the two terminals", rows)
	}
	work := rows[0]
	if work.URI != "ahp-terminal:/work" || work.Index != 1 || work.Title != "work" || work.Status != "running" ||
		work.Cwd != cwd || work.Cols == nil || work.Rows == nil || work.Claim.Kind != "client" || !strings.HasPrefix(work.Claim.ClientID, "termhost-cli-") {
		t.Fatalf("ls --json row %+v: want work, running in %s, with a size and a client's claim", work, cwd)
	}
	if rows[1].URI != sleeper {
		t.Fatalf("second row %+v, want %s", rows[1], sleeper)
	}
	table := h.cli("", "ls")
	if table.code != 0 || !strings.HasPrefix(table.stdout, "#  URI") || !strings.Contains(table.stdout, "ahp-terminal:/work") || !strings.Contains(table.stdout, cwd) {
		t.Fatalf("ls: exit %d\n%s", table.code, table.stdout)
	}

	if r := h.cli("", "kill", "work", "#2"); r.code != 0 {
		t.Fatalf("kill work #2: exit %d, stderr %q", r.code, r.stderr)
	}
	if rows := h.lsJSON(); len(rows) != 0 {
		t.Fatalf("after kill, ls --json: %+v", rows)
	}
	if r := h.cli("", "kill", "work"); r.code != 1 || !strings.Contains(r.stderr, "no terminal work on "+h.url) {
		t.Fatalf("kill of a terminal not there: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestRunExitCodes: run streams the command's output and exits with its code; a
// signal is 128+n with its name on stderr; stdin is the command's input, and its end
// ends the input (a line, or half of one); the terminal is gone afterwards.
func TestRunExitCodes(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	r := h.cli("", "run", "--", "sh", "-c", "echo out-$((6*7)); exit 3")
	if r.code != 3 || !strings.Contains(r.stdout, "out-42") {
		t.Fatalf("run exit 3: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = h.cli("", "run", "--", "sh", "-c", "kill -TERM $$")
	if r.code != 143 || !strings.Contains(r.stderr, "SIGTERM") {
		t.Fatalf("run of a command killed by SIGTERM: exit %d, stderr %q", r.code, r.stderr)
	}
	dir := t.TempDir()
	r = h.cli("", "run", "--cwd", dir, "--", "pwd")
	if r.code != 0 || !strings.Contains(r.stdout, dir) {
		t.Fatalf("run --cwd: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// These end only if the end of stdin reaches them. (Each prints first: the host
	// answers createTerminal for a pseudoterminal once it printed, or after 10 s.)
	r = h.cli("first line\nsecond\n", "run", "--", "sh", "-c", "echo reading; n=0; while read -r l; do n=$((n+1)); done; echo lines=$n")
	if r.code != 0 || !strings.Contains(r.stdout, "lines=2") {
		t.Fatalf("run with two lines on stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = h.cli("no newline", "run", "--", "sh", "-c", "echo reading; cat")
	if r.code != 0 || !strings.Contains(r.stdout, "no newline") {
		t.Fatalf("run cat with a last line unended: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if rows := h.lsJSON(); len(rows) != 0 {
		t.Fatalf("run left terminals behind: %+v", rows)
	}
	if r := h.cli("", "run"); r.code != 2 || !strings.Contains(r.stderr, "run needs a command") {
		t.Fatalf("run with no command: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestVerbErrors: what a person reads when the host is not there, the token is
// wrong, a grant is missing, or the terminal does not exist.
func TestVerbErrors(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")

	// A port nobody listens on: taken, then given back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := "ws://" + ln.Addr().String() + "/"
	ln.Close()
	r := runBin(t, h.bin, "", "ls", "--url", free, "--state-dir", h.state)
	if r.code != 1 || !strings.Contains(r.stderr, "no termhost is running at "+free) || !strings.Contains(r.stderr, "start one with `termhost serve`") {
		t.Fatalf("no host: exit %d, stderr %q", r.code, r.stderr)
	}

	// On loopback a wrong token is let in as nobody, who can drive nothing.
	r = h.cli("", "new", "--token", "th_wrong")
	if r.code != 1 || !strings.Contains(r.stderr, "did not accept the token from --token") {
		t.Fatalf("wrong token on loopback: exit %d, stderr %q", r.code, r.stderr)
	}
	// Elsewhere the upgrade itself is refused.
	far := startCLIHost(t, "0.0.0.0:0")
	r = far.cli("", "ls", "--token", "th_wrong")
	if r.code != 1 || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, "did not accept the token from --token") {
		t.Fatalf("wrong token, 401: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runBin(t, far.bin, "", "ls", "--url", far.url, "--state-dir", t.TempDir())
	if r.code != 1 || !strings.Contains(r.stderr, "without a token") {
		t.Fatalf("no token at all, 401: exit %d, stderr %q", r.code, r.stderr)
	}

	guest := runBin(t, h.bin, "", "token", "add", "--state-dir", h.state, "--user", "gus", "--role", "guest")
	if guest.code != 0 {
		t.Fatalf("token add: %q", guest.stderr)
	}
	r = h.cli("", "new", "--token", strings.TrimSpace(guest.stdout))
	if r.code != 1 || !strings.Contains(r.stderr, "the host refused: gus may not terminal:create here") {
		t.Fatalf("a guest's new: exit %d, stderr %q", r.code, r.stderr)
	}

	for _, args := range [][]string{{"attach", "nosuch"}, {"kill", "nosuch"}, {"attach", "ahp-terminal:/nosuch"}} {
		r = h.cli("", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no terminal "+args[1]+" on "+h.url) {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"attach"}, {"new", "--pipes"}, {"run", "--pipes", "--", "true"}, {"ls", "extra"}, {"attach", "#x"}} {
		if r = h.cli("", args...); r.code != 2 {
			t.Fatalf("%v: exit %d, want 2 (usage); stderr %q", args, r.code, r.stderr)
		}
	}
	if r = h.cli("", "new", "--pipes"); !strings.Contains(r.stderr, "serve --pty never") {
		t.Fatalf("new --pipes says %q", r.stderr)
	}
}

// TestLsWatch: --watch prints the list again when a terminal comes.
func TestLsWatch(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	cmd := exec.Command(h.bin, "ls", "--watch", "--json", "--url", h.url, "--state-dir", h.state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	lines := make(chan string)
	go func() {
		dec := json.NewDecoder(out)
		for {
			var rows json.RawMessage
			if dec.Decode(&rows) != nil {
				close(lines)
				return
			}
			lines <- string(rows)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("ls --watch ended")
			}
			return l
		case <-ctx.Done():
			t.Fatal("ls --watch printed nothing more")
		}
		return ""
	}
	if first := next(); first != "[]" {
		t.Fatalf("first list %s, want []", first)
	}
	if r := h.cli("", "new", "--name", "watched"); r.code != 0 {
		t.Fatalf("new: %q", r.stderr)
	}
	for l := next(); !strings.Contains(l, `"uri":"ahp-terminal:/watched"`); l = next() {
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ls --watch after SIGINT: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ls --watch did not stop on SIGINT")
	}
}

// watcher is the test's own client, subscribed to a terminal, to see what the host
// did (a resize, output) without going through the verb under test.
type watcher struct {
	t    *testing.T
	c    *client.Conn
	uri  string
	seen []*client.Envelope
	out  strings.Builder // the terminal's output: the snapshot's content, then data
}

func (h *cliHost) watch(uri string) *watcher {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, h.url+"?tkn="+h.token(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.WS().CloseNow() })
	if _, err := c.Initialize(ctx, "test-watcher"); err != nil {
		h.t.Fatal(err)
	}
	snap, err := c.Subscribe(ctx, uri)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := snap.TerminalState()
	if err != nil {
		h.t.Fatal(err)
	}
	w := &watcher{t: h.t, c: c, uri: uri}
	w.out.WriteString(st.Text())
	return w
}

// waitFor waits for an envelope of the terminal that ok accepts.
func (w *watcher) waitFor(what string, ok func(*client.Envelope, *messages.Action) bool) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		select {
		case n, open := <-w.c.Notifications:
			if !open {
				w.t.Fatalf("waiting for %s: the watcher's connection ended", what)
			}
			if n.Envelope == nil || n.Envelope.Channel != w.uri {
				continue
			}
			w.seen = append(w.seen, n.Envelope)
			a, err := n.Envelope.Decode()
			if err == nil && ok(n.Envelope, a) {
				return
			}
		case <-ctx.Done():
			types := make([]string, len(w.seen))
			for i, e := range w.seen {
				types[i] = e.Type
			}
			w.t.Fatalf("no %s; saw %v", what, types)
		}
	}
}

func (w *watcher) waitResized(cols, rows int) {
	w.t.Helper()
	w.waitFor("terminal/resized", func(e *client.Envelope, a *messages.Action) bool {
		return e.Type == messages.TerminalResized && a.Cols != nil && *a.Cols == cols && *a.Rows == rows
	})
}

// waitOutput waits until the terminal has printed one of ss.
func (w *watcher) waitOutput(ss ...string) {
	w.t.Helper()
	printed := func() bool {
		for _, s := range ss {
			if strings.Contains(w.out.String(), s) {
				return true
			}
		}
		return false
	}
	if printed() {
		return
	}
	w.waitFor(fmt.Sprintf("output %q", ss), func(e *client.Envelope, a *messages.Action) bool {
		if e.Type == messages.TerminalData && a.Data != nil {
			w.out.WriteString(*a.Data)
		}
		return printed()
	})
}

// waitPrompt waits for the shell's first prompt (bash's, as root or not): nothing is
// typed before it.
func (w *watcher) waitPrompt() { w.waitOutput("# ", "$ ") }

func (w *watcher) input(data string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := w.c.Dispatch(ctx, w.uri, 1, map[string]any{"type": messages.TerminalInput, "data": data}); err != nil {
		w.t.Fatal(err)
	}
}

// TestShellsDoNotInheritIgnoredSignals: a host started with SIGHUP and SIGQUIT ignored
// (`nohup termhost serve`, or `termhost serve &` in a script) starts its shells with
// neither ignored, so a hang-up ends a terminal's jobs and ^\ reaches them.
func TestShellsDoNotInheritIgnoredSignals(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("this test drives bash, which is not installed")
	}
	t.Setenv("SHELL", bash)
	bin := buildBinary(t)
	wrapper := filepath.Join(t.TempDir(), "ignoring")
	script := "#!/bin/sh\ntrap '' HUP QUIT\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	addr := startHost(t, wrapper, "127.0.0.1:0", state)
	h := &cliHost{t: t, bin: bin, url: "ws://" + addr + "/", state: state}
	r := h.cli("", "run", "--", "sh", "-c", "grep SigIgn /proc/self/status")
	if r.code != 0 {
		t.Fatalf("run: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	_, hex, ok := strings.Cut(strings.TrimSpace(r.stdout), "SigIgn:")
	mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
	if !ok || err != nil {
		t.Fatalf("no SigIgn line in %q", r.stdout)
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		if mask&(1<<(uint(sig)-1)) != 0 {
			t.Errorf("a terminal's command ignores %v (SigIgn %s)", sig, strings.TrimSpace(hex))
		}
	}
}
