package pty

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait in these tests. Nothing is asserted about time:
// a wait that runs out fails with what was seen so far.
const testTimeout = 20 * time.Second

// testShell is pinned: a login shell's rc files could print, fork or page.
const testShell = "/bin/sh"

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func requirePty(t *testing.T) {
	t.Helper()
	if !Available() {
		t.Skip("this machine cannot open a pseudoterminal")
	}
}

// collector reads a process's output from Start until EOF, as a Shell's reader does.
type collector struct {
	mu   sync.Mutex // guards buf and err
	buf  bytes.Buffer
	err  error         // the Read error that ended the drain (nil after io.EOF)
	more chan struct{} // gets a token after each chunk, so waiters re-check
	done chan struct{} // closed once the reader has returned
}

func collect(r io.Reader) *collector {
	c := &collector{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 8192)
		for {
			n, err := r.Read(buf)
			c.mu.Lock()
			c.buf.Write(buf[:n])
			if err != nil && err != io.EOF {
				c.err = err
			}
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *collector) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor waits until the output contains s and returns it.
func (c *collector) waitFor(ctx context.Context, t *testing.T, s string) string {
	t.Helper()
	for {
		if out := c.String(); strings.Contains(out, s) {
			return out
		}
		select {
		case <-c.more:
		case <-c.done:
			if out := c.String(); strings.Contains(out, s) {
				return out
			}
			t.Fatalf("output ended without %q; got %q", s, c.String())
		case <-ctx.Done():
			t.Fatalf("no %q in the output before the deadline; got %q", s, c.String())
		}
	}
}

// waitEOF waits for the end of the output and returns all of it.
func (c *collector) waitEOF(ctx context.Context, t *testing.T) string {
	t.Helper()
	select {
	case <-c.done:
	case <-ctx.Done():
		t.Fatalf("output did not end before the deadline; got %d bytes: %q", len(c.String()), tail(c.String()))
	}
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		t.Fatalf("output ended with %v, want io.EOF", err)
	}
	return c.String()
}

func tail(s string) string {
	if len(s) > 200 {
		return "..." + s[len(s)-200:]
	}
	return s
}

// running is a started process with its owner (the goroutine that calls Wait) and
// its reader.
type running struct {
	p    Process
	out  *collector
	exit chan Exit // receives Wait's result once
}

// start starts spec and registers a cleanup that ends the process group, waits for
// the owner and the reader, and closes every descriptor.
func start(t *testing.T, spec Spec) *running {
	t.Helper()
	if spec.Shell == "" {
		spec.Shell = testShell
	}
	p, err := Start(spec)
	if err != nil {
		t.Fatalf("Start(%+v): %v", spec, err)
	}
	r := &running{p: p, out: collect(p.Output()), exit: make(chan Exit, 1)}
	go func() { r.exit <- p.Wait() }()
	t.Cleanup(func() {
		Terminate(p, time.Second, nil)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		select {
		case <-p.Done():
		case <-ctx.Done():
			t.Errorf("process %d did not exit after Terminate", p.Pid())
		}
		_ = p.CloseOutput()
		select {
		case <-r.out.done:
		case <-ctx.Done():
			t.Errorf("reader of process %d did not return after CloseOutput", p.Pid())
		}
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func (r *running) waitExit(ctx context.Context, t *testing.T) Exit {
	t.Helper()
	select {
	case e := <-r.exit:
		return e
	case <-ctx.Done():
		t.Fatalf("process %d did not exit before the deadline; output %q", r.p.Pid(), tail(r.out.String()))
		return Exit{}
	}
}

// modes runs f once on pipes and once under a pseudoterminal.
func modes(t *testing.T, f func(t *testing.T, usePty bool)) {
	t.Run("pipes", func(t *testing.T) { f(t, false) })
	t.Run("pty", func(t *testing.T) {
		requirePty(t)
		f(t, true)
	})
}
