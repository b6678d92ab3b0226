package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"
)

// ptyRun is a verb running on a pseudoterminal of the test's, as a person's window:
// what it prints is collected, and the test types into it.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File
	done chan struct{} // closed when the verb has exited
	err  error         // its Wait, once done

	mu      sync.Mutex
	out     strings.Builder
	changed chan struct{} // signalled on every read
	cursor  int           // where the next expect looks from
}

func (h *cliHost) attachOnPty(cols, rows uint16, args ...string) *ptyRun {
	h.t.Helper()
	return h.onPty(cols, rows, "attach", args...)
}

// onPty runs a verb against h on a pseudoterminal of cols x rows.
func (h *cliHost) onPty(cols, rows uint16, verb string, args ...string) *ptyRun {
	h.t.Helper()
	full := append([]string{verb, "--url", h.url, "--state-dir", h.state}, args...)
	cmd := exec.Command(h.bin, full...)
	cmd.Env = append(os.Environ(), "TERMHOST_URL=", "TERMHOST_TOKEN=")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		h.t.Fatal(err)
	}
	p := &ptyRun{t: h.t, cmd: cmd, ptmx: ptmx, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the verb and its terminal are gone
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		ptmx.Close()
	})
	return p
}

// expect waits until s is printed after what the last expect matched, and moves past
// it. On a timeout it fails with everything the verb printed.
func (p *ptyRun) expect(s string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		p.mu.Lock()
		text := p.out.String()
		i := strings.Index(text[p.cursor:], s)
		if i >= 0 {
			p.cursor += i + len(s)
		}
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			p.t.Fatalf("attach did not print %q; it printed:\n%q", s, text)
		}
	}
}

// expectPrompt waits for the shell's prompt (bash's, as root or not) after what the
// last expect matched, before the test types again.
func (p *ptyRun) expectPrompt() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		p.mu.Lock()
		text := p.out.String()
		i := -1
		for _, prompt := range []string{"# ", "$ "} {
			if j := strings.Index(text[p.cursor:], prompt); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i >= 0 {
			p.cursor += i + 2
		}
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			p.t.Fatalf("no prompt; attach printed:\n%q", text)
		}
	}
}

func (p *ptyRun) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Count(p.out.String(), s)
}

func (p *ptyRun) typeIn(s string) {
	p.t.Helper()
	if _, err := p.ptmx.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// exitCode waits for the verb to exit.
func (p *ptyRun) exitCode() int {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		p.t.Fatalf("attach did not exit; it printed:\n%q", p.out.String())
	}
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) {
		p.t.Fatal(p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestAttachDetachResizeReattach: attach shows the shell, sends its window's size at
// start and on SIGWINCH, detaches on ctrl-\ d leaving the shell running; attaching
// again shows the scrollback, and the shell's exit is attach's exit code.
func TestAttachDetachResizeReattach(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	if r := h.cli("", "new", "--name", "sh1"); r.code != 0 {
		t.Fatalf("new: %q", r.stderr)
	}
	w := h.watch("ahp-terminal:/sh1")
	w.waitPrompt()

	a := h.attachOnPty(100, 30, "sh1")
	a.expect(`ctrl-\ d detaches`)
	w.waitResized(100, 30)
	a.typeIn("stty size; echo one-$((1+1))\r")
	a.expect("30 100")
	a.expect("one-2")
	a.expectPrompt()

	if err := pty.Setsize(a.ptmx, &pty.Winsize{Cols: 101, Rows: 33}); err != nil {
		t.Fatal(err)
	}
	w.waitResized(101, 33)
	a.typeIn("stty size\r")
	a.expect("33 101")
	a.expectPrompt()

	// ctrl-\ ctrl-\ is one ctrl-\ for the program reading, and no detach. The
	// terminal is raw while head reads, so ctrl-\ is a byte there, not SIGQUIT.
	a.typeIn("stty raw -echo; echo ready-$((2+3)); head -c 2 | od -An -c; stty sane\r")
	a.expect("ready-5")
	a.typeIn("\x1c\x1cz")
	a.expect("034   z")
	a.expectPrompt()

	a.typeIn("\x1cd")
	a.expect("detached from ahp-terminal:/sh1")
	if code := a.exitCode(); code != 0 {
		t.Fatalf("attach after detaching exited %d", code)
	}
	if rows := h.lsJSON(); len(rows) != 1 || rows[0].Status != "running" {
		t.Fatalf("after detaching, ls: %+v; want sh1 running", rows)
	}

	b := h.attachOnPty(100, 30, "#1")
	b.expect("one-2") // the scrollback, before the live stream
	b.expect(`ctrl-\ d detaches`)
	b.typeIn("exit 3\r")
	b.expect("ahp-terminal:/sh1 exited with code 3")
	if code := b.exitCode(); code != 3 {
		t.Fatalf("attach exited %d when its shell exited 3", code)
	}
}

// TestAttachReadOnly: a read-only attach shows output and sends nothing, not even
// its size.
func TestAttachReadOnly(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	if r := h.cli("", "new", "--name", "ro"); r.code != 0 {
		t.Fatalf("new: %q", r.stderr)
	}
	w := h.watch("ahp-terminal:/ro")
	w.waitPrompt()
	a := h.attachOnPty(120, 40, "--read-only", "ro")
	a.expect("read-only")
	a.typeIn("echo typed-$((5+5))\r")
	w.input("echo watched-$((7+7))\r")
	a.expect("watched-14")
	w.waitOutput("watched-14")
	a.typeIn("\x1cd")
	if code := a.exitCode(); code != 0 {
		t.Fatalf("read-only attach exited %d", code)
	}
	for _, e := range w.seen {
		if e.Type == "terminal/input" && e.Origin != nil && e.Origin.ClientID != "test-watcher" || e.Type == "terminal/resized" {
			t.Fatalf("a read-only attach sent %s", e.Type)
		}
	}
	if n := a.count("typed-10"); n != 0 {
		t.Fatalf("what was typed into a read-only attach ran")
	}
}

// TestAttachReconnects: the connection is cut under attach (a proxy between them
// drops both sockets); output made meanwhile is shown once it is back, once, with a
// status line saying so, and typing goes on working.
func TestAttachReconnects(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	if r := h.cli("", "new", "--name", "cut"); r.code != 0 {
		t.Fatalf("new: %q", r.stderr)
	}
	w := h.watch("ahp-terminal:/cut")
	w.waitPrompt()
	p := startProxy(t, strings.TrimSuffix(strings.TrimPrefix(h.url, "ws://"), "/"))
	via := *h
	via.url = "ws://" + p.addr() + "/"

	a := via.attachOnPty(100, 30, "cut")
	a.expect(`ctrl-\ d detaches`)
	a.typeIn("echo before-$((2+2))\r")
	a.expect("before-4")
	a.expectPrompt()

	p.cut()
	a.expect("lost; reconnecting")
	w.input("echo during-$((3+3))\r")
	w.waitOutput("during-6")
	p.resume()
	a.expect("reconnected; nothing was missed]")
	a.expect("during-6")
	a.expectPrompt()
	a.typeIn("echo after-$((4+4))\r")
	a.expect("after-8")
	if n := a.count("during-6"); n != 1 {
		t.Fatalf("the output made while cut off was shown %d times", n)
	}
	a.typeIn("\x1cd")
	if code := a.exitCode(); code != 0 {
		t.Fatalf("attach exited %d", code)
	}
}

// proxy forwards TCP connections to a host, and can drop all of them at once and
// hold new ones until it is told to let them through.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu     sync.Mutex
	held   bool
	waits  []net.Conn
	active []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range append(p.waits, p.active...) {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.held {
				p.waits = append(p.waits, c)
				p.mu.Unlock()
				continue
			}
			p.mu.Unlock()
			p.forward(c)
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.active = append(p.active, c, up)
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
}

// cut closes every forwarded connection, both ends, and holds new ones.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	for _, c := range p.active {
		c.Close()
	}
	p.active = nil
}

// resume forwards the connections held, and new ones.
func (p *proxy) resume() {
	p.mu.Lock()
	waits := p.waits
	p.held, p.waits = false, nil
	p.mu.Unlock()
	for _, c := range waits {
		p.forward(c)
	}
}

// TestNewAttach: new --attach prints the URI and attaches; a command's exit code is
// attach's.
func TestNewAttach(t *testing.T) {
	h := startCLIHost(t, "127.0.0.1:0")
	a := h.onPty(80, 24, "new", "--name", "cmd", "--attach", "--", "sh", "-c", "echo ready; read line; echo got-$line; exit 5")
	a.expect("ahp-terminal:/cmd")
	a.expect(`ctrl-\ d detaches`)
	// No prompt to wait for: what is typed waits in the terminal for read.
	a.typeIn("it\r")
	a.expect("got-it")
	a.expect("ahp-terminal:/cmd exited with code 5")
	if code := a.exitCode(); code != 5 {
		t.Fatalf("new --attach exited %d when its command exited 5", code)
	}
}
