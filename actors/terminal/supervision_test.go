package terminal

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// faulty stands in front of a process's output or input, as a bug in the reader or
// the pump would: once armed, the next read or write panics, before it reads or
// writes anything.
type faulty struct {
	armed *atomic.Bool
	r     io.Reader
	w     io.Writer
}

func (f *faulty) fail() {
	if f.armed.CompareAndSwap(true, false) {
		panic("a bug in the test's stand-in")
	}
}

func (f *faulty) Read(b []byte) (int, error)  { f.fail(); return f.r.Read(b) }
func (f *faulty) Write(b []byte) (int, error) { f.fail(); return f.w.Write(b) }

// faultyTry is a faulty writer with the process's non-blocking write, so a
// keystroke's own write, made on the terminal's goroutine, is the one that panics.
type faultyTry struct{ *faulty }

func (f faultyTry) TryWrite(b []byte) (int, error) { f.fail(); return f.w.(tryWriter).TryWrite(b) }

// TestShellRestartKeepsTheProcess makes each goroutine the shell actor owns panic
// mid-session: the panic fails the shell actor, its supervisor restarts it, and the
// restarted instance serves the same process: input typed after the restart is
// echoed, a resize reaches it, a kill ends it, the terminal keeps its state and
// subscribers, and the exit is reported exactly once.
func TestShellRestartKeepsTheProcess(t *testing.T) {
	for _, mode := range []struct {
		name   string
		usePty bool
	}{{"pty", true}, {"pipes", false}} {
		for _, tc := range []struct {
			name, part string
			wrap       func(cfg *Config, armed *atomic.Bool)
		}{
			{"reader", partReader, func(cfg *Config, armed *atomic.Bool) {
				cfg.wrapOutput = func(r io.Reader) io.Reader { return &faulty{armed: armed, r: r} }
			}},
			// The keystroke's write, made on the terminal's goroutine.
			{"keystroke write", partPump, func(cfg *Config, armed *atomic.Bool) {
				cfg.wrapInput = func(w io.Writer) io.Writer { return faultyTry{&faulty{armed: armed, w: w}} }
			}},
			// The pump's own goroutine: a writer without the non-blocking write sends
			// every write through it.
			{"pump goroutine", partPump, func(cfg *Config, armed *atomic.Bool) {
				cfg.wrapInput = func(w io.Writer) io.Writer { return &faulty{armed: armed, w: w} }
			}},
		} {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				if mode.usePty && !pty.Available() {
					t.Skip("no pseudoterminal here")
				}
				testShellRestart(t, mode.usePty, tc.part, tc.wrap)
			})
		}
	}
}

func testShellRestart(t *testing.T, usePty bool, part string, wrap func(*Config, *atomic.Bool)) {
	system := newTestSystem(t)
	restarts := make(chan *actor.SupervisorEvent, 16)
	sub := system.EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.SupervisorEvent); ok {
			restarts <- e
		}
	})
	defer system.EventStream.Unsubscribe(sub)

	var armed atomic.Bool
	r := testRoot{cfg: Config{UsePty: usePty}}
	wrap(&r.cfg, &armed)
	uri := "ahp-terminal:/restart"
	// /bin/sh with a prompt of our own to wait for: under a pseudoterminal it is
	// interactive, on pipes it reads commands without one.
	terminalPID, out := r.start(t, system, &Create{URI: uri, Claim: messages.Claim{Kind: messages.ClaimClient},
		Spec: Spec{Shell: "/bin/sh", Env: []string{"PS1=ready> "}}})
	send := dispatcher(system, terminalPID, uri, "c", out)
	if usePty {
		out.waitOutput(t, "ready> ")
	}
	// The shell's pid, printed by the shell itself: the typed line's echo shows
	// $$, not the number.
	shellPID := func(tag string) string {
		t.Helper()
		send(input(fmt.Sprintf("echo %s-$((6*7))-$$\r", tag)))
		re := regexp.MustCompile(tag + `-42-(\d+)`)
		out.waitUntil(t, tag+" output", func() bool { return re.MatchString(out.output()) })
		return re.FindStringSubmatch(out.output())[1]
	}
	before := shellPID("before")

	armed.Store(true)
	// The reader fails on its next read, after this line's output; the pump on
	// this line's write, which is lost with it.
	send(input("echo during\r"))
	select {
	case e := <-restarts:
		if e.Directive != actor.RestartDirective || !strings.Contains(fmt.Sprint(e.Reason), part) {
			t.Fatalf("supervisor: %v for %v, want a restart for the %s", e.Directive, e.Reason, part)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the shell actor was not restarted; output %q", out.output())
	}

	if after := shellPID("after"); after != before {
		t.Fatalf("the shell changed across the restart: %s then %s", before, after)
	}
	if usePty {
		// Resize goes through the restarted shell actor to the process.
		cols, rows := 101, 31
		send(&messages.Action{Type: messages.TerminalResized, Cols: &cols, Rows: &rows})
		send(input("stty size\r"))
		out.waitOutput(t, "31 101")
	}
	// So does a kill.
	system.Root.Send(terminalPID, &Kill{URI: uri})
	out.waitUntil(t, "exit", func() bool { return len(out.actions(messages.TerminalExited)) > 0 })
	// One more round trip through the terminal's mailbox before counting.
	if _, err := system.Root.RequestFuture(terminalPID, &channel.Subscribe{Channel: uri, Sub: newCollector()}, waitTimeout).Result(); err != nil {
		t.Fatal(err)
	}
	if exits := out.actions(messages.TerminalExited); len(exits) != 1 {
		t.Fatalf("exits: %+v", exits)
	}
	if !strings.Contains(out.output(), "before-42-") {
		t.Fatal("the terminal lost its earlier output")
	}
	// Nothing else failed, the terminal's own end included.
	if err := system.Root.StopFuture(terminalPID).Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-restarts:
		t.Fatalf("another failure: %v of %v", e.Reason, e.Child)
	default:
	}
}
