package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/termhost/termhost/auth"
)

const listeningPrefix = "termhost listening on ws://"

// startHost runs `termhost serve` on listen and returns the address its contract line
// names. The host is stopped with SIGTERM, and must exit 0, when the test ends.
func startHost(t *testing.T, bin, listen, state string) string {
	t.Helper()
	stderrPath := filepath.Join(t.TempDir(), "stderr")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(bin, "serve", "--listen", listen, "--state-dir", state)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := func() string { b, _ := os.ReadFile(stderrPath); return string(b) }
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after SIGTERM: %v; stderr:\n%s", err, logs())
			}
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("serve did not stop on SIGTERM; stderr:\n%s", logs())
		}
	})

	lineCh := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lineCh <- line
		_, _ = io.Copy(io.Discard, stdout) // nothing more is expected; keep the pipe drained
	}()
	var line string
	select {
	case line = <-lineCh:
	case <-time.After(waitTimeout):
		t.Fatalf("no listening line; stderr:\n%s", logs())
	}
	line = strings.TrimSuffix(line, "\n")
	if !strings.HasPrefix(line, listeningPrefix) || !strings.HasSuffix(line, "/") {
		t.Fatalf("stdout line %q; stderr:\n%s", line, logs())
	}
	return strings.TrimSuffix(strings.TrimPrefix(line, listeningPrefix), "/")
}

// signsIn reports whether the host at addr lets token sign in. The hosts here listen
// beyond loopback, where a connection without a valid token is refused with 401.
func signsIn(t *testing.T, addr, token string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/?tkn="+token, nil)
	if err == nil {
		_ = c.Close(websocket.StatusNormalClosure, "")
		return true
	}
	if resp != nil && resp.StatusCode == http.StatusUnauthorized {
		return false
	}
	t.Fatalf("dial %s: %v", addr, err)
	return false
}

// tokenCommands runs `termhost token` on one state folder. Its environment points the
// default state folder at a scratch one: a command that ignored --state-dir must not
// change the real one.
type tokenCommands struct {
	bin, state string
	env        []string
}

func newTokenCommands(t *testing.T, bin, state string) tokenCommands {
	scratch := t.TempDir()
	return tokenCommands{bin, state, append(os.Environ(), "HOME="+scratch, "XDG_STATE_HOME="+scratch)}
}

// run runs `termhost token ARGS... --state-dir STATE` (the flag last, as a person may
// type it) and returns its stdout.
func (tc tokenCommands) run(args ...string) (string, error) {
	cmd := exec.Command(tc.bin, append(append([]string{"token"}, args...), "--state-dir", tc.state)...)
	cmd.Env = tc.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("termhost token %s: %v; stderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// list is `termhost token list`: each user's role, then their token ids.
func (tc tokenCommands) list(t *testing.T) map[string][]string {
	t.Helper()
	out, err := tc.run("list")
	if err != nil {
		t.Fatalf("token list: %v", err)
	}
	users := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("token list line %q", line)
		}
		var ids []string
		if f[2] != "" {
			ids = strings.Split(f[2], ",")
		}
		users[f[0]] = append([]string{f[1]}, ids...)
	}
	return users
}

// Parallel `token add` commands each keep their user: none is lost to another's
// rewrite of users.json, and the running host lets every new token in.
func TestParallelTokenAddsAllLand(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	addr := startHost(t, bin, "0.0.0.0:0", state)
	cli := newTokenCommands(t, bin, state)

	const n = 12
	tokens := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out, err := cli.run("add", "--user", fmt.Sprintf("user-%d", i), "--role", "member")
			if err != nil {
				t.Error(err)
			}
			tokens[i] = strings.TrimSpace(out)
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	users := cli.list(t)
	for i := range n {
		name := fmt.Sprintf("user-%d", i)
		if got := users[name]; len(got) != 2 || got[0] != "member" {
			t.Errorf("token list shows %s as %q, want role member and one token id", name, got)
		}
		if !signsIn(t, addr, tokens[i]) {
			t.Errorf("%s's token does not sign in", name)
		}
	}
}

// A `token revoke` run beside `token add` commands holds: the revoked token signs in
// neither at the host that was running throughout nor anywhere else, and every add
// is kept too.
func TestRevokeBesideAddsHolds(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	addr := startHost(t, bin, "0.0.0.0:0", state)
	cli := newTokenCommands(t, bin, state)

	const rounds, adders = 5, 5
	for round := range rounds {
		out, err := cli.run("add", "--user", "victim", "--role", "member")
		if err != nil {
			t.Fatal(err)
		}
		victim := strings.TrimSpace(out)
		if !signsIn(t, addr, victim) {
			t.Fatalf("round %d: the victim's new token does not sign in", round)
		}

		added := make([]string, adders)
		var revoked string
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			out, err := cli.run("revoke", "victim")
			if err != nil {
				t.Error(err)
			}
			revoked = out
		})
		for i := range adders {
			wg.Go(func() {
				<-start
				out, err := cli.run("add", "--user", fmt.Sprintf("other-%d-%d", round, i), "--role", "guest")
				if err != nil {
					t.Error(err)
				}
				added[i] = strings.TrimSpace(out)
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}

		if revoked != "revoked 1 token(s)\n" {
			t.Fatalf("round %d: token revoke printed %q", round, revoked)
		}
		if signsIn(t, addr, victim) {
			t.Fatalf("round %d: token revoke said %q, and the victim's token still signs in", round, strings.TrimSpace(revoked))
		}
		users := cli.list(t)
		if got := users["victim"]; len(got) != 1 {
			t.Fatalf("round %d: token list shows victim as %q, want no tokens", round, got)
		}
		for i, tok := range added {
			name := fmt.Sprintf("other-%d-%d", round, i)
			if len(users[name]) != 2 {
				t.Errorf("round %d: token list shows %s as %q, want one token", round, name, users[name])
			}
			if !signsIn(t, addr, tok) {
				t.Errorf("round %d: %s's token does not sign in", round, name)
			}
		}
	}
}

// A host listening on every interface names, in its contract line, an address a
// client can dial: the loopback of the family asked for, never 0.0.0.0 or [::].
func TestServePrintsADialableAddress(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct{ listen, prefix string }{
		{"0.0.0.0:0", listeningPrefix + "127.0.0.1:"},
		{"[::]:0", listeningPrefix + "[::1]:"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			if strings.HasPrefix(tc.listen, "[") {
				ln, err := net.Listen("tcp6", "[::1]:0")
				if err != nil {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				ln.Close()
			}
			addr := startHost(t, bin, tc.listen, t.TempDir())
			line := listeningPrefix + addr + "/"
			if !strings.HasPrefix(line, tc.prefix) || strings.HasSuffix(addr, ":0") {
				t.Fatalf("listening line %q, want %sPORT/ with the real port", line, tc.prefix)
			}
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatalf("the printed address cannot be dialed: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("healthz at the printed address: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// `token` takes its flags before or after the user or token id, and refuses an
// operand it would otherwise ignore rather than act on the wrong state folder.
func TestTokenOperands(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // a command that ignored --state-dir lands here
	var out strings.Builder
	if err := run([]string{"token", "add", "--user", "ann", "--role", "member", "--state-dir", state}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run([]string{"token", "revoke", "ann", "--state-dir", state}, &out, io.Discard); err != nil || out.String() != "revoked 1 token(s)\n" {
		t.Fatalf("token revoke ann --state-dir: %q, %v", out.String(), err)
	}
	for _, args := range [][]string{
		{"token", "add", "--state-dir", state, "--user", "bob", "--role", "member", "extra"},
		{"token", "list", "--state-dir", state, "extra"},
		{"token", "revoke", "--state-dir", state, "ann", "bob"},
		{"token", "revoke", "--state-dir", state, "--user", "ann", "bob"},
		{"token", "frobnicate", "--state-dir", state},
	} {
		var usage usageError
		if err := run(args, io.Discard, io.Discard); !errors.As(err, &usage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if err := run([]string{"token", "revoke", "--state-dir", state, "--", "-nobody"}, io.Discard, io.Discard); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("revoke -- -nobody: %v, want no such user", err)
	}
}
