package pty

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// python3 runs the wait cases that need select, poll and epoll; Debian's is used
// (a version manager's shim would start slowly and print of its own).
const python3 = "/usr/bin/python3"

// waitForInputWait polls ForegroundInput until it says the foreground job waits.
func waitForInputWait(t *testing.T, r *running) InputWait {
	t.Helper()
	return pollWait(t, r, "ForegroundInput never said the job waits for input", ForegroundInput)
}

// pollWait polls look on the terminal's shell until it finds a wait, or fails the
// test with never.
func pollWait(t *testing.T, r *running, never string, look func(sid int) InputWait) InputWait {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		if w := look(r.p.Pid()); w.Waiting {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s; output %q", never, tail(r.out.String()))
		}
		time.Sleep(5 * time.Millisecond) // polling /proc: there is no event to wait on
	}
}

// waitUntilBlocked polls until a process of the terminal named name is blocked in
// a system call, the state a wait that is not for input settles in.
func waitUntilBlocked(t *testing.T, r *running, name string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		w := sessionWalk{sid: r.p.Pid(), seen: map[int]bool{}}
		pids := []int{r.p.Pid()}
		var buf [statBufSize]byte
		for i := 0; i < len(pids); i++ {
			st, ok := foregroundStatOf(pids[i], buf[:])
			if ok && st.comm == name && st.state == 'S' {
				if call, ok := blockedSyscall(pids[i], pids[i]); ok && call.nr >= 0 {
					return
				}
			}
			kids, _ := w.allChildren(pids[i], 0)
			pids = append(pids, kids...)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s blocked in a system call; output %q", name, tail(r.out.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestForegroundInputSeesAJobReadingTheTerminal(t *testing.T) {
	requirePty(t)
	cases := []struct {
		name, command, waiter string
		python                bool
	}{
		{"the shell's read builtin", "echo go; read x", "sh", false},
		{"cat reading its input", "echo go; cat", "cat", false},
		{"a pipeline's first process", "echo go; cat | cat >/dev/null", "cat", false},
		{"select", python3 + ` -c 'import select,sys; print("go", flush=True); select.select([sys.stdin],[],[])'`, "python3", true},
		{"poll", python3 + ` -c 'import select,sys; p=select.poll(); p.register(0, select.POLLIN); print("go", flush=True); p.poll()'`, "python3", true},
		{"epoll", python3 + ` -c 'import select,sys; e=select.epoll(); e.register(0, select.EPOLLIN); print("go", flush=True); e.poll()'`, "python3", true},
		{"a readline prompt", python3 + ` -q -i -c 'print("go")'`, "python3", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startCase(t, tc.command, tc.python)
			w := waitForInputWait(t, r)
			if w.Name != tc.waiter || w.Pid <= 0 {
				t.Errorf("the waiting process is %q (pid %d), want %q", w.Name, w.Pid, tc.waiter)
			}
		})
	}
}

func TestForegroundInputIgnoresWaitsThatAreNotForAPerson(t *testing.T) {
	requirePty(t)
	cases := []struct {
		name, command, blocked string
		python                 bool
	}{
		{"sleep", "echo go; sleep 30", "sleep", false},
		{"a reader of a pipe", "echo go; sleep 30 | cat", "cat", false},
		{"a job in the background reading nothing, the shell waiting", "echo go; sleep 30 & wait", "sh", false},
		{"the terminal beside a socket", python3 + ` -c 'import select,socket,sys; a,b=socket.socketpair(); print("go", flush=True); select.select([sys.stdin,a],[],[])'`, "python3", true},
		{"epoll on the terminal and a socket", python3 + ` -c 'import select,socket,sys; a,b=socket.socketpair(); e=select.epoll(); e.register(0, select.EPOLLIN); e.register(a.fileno(), select.EPOLLIN); print("go", flush=True); e.poll()'`, "python3", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startCase(t, tc.command, tc.python)
			waitUntilBlocked(t, r, tc.blocked)
			for range 3 {
				if w := ForegroundInput(r.p.Pid()); w.Waiting {
					t.Fatalf("ForegroundInput says %s (pid %d) waits for input", w.Name, w.Pid)
				}
			}
		})
	}
	t.Run("a busy loop", func(t *testing.T) {
		r := start(t, Spec{Command: "echo go; while :; do :; done", UsePty: true})
		r.out.waitFor(testContext(t), t, "go")
		for range 3 {
			if w := ForegroundInput(r.p.Pid()); w.Waiting {
				t.Fatalf("ForegroundInput says %s (pid %d) waits for input", w.Name, w.Pid)
			}
		}
	})
	t.Run("on pipes", func(t *testing.T) {
		r := start(t, Spec{Command: "echo go; read x"})
		r.out.waitFor(testContext(t), t, "go")
		waitUntilBlocked(t, r, "sh")
		if w := ForegroundInput(r.p.Pid()); w.Waiting {
			t.Fatalf("a process on pipes has no terminal, but ForegroundInput says %s waits", w.Name)
		}
	})
}

// startCase starts command under a pseudoterminal and waits for its "go": what it
// waits on comes after.
func startCase(t *testing.T, command string, python bool) *running {
	t.Helper()
	if python {
		requirePython(t)
	}
	r := start(t, Spec{Command: command, UsePty: true})
	r.out.waitFor(testContext(t), t, "go")
	return r
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python3); err != nil {
		t.Skipf("%s is not installed (.ci/run installs Debian's python3)", python3)
	}
}

// waitForPipeInput polls PipeInput until it finds somebody reading the shell's pipe.
func waitForPipeInput(t *testing.T, r *running) InputWait {
	t.Helper()
	return pollWait(t, r, "PipeInput never found a reader of the shell's pipe", PipeInput)
}

// A shell on pipes reads its commands from its input pipe: PipeInput finds the
// shell itself reading it between commands, the command that reads it while one
// does, and nobody while a command waits on something else.
func TestPipeInputSeesWhoReadsTheShellsPipe(t *testing.T) {
	r := start(t, Spec{Shell: "/bin/sh"})
	typed := func(line string) {
		t.Helper()
		if _, err := r.p.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
	}
	if w := waitForPipeInput(t, r); w.Pid != r.p.Pid() {
		t.Fatalf("between commands PipeInput found %s (pid %d), not the shell (%d)", w.Name, w.Pid, r.p.Pid())
	}

	typed("echo go; head -n 1; echo head-done")
	r.out.waitFor(testContext(t), t, "go")
	if w := waitForPipeInput(t, r); w.Name != "head" {
		t.Fatalf("while head reads the pipe PipeInput found %s (pid %d)", w.Name, w.Pid)
	}
	typed("for-head")
	r.out.waitFor(testContext(t), t, "head-done")
	if w := waitForPipeInput(t, r); w.Pid != r.p.Pid() {
		t.Fatalf("after the command PipeInput found %s (pid %d), not the shell", w.Name, w.Pid)
	}

	typed("echo sleeping; sleep 30 </dev/null")
	r.out.waitFor(testContext(t), t, "sleeping")
	waitUntilBlocked(t, r, "sleep")
	for range 3 {
		if w := PipeInput(r.p.Pid()); w.Waiting {
			t.Fatalf("while sleep runs PipeInput says %s (pid %d) reads the pipe", w.Name, w.Pid)
		}
	}
}

// A shell under a pseudoterminal reads no pipe.
func TestPipeInputUnderAPseudoterminal(t *testing.T) {
	requirePty(t)
	r := start(t, Spec{Command: "echo go; read x", UsePty: true})
	r.out.waitFor(testContext(t), t, "go")
	waitUntilBlocked(t, r, "sh")
	if w := PipeInput(r.p.Pid()); w.Waiting {
		t.Fatalf("a shell under a pseudoterminal has no input pipe, but PipeInput says %s waits", w.Name)
	}
}

// waitForShellReading polls ShellReadsInput until it says the shell reads its input.
func waitForShellReading(t *testing.T, r *running) {
	t.Helper()
	pollWait(t, r, "ShellReadsInput never said the shell reads its input", func(sid int) InputWait {
		return InputWait{Waiting: ShellReadsInput(sid)}
	})
}

// A shell at its prompt reads its input, under a pseudoterminal and on pipes; one
// running a command, or waiting for a command that reads the input, does not.
func TestShellReadsInputAtThePromptOnly(t *testing.T) {
	for _, usePty := range []bool{true, false} {
		name := "pipes"
		if usePty {
			name = "pty"
		}
		t.Run(name, func(t *testing.T) {
			if usePty {
				requirePty(t)
			}
			r := start(t, Spec{Shell: "/bin/sh", UsePty: usePty})
			typed := func(line string) {
				t.Helper()
				if _, err := r.p.Write([]byte(line + "\n")); err != nil {
					t.Fatalf("write %q: %v", line, err)
				}
			}
			waitForShellReading(t, r)

			// cat waits on a FIFO nobody writes yet: a command busy with something
			// other than the shell's input, until the test writes to it.
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			typed("echo wait''ing; cat " + fifo)
			r.out.waitFor(testContext(t), t, "waiting")
			waitUntilBlocked(t, r, "cat")
			if ShellReadsInput(r.p.Pid()) {
				t.Fatal("ShellReadsInput says the shell reads its input while cat runs")
			}
			if err := os.WriteFile(fifo, []byte("fifo-done\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r.out.waitFor(testContext(t), t, "fifo-done")
			waitForShellReading(t, r)

			typed("echo read''ing; head -n 1; echo head-done")
			r.out.waitFor(testContext(t), t, "reading")
			waitUntilBlocked(t, r, "head")
			if ShellReadsInput(r.p.Pid()) {
				t.Fatal("ShellReadsInput says the shell reads its input while head does")
			}
			typed("for-head")
			r.out.waitFor(testContext(t), t, "head-done")
			waitForShellReading(t, r)
		})
	}
}
