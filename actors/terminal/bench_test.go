package terminal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// frameCounter counts a terminal's frames by type without decoding them: the
// benchmarks measure the terminal, not a JSON decoder.
type frameCounter struct {
	mu         sync.Mutex
	dataFrames int
	exited     bool
	wake       chan struct{}
}

func newFrameCounter() *frameCounter { return &frameCounter{wake: make(chan struct{}, 1)} }

func (f *frameCounter) Deliver(_ string, frame []byte) {
	f.mu.Lock()
	switch {
	case bytes.Contains(frame, []byte(`"terminal/data"`)):
		f.dataFrames++
	case bytes.Contains(frame, []byte(`"terminal/exited"`)):
		f.exited = true
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds of the counts, failing the benchmark after
// waitTimeout.
func (f *frameCounter) waitFor(tb testing.TB, what string, cond func(dataFrames int, exited bool) bool) {
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond(f.dataFrames, f.exited)
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.wake:
		case <-deadline.C:
			tb.Fatalf("no %s within %v", what, waitTimeout)
		}
	}
}

func benchSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
}

// benchTerminal starts a terminal for m, as the root would, subscribes sub to it
// once its create is answered, and returns its actor.
func benchTerminal(tb testing.TB, system *actor.ActorSystem, usePty bool, m *Create, sub delivery.Subscriber) *actor.PID {
	tb.Helper()
	cfg := Config{Journal: delivery.NewJournal(1024, 1<<20), UsePty: usePty, Home: tb.TempDir(), KillGrace: 500 * time.Millisecond}
	var terminalPID *actor.PID
	spawned := make(chan struct{})
	parent := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if msg, ok := ctx.Message().(*Create); ok {
			terminalPID = ctx.Spawn(NewProps(cfg, msg, ""))
			close(spawned)
			ctx.Forward(terminalPID)
		}
	}))
	tb.Cleanup(func() { _ = system.Root.StopFuture(parent).Wait() })
	res, err := system.Root.RequestFuture(parent, m, waitTimeout).Result()
	if err != nil || res.(*CreateResult).Err != nil {
		tb.Fatalf("create: %v %v", err, res)
	}
	<-spawned
	if _, err := system.Root.RequestFuture(terminalPID, &channel.Subscribe{Channel: m.URI, Sub: sub}, waitTimeout).Result(); err != nil {
		tb.Fatal(err)
	}
	return terminalPID
}

// BenchmarkTerminalKeystrokeEcho is the keystroke path end to end: a client's
// terminal/input dispatched to the terminal, written to a process in raw mode that
// echoes it (as a shell's line editor does), read back and sent to a subscriber.
// One op is one keystroke's round trip.
func BenchmarkTerminalKeystrokeEcho(b *testing.B) {
	if !pty.Available() {
		b.Skip("no pseudoterminal here")
	}
	system := benchSystem()
	defer system.Shutdown()
	uri := "ahp-terminal:/bench-echo"
	sub := newFrameCounter()
	// A pseudoterminal is listed, and its create answered, once it printed: R is
	// printed once the terminal is raw, so nothing typed is echoed twice.
	pid := benchTerminal(b, system, true, &Create{URI: uri, Claim: messages.Claim{Kind: messages.ClaimClient},
		Spec: Spec{Command: "stty raw -echo; printf R; exec cat"}}, sub)
	data := "x"
	raw, _ := json.Marshal(map[string]any{"type": messages.TerminalInput, "data": data})
	action := &messages.Action{Type: messages.TerminalInput, Data: &data}
	b.ResetTimer()
	for range b.N {
		sub.mu.Lock()
		before := sub.dataFrames
		sub.mu.Unlock()
		system.Root.Send(pid, &channel.Dispatch{Channel: uri, Action: action, Raw: raw, Sub: sub})
		sub.waitFor(b, "echo", func(n int, _ bool) bool { return n > before })
	}
}

// BenchmarkTerminalOutput is the output path: a process printing as fast as it can,
// through the terminal (scrollback, integration, stamping) to one subscriber. One op
// is 64 KiB of output; the process's start is part of the run.
func BenchmarkTerminalOutput(b *testing.B) {
	for _, mode := range []struct {
		name   string
		usePty bool
	}{{"pty", true}, {"pipes", false}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.usePty && !pty.Available() {
				b.Skip("no pseudoterminal here")
			}
			system := benchSystem()
			defer system.Shutdown()
			const chunk = 64 << 10
			b.SetBytes(chunk)
			sub := newFrameCounter()
			line := "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvw"
			b.ResetTimer()
			cpu := processCPU(b)
			benchTerminal(b, system, mode.usePty, &Create{URI: "ahp-terminal:/bench-output", Claim: messages.Claim{Kind: messages.ClaimClient},
				Spec: Spec{Command: fmt.Sprintf("yes %s | head -c %d", line, b.N*chunk)}}, sub)
			sub.waitFor(b, "exit", func(_ int, exited bool) bool { return exited })
			// This process's own CPU (the shell's is its children's, not counted) per
			// MB: what the busy flood's "CPU per MB, host" measures, without the
			// socket, and less moved by the machine's other work than the time is.
			b.ReportMetric((processCPU(b)-cpu).Seconds()*1e3/(float64(b.N)*chunk/1e6), "cpu-ms/MB")
		})
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
