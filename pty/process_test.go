//go:build linux

package pty

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestExitCode(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "exit 3", UsePty: usePty})
		if got := r.waitExit(ctx, t); got != (Exit{Code: 3}) {
			t.Fatalf("exit = %+v, want code 3 and no signal", got)
		}
		r.out.waitEOF(ctx, t)
		select {
		case <-r.p.Done():
		default:
			t.Fatal("Done is open after Wait returned")
		}
		if r.p.IsPty() != usePty {
			t.Fatalf("IsPty = %v, want %v", r.p.IsPty(), usePty)
		}
	})
}

func TestKilledBySignal(t *testing.T) {
	cases := []struct {
		name   string
		usePty bool
		sig    string
		want   Exit
	}{
		{"pipes TERM", false, "TERM", Exit{Code: 143, Signal: "SIGTERM"}},
		{"pty KILL", true, "KILL", Exit{Code: 137, Signal: "SIGKILL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.usePty {
				requirePty(t)
			}
			ctx := testContext(t)
			r := start(t, Spec{Command: "kill -" + tc.sig + " $$", UsePty: tc.usePty})
			if got := r.waitExit(ctx, t); got != tc.want {
				t.Fatalf("exit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The whole output arrives before EOF, though the process may have exited long
// before the reader got to the end of it (seed "What a client sees": exited is
// announced when the output drains, not when the process goes).
func TestOutputFullyReadBeforeEOF(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "head -c 300000 /dev/zero | base64", UsePty: usePty})
		out := r.out.waitEOF(ctx, t)
		// 300000 zero bytes are 400000 'A's, in lines ending "\n" (pipes) or
		// "\r\n" (the terminal's output processing).
		if n := strings.Count(out, "A"); n != 400000 {
			t.Fatalf("read %d base64 characters, want 400000; tail %q", n, tail(out))
		}
		if rest := strings.Trim(out, "A\r\n"); rest != "" {
			t.Fatalf("unexpected output %q", tail(rest))
		}
		if got := r.waitExit(ctx, t); got != (Exit{}) {
			t.Fatalf("exit = %+v, want 0", got)
		}
	})
}

func TestStderrInTheSameStreamOnPipes(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{Command: "echo out; echo err >&2; echo out2"})
	if got, want := r.out.waitEOF(ctx, t), "out\nerr\nout2\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestTermSizeAndKindInEnv(t *testing.T) {
	const show = `printf '%s|%s|%s\n' "$TERM" "$COLUMNS" "$LINES"`
	cases := []struct {
		name     string
		hostTerm string
		usePty   bool
		want     string
	}{
		{"pty host dumb", "dumb", true, "xterm-256color|100|30"},
		{"pty host empty", "", true, "xterm-256color|100|30"},
		{"pty host screen", "screen", true, "screen|100|30"},
		{"pipes", "xterm", false, "dumb|100|30"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.usePty {
				requirePty(t)
			}
			t.Setenv("TERM", tc.hostTerm)
			ctx := testContext(t)
			r := start(t, Spec{
				Command: show,
				UsePty:  tc.usePty,
				Cols:    100,
				Rows:    30,
				// A caller may not disagree with the terminal's own.
				Env: []string{"TERM=vt52", "COLUMNS=1", "LINES=1"},
			})
			out := strings.TrimSpace(r.out.waitEOF(ctx, t))
			if out != tc.want {
				t.Fatalf("child saw %q, want %q", out, tc.want)
			}
		})
	}
}

func TestDefaultSizeInEnv(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{Command: `printf '%s %s\n' "$COLUMNS" "$LINES"`})
	if got := r.out.waitEOF(ctx, t); got != "80 24\n" {
		t.Fatalf("output %q, want 80 24", got)
	}
}

func TestFlagVariables(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{
		Command:             "env",
		NonInteractive:      true,
		PreventShellHistory: true,
		Env:                 []string{"PAGER=less", "MINE=yes"},
	})
	env := strings.Split(strings.TrimSpace(r.out.waitEOF(ctx, t)), "\n")
	want := map[string]string{
		"LC_ALL":                       "C.UTF-8",
		"PAGER":                        "",
		"GIT_PAGER":                    "",
		"GH_PAGER":                     "",
		"GIT_TERMINAL_PROMPT":          "0",
		"DEBIAN_FRONTEND":              "noninteractive",
		"VSCODE_PREVENT_SHELL_HISTORY": "1",
		"MINE":                         "yes",
	}
	for key, value := range want {
		got, ok := lookupEnv(env, key)
		if !ok || got != value {
			t.Errorf("%s = %q (set %v), want %q", key, got, ok, value)
		}
	}
	if _, ok := lookupEnv(env, "PROMPT_EOL_MARK"); ok {
		t.Errorf("PROMPT_EOL_MARK set for %s; it is for zsh only", testShell)
	}
}

func TestArgsAreQuotedWordByWord(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{
		Command: "printf",
		Args:    []string{`%s\n`, "a b", "c'd", "$HOME", "", "*"},
	})
	if got, want := r.out.waitEOF(ctx, t), "a b\nc'd\n$HOME\n\n*\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

func TestCommandWithoutArgsIsShellSyntax(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{Command: "echo a; echo b"})
	if got := r.out.waitEOF(ctx, t); got != "a\nb\n" {
		t.Fatalf("output %q, want a and b on two lines", got)
	}

	// The same line with Args (even empty) is a program named after the whole
	// line, which does not exist: the shell says 127.
	r = start(t, Spec{Command: "echo a; echo b", Args: []string{}})
	if got := r.waitExit(ctx, t); got.Code != 127 {
		t.Fatalf("exit = %+v, want 127 (command not found); output %q", got, r.out.String())
	}
}

func TestShellArgsForAShellToSitIn(t *testing.T) {
	ctx := testContext(t)
	// No Command: the shell reads its commands from the input pipe.
	r := start(t, Spec{ShellArgs: []string{"-s", "first", "second"}})
	if _, err := r.p.Write([]byte("echo \"$1-$2\"; exit 4\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got := r.out.waitEOF(ctx, t); got != "first-second\n" {
		t.Fatalf("output %q", got)
	}
	if got := r.waitExit(ctx, t); got.Code != 4 {
		t.Fatalf("exit = %+v, want 4", got)
	}
}

func TestDirWithASpace(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		dir := filepath.Join(t.TempDir(), "a b")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r := start(t, Spec{Command: "pwd -P", Dir: dir, UsePty: usePty})
		want, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(r.out.waitEOF(ctx, t)); got != want {
			t.Fatalf("pwd = %q, want %q", got, want)
		}
	})
}

func TestMissingDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/nonexistent/termhost dir", file} {
		for _, usePty := range []bool{false, true} {
			p, err := Start(Spec{Shell: testShell, Command: "true", Dir: dir, UsePty: usePty})
			if err == nil {
				p.Wait()
				_ = p.Close()
				t.Fatalf("Start in %q succeeded", dir)
			}
			if !errors.Is(err, ErrNoDir) {
				t.Errorf("Start in %q: %v, want ErrNoDir in the chain", dir, err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the directory %q", err, dir)
			}
		}
	}
}

func TestMissingShell(t *testing.T) {
	for _, usePty := range []bool{false, true} {
		p, err := Start(Spec{Shell: "/bin/nosuch", Command: "true", UsePty: usePty})
		if err == nil {
			p.Wait()
			_ = p.Close()
			t.Fatal("Start of /bin/nosuch succeeded")
		}
		if got, want := err.Error(), "cannot start /bin/nosuch: no such file or directory"; got != want {
			t.Errorf("error %q, want %q", got, want)
		}
		if p != nil {
			t.Errorf("Start failed but returned a non-nil Process %#v", p)
		}
		if !errors.Is(err, ErrNoShell) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v: want ErrNoShell and fs.ErrNotExist in the chain", err)
		}
	}
	if _, err := Start(Spec{Shell: "termhost-no-such-shell"}); !errors.Is(err, ErrNoShell) {
		t.Errorf("Start of a name not in PATH: %v, want ErrNoShell", err)
	}
}

func TestResize(t *testing.T) {
	requirePty(t)
	ctx := testContext(t)
	r := start(t, Spec{Command: "stty size; read x; stty size", UsePty: true})
	r.out.waitFor(ctx, t, "24 80")
	if err := r.p.Resize(100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if _, err := r.p.Write([]byte("\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	r.out.waitFor(ctx, t, "30 100")
	if err := r.p.Resize(0, 10); err == nil {
		t.Error("Resize(0, 10) succeeded")
	}
}

func TestResizeOnPipesIsANoOp(t *testing.T) {
	r := start(t, Spec{Command: "exit 0"})
	if err := r.p.Resize(100, 30); err != nil {
		t.Fatalf("Resize on pipes: %v", err)
	}
}

// Pipes have no line discipline to turn ^C into SIGINT, so the host signals the
// group itself (seed "What a client sees"). The runaway command is tail -f rather
// than sleep because "ready" then comes from the command itself, after its exec: a
// shell catches SIGINT, and one landing between its fork and the command's exec is
// swallowed, leaving the command to run on.
func TestSignalInterruptsOnPipes(t *testing.T) {
	ctx := testContext(t)
	file := filepath.Join(t.TempDir(), "ready")
	if err := os.WriteFile(file, []byte("ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, Spec{Command: "tail", Args: []string{"-f", file}})
	r.out.waitFor(ctx, t, "ready")
	if err := r.p.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if got, want := r.waitExit(ctx, t), (Exit{Code: 130, Signal: "SIGINT"}); got != want {
		t.Fatalf("exit = %+v, want %+v", got, want)
	}
	// Everything in the group got it: nothing holds the output open.
	r.out.waitEOF(ctx, t)
	if err := r.p.Signal(syscall.SIGINT); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal after exit: %v, want os.ErrProcessDone", err)
	}
}

func TestSignalWithoutPid(t *testing.T) {
	p := &process{done: make(chan struct{})}
	if err := p.Signal(syscall.SIGTERM); err == nil {
		t.Fatal("Signal with pid 0 succeeded")
	}
}

func TestTerminateEndsTheGroup(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "sleep 1000 & echo pid=$!; wait", UsePty: usePty})
		child := watchChild(t, r.out.waitFor(ctx, t, "\n"))
		Terminate(r.p, testTimeout, nil)
		if got := r.waitExit(ctx, t); got != (Exit{Code: 129, Signal: "SIGHUP"}) {
			t.Fatalf("exit = %+v, want SIGHUP", got)
		}
		child.waitGone(t)
		r.out.waitEOF(ctx, t)
	})
}

func TestTerminateEscalatesToKill(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		// Both ignore SIGHUP, so only the SIGKILL after the grace ends them.
		r := start(t, Spec{Command: "trap '' HUP; sleep 1000 & echo pid=$!; wait", UsePty: usePty})
		child := watchChild(t, r.out.waitFor(ctx, t, "\n"))
		Terminate(r.p, 50*time.Millisecond, &SessionScanner{})
		if got := r.waitExit(ctx, t); got != (Exit{Code: 137, Signal: "SIGKILL"}) {
			t.Fatalf("exit = %+v, want SIGKILL", got)
		}
		child.waitGone(t)
	})
}

// A background job holding the output open keeps EOF away after the process
// exits; CloseOutput is how the owner ends that drain (STYLE 3, "Bound the drain").
func TestCloseOutputEndsABlockedRead(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "trap '' HUP; sleep 1000 & echo pid=$!", UsePty: usePty})
		out := r.out.waitFor(ctx, t, "\n")
		pid := parsePid(t, out)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if got := r.waitExit(ctx, t); got != (Exit{}) {
			t.Fatalf("exit = %+v, want 0", got)
		}
		select {
		case <-r.out.done:
			t.Fatalf("output ended while sleep %d holds it open", pid)
		default:
		}
		if err := r.p.CloseOutput(); err != nil {
			t.Fatalf("CloseOutput: %v", err)
		}
		r.out.waitEOF(ctx, t)
		if err := r.p.CloseOutput(); err != nil {
			t.Fatalf("second CloseOutput: %v", err)
		}
		if err := r.p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := r.p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func TestWriteReachesTheChild(t *testing.T) {
	modes(t, func(t *testing.T, usePty bool) {
		ctx := testContext(t)
		r := start(t, Spec{Command: "read line; echo \"got:$line\"", UsePty: usePty})
		if _, err := r.p.Write([]byte("héllo\n")); err != nil {
			t.Fatalf("Write: %v", err)
		}
		r.out.waitFor(ctx, t, "got:héllo")
	})
}

func TestWaitTwiceReturnsTheSameExit(t *testing.T) {
	ctx := testContext(t)
	r := start(t, Spec{Command: "exit 5"})
	first := r.waitExit(ctx, t)
	if second := r.p.Wait(); second != first {
		t.Fatalf("second Wait = %+v, first %+v", second, first)
	}
}

// No descriptor outlives its process: 200 starts, 8 at a time, on both kinds,
// each read to EOF, waited for and closed.
func TestNoDescriptorLeak(t *testing.T) {
	usePty := Available()
	cycle := func(i int) error {
		p, err := Start(Spec{Shell: testShell, Command: "echo " + strconv.Itoa(i), UsePty: usePty && i%2 == 0})
		if err != nil {
			return err
		}
		out, readErr := io.ReadAll(p.Output())
		exit := p.Wait()
		closeErr := p.Close()
		switch {
		case readErr != nil:
			return readErr
		case closeErr != nil:
			return closeErr
		case exit != (Exit{}):
			return errors.New("exit " + exit.String())
		case strings.TrimSpace(string(out)) != strconv.Itoa(i):
			return errors.New("output " + strconv.Quote(string(out)))
		}
		return nil
	}
	// The runtime opens some descriptors once, on first use (the poller); let it.
	if err := cycle(0); err != nil {
		t.Fatal(err)
	}
	if err := cycle(1); err != nil {
		t.Fatal(err)
	}
	before := countFDs(t)

	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, 200)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if err := cycle(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range 200 {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	return countProcEntries(t, "fd", "descriptors")
}

// countProcEntries counts the entries of /proc/self/dir (what names them in a skip).
func countProcEntries(t *testing.T, dir, what string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/" + dir)
	if err != nil {
		t.Skipf("cannot count %s: %v", what, err)
	}
	return len(entries)
}

func TestAvailable(t *testing.T) {
	if _, err := os.Stat("/dev/ptmx"); err == nil && !Available() {
		t.Fatal("Available is false though /dev/ptmx exists")
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGHUP:  "SIGHUP",
		syscall.SIGINT:  "SIGINT",
		syscall.SIGKILL: "SIGKILL",
		syscall.SIGTERM: "SIGTERM",
		syscall.SIGUSR2: "SIGUSR2",
		77:              "SIG77",
	} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", int(sig), got, want)
		}
	}
}

func parsePid(t *testing.T, out string) int {
	t.Helper()
	_, after, ok := strings.Cut(out, "pid=")
	if !ok {
		t.Fatalf("no pid in %q", out)
	}
	line, _, _ := strings.Cut(after, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		t.Fatalf("bad pid in %q", out)
	}
	return pid
}
