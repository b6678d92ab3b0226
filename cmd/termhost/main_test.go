package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

const waitTimeout = 30 * time.Second

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildBinary builds the real termhost once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "termhost-bin-")
		if built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "termhost")
		cmd := exec.Command("go", "build", "-o", built.bin, ".")
		cmd.Stderr = os.Stderr
		built.err = cmd.Run()
	})
	if built.err != nil {
		t.Fatalf("go build: %v", built.err)
	}
	return built.bin
}

// TestServeContract runs the real binary: the one stdout line, the owner token file,
// /healthz, a terminal driven over WebSocket, and a clean exit 0 on SIGTERM.
func TestServeContract(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", state)
	// The shells get a home of their own: the machine's rc files are not under test.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(waitTimeout):
		t.Fatalf("no listening line; stderr: %s", stderr.String())
	}
	const prefix = "termhost listening on ws://"
	if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, "/") {
		t.Fatalf("stdout line %q", line)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(line, prefix), "/")
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("the line names port 0, not the real port: %q", line)
	}

	fi, err := os.Stat(filepath.Join(state, "owner.token"))
	if err != nil {
		t.Fatalf("owner.token: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner.token mode %v", fi.Mode().Perm())
	}
	tok, _ := os.ReadFile(filepath.Join(state, "owner.token"))

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("healthz %q", body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, "ws://"+addr+"/any/path?tkn="+strings.TrimSpace(string(tok)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, "bin", messages.RootURI); err != nil {
		t.Fatal(err)
	}
	uri := "ahp-terminal:/bin-test"
	if _, err := c.Request(ctx, "createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "bin"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, uri); err != nil {
		t.Fatal(err)
	}
	_ = c.Dispatch(ctx, uri, 1, map[string]any{"type": "terminal/input", "data": "echo from-$((40+2))\r"})
	var out strings.Builder
	for !strings.Contains(out.String(), "from-42") {
		select {
		case n := <-c.Notifications:
			if n.Envelope != nil && n.Envelope.Type == messages.TerminalData {
				a, _ := n.Envelope.Decode()
				out.WriteString(*a.Data)
			}
		case <-ctx.Done():
			t.Fatalf("no output; got %q", out.String())
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr: %s", err, stderr.String())
	}
	for l := range lines {
		t.Fatalf("a second stdout line: %q", l)
	}
	<-c.Done()
	// A fresh state folder: the owner is told, on stderr, a link for the browser.
	if want := "open http://" + addr + "/#tkn=" + strings.TrimSpace(string(tok)); !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr does not hold the browser link %q:\n%s", want, stderr.String())
	}
}

func TestTokenAddPrintsOnlyAToken(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	out, err := exec.Command(bin, "token", "add", "--state-dir", state, "--user", "ann", "--role", "member").Output()
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(out))
	if strings.Count(string(out), "\n") != 1 || !strings.HasPrefix(tok, "th_") {
		t.Fatalf("token add printed %q", out)
	}
	list, err := exec.Command(bin, "token", "list", "--state-dir", state).Output()
	if err != nil || !strings.Contains(string(list), "ann\tmember") || strings.Contains(string(list), tok) {
		t.Fatalf("token list: %q %v", list, err)
	}
	if err := exec.Command(bin, "token", "add", "--state-dir", state, "--user", "x", "--role", "nosuch").Run(); err == nil {
		t.Fatal("an unknown role was accepted")
	}
}

// TestBenchStartsAHostProcess runs `termhost bench` the way a person would, with no
// host named: it starts this binary's serve in a process of its own, measures, stops
// it, and reports on it as a started host.
func TestBenchStartsAHostProcess(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "bench", "--scenario", "echo", "--echo-keys", "20", "--json")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Host struct {
			Started   bool `json:"started"`
			InProcess bool `json:"inProcess"`
			PID       int  `json:"pid"`
		} `json:"host"`
		Scenarios []struct {
			Name    string `json:"name"`
			Error   string `json:"error"`
			Figures []struct {
				Name string `json:"name"`
			} `json:"figures"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, out)
	}
	if !rep.Host.Started || rep.Host.InProcess || rep.Host.PID == 0 {
		t.Fatalf("host %+v, want a started host process with its pid", rep.Host)
	}
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Error != "" || len(rep.Scenarios[0].Figures) == 0 {
		t.Fatalf("scenarios %+v, want echo with figures", rep.Scenarios)
	}
	// The host process is gone once the bench is.
	if err := syscall.Kill(rep.Host.PID, 0); err == nil {
		t.Fatalf("the host process %d outlived the bench", rep.Host.PID)
	}
}

// TestServeWritesACPUProfile: --cpuprofile leaves a profile when the host is stopped
// the way an operator stops it.
func TestServeWritesACPUProfile(t *testing.T) {
	bin := buildBinary(t)
	prof := filepath.Join(t.TempDir(), "host.prof")
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", t.TempDir(), "--cpuprofile", prof)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "listening on") {
		t.Fatalf("first stdout line %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %d)", prof, err, sizeOf(fi))
	}
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return 0
	}
	return fi.Size()
}
