package terminal

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/pty"
)

// The parts of a shell actor that run on goroutines of their own, as its failures
// name them.
const (
	partReader = "output reader"
	partWaiter = "exit waiter"
	partPump   = "input pump"
)

// shellProcess is what outlives a shell actor's restart: the process and where the
// goroutines serving it stand. newShell makes it with the actor's props, whose
// producer closes over it, so a restarted instance finds the process it is to keep.
// Only the shell actor's instances, one at a time, read or change its fields, so it
// needs no lock; a goroutine is handed what it uses when it starts. The terminal
// keeps only the input pump, to push typed input into it.
type shellProcess struct {
	spec pty.Spec
	// dirErr is a failure decided before the start: a working folder that
	// resolveDir refused.
	dirErr   error
	logger   *slog.Logger
	terminal *actor.PID
	// killGrace is the time between SIGHUP and SIGKILL when the process is ended.
	killGrace time.Duration
	// sessions finds an exited shell's session members, one pass for the host's
	// terminals ended at the same time.
	sessions *pty.SessionScanner
	// input takes everything written to the process. It is made with the record, so
	// what is pushed before the process starts waits in it, in order, and goes
	// first.
	input *inputPump
	// wrapOutput and wrapInput stand in front of the process's output and input;
	// only this package's tests set them (Config.wrapOutput, Config.wrapInput), to
	// make a reader or the pump fail as a bug would.
	wrapOutput func(io.Reader) io.Reader
	wrapInput  func(io.Writer) io.Writer

	tried bool        // the start was tried, which happens once in the record's life
	proc  pty.Process // nil until started, and when the start failed
	// adopted is the process started before the terminal (a spare), taken as
	// started at the first start.
	adopted pty.Process
	reader  partState
	waiter  partState
	ending  bool // the process is being ended for good
}

// partState is where a goroutine serving the process stands.
type partState int

const (
	partIdle    partState = iota // not running: not started yet, or ended by a panic
	partRunning                  // running
	partDone                     // its job is over: the output ended, the exit is known
)

// shell is the shell actor: it starts its process, writes to it, resizes, signals
// and ends it, and owns the goroutines that serve it: the output reader, the exit
// waiter and the input pump's writer. Each reports its end, and a panic, to this
// actor, which reports to the terminal; a panic is recovered where it happened and
// becomes a failure of this actor, so the terminal's supervisor restarts it. The
// restarted instance keeps the process (which must outlive any failure of ours) and
// starts again only the goroutines that panicked: a new reader carries on from where
// the failed one stopped, since what it had not read is still in the kernel's
// buffer, and nothing is read twice.
//
// Output does not pass through this actor's mailbox: the reader sends each chunk to
// the terminal itself, as the terminal pushes input into the pump itself, because a
// hop through a second mailbox would cost every chunk, and every keystroke's echo,
// a goroutine hand-off for nothing. The end of the output still comes through here,
// after the last chunk: the reader sent that chunk to the terminal before it told
// this actor, which tells the terminal only then, so the terminal has it first.
type shell struct{ p *shellProcess }

// newShell makes the props of a shell actor that runs spec and reports to terminal,
// and the input pump that the actor will own; the terminal pushes typed input into
// it directly (see terminal.input).
//
// adopted, when set, is a process started already (a spare shell): it is served
// instead of starting spec.
func newShell(cfg Config, spec pty.Spec, dirErr error, terminal *actor.PID, adopted pty.Process) (*actor.Props, *inputPump) {
	p := &shellProcess{spec: spec, dirErr: dirErr, adopted: adopted, logger: cfg.Logger, terminal: terminal, killGrace: cfg.KillGrace,
		sessions: cfg.Sessions, input: newInputPump(cfg.Logger), wrapOutput: cfg.wrapOutput, wrapInput: cfg.wrapInput}
	return actor.PropsFromProducer(func() actor.Actor { return &shell{p: p} }, actor.WithDispatcher(channel.Pooled)), p.input
}

func (s *shell) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *shellWrite:
		s.p.input.push(m.data)
	case *shellCloseOutput:
		if s.p.proc != nil {
			_ = s.p.proc.CloseOutput()
		}
	case *shellKill:
		// The process ends; the terminal hears of it as of any exit.
		if s.p.proc != nil {
			sig, grace := m.signal, m.grace
			if sig == 0 {
				sig = syscall.SIGHUP
			}
			if grace <= 0 {
				grace = s.p.killGrace
			}
			go pty.TerminateWith(s.p.proc, sig, grace, s.p.sessions)
		}
	case *shellTerminate:
		s.terminate(ctx)
	case *shellReleased:
		ctx.Stop(ctx.Self())
	case *outputEnded:
		s.p.reader = partDone
		ctx.Send(s.p.terminal, &shellDrained{})
	case *processExited:
		s.p.waiter = partDone
		ctx.Send(s.p.terminal, &shellExited{exit: m.exit})
	case *partFailed:
		s.partFailed(m)
	case *actor.Restarting:
		// Nothing to release: the process, and the goroutines still serving it,
		// belong to the record and carry on; the next instance restarts the part
		// that failed.
	case *actor.Stopped:
		// Stopped without a terminate (the actor system stopping, or the supervisor
		// giving up on this actor): end the process here rather than leave it
		// running unowned.
		if !s.p.ending {
			s.p.ending = true
			s.p.input.close()
			release(s.p.proc, s.p.killGrace, s.p.sessions)
		}
	}
}

// start starts the process the first time; every time, the first and after a
// restart, it starts whichever of the process's goroutines is not running.
func (s *shell) start(ctx actor.Context) {
	p := s.p
	if !p.tried {
		p.tried = true
		if p.dirErr != nil {
			for _, f := range p.spec.ExtraFiles {
				_ = f.Close()
			}
			ctx.Send(p.terminal, &shellFailed{err: p.dirErr, folder: true})
			return
		}
		var proc pty.Process
		var err error
		if p.adopted != nil {
			proc, p.adopted = p.adopted, nil
		} else {
			proc, err = pty.Start(p.spec)
		}
		if err != nil {
			// A folder that went away between resolveDir and the start is the
			// folder's failure too.
			ctx.Send(p.terminal, &shellFailed{err: err, folder: errors.Is(err, pty.ErrNoDir)})
			return
		}
		p.proc = proc
		ctx.Send(p.terminal, &shellStarted{pid: proc.Pid()})
	}
	if p.proc == nil {
		return
	}
	system, self := ctx.ActorSystem(), ctx.Self()
	fail := func(part string) func(any) {
		return func(reason any) {
			p.logger.Error("shell goroutine panicked", "part", part, "panic", reason, "stack", string(debug.Stack()))
			system.Root.Send(self, &partFailed{part: part, reason: reason})
		}
	}
	if p.reader == partIdle {
		p.reader = partRunning
		out := p.proc.Output()
		if p.wrapOutput != nil {
			out = p.wrapOutput(out)
		}
		go readOutput(system, p.terminal, self, out, fail(partReader))
	}
	if p.waiter == partIdle {
		p.waiter = partRunning
		go waitExit(system, self, p.proc, fail(partWaiter))
	}
	var in io.Writer = p.proc
	if p.wrapInput != nil {
		in = p.wrapInput(in)
	}
	p.input.attach(in, p.proc, fail(partPump))
}

// partFailed turns a goroutine's panic into this actor's failure, for the
// supervisor to restart it; the pump keeps its own state (see inputPump.attach).
func (s *shell) partFailed(m *partFailed) {
	switch m.part {
	case partReader:
		s.p.reader = partIdle
	case partWaiter:
		s.p.waiter = partIdle
	}
	panic(fmt.Errorf("the shell's %s panicked: %v", m.part, m.reason))
}

// terminate ends and reaps the process off the mailbox, then stops this actor: the
// terminal, and the host's shutdown, wait for this actor's end, so they wait for
// the reaping too.
func (s *shell) terminate(ctx actor.Context) {
	if s.p.ending {
		return
	}
	s.p.ending = true
	s.p.input.close()
	proc, grace, sessions := s.p.proc, s.p.killGrace, s.p.sessions
	self, system := ctx.Self(), ctx.ActorSystem()
	go func() {
		release(proc, grace, sessions)
		system.Root.Send(self, &shellReleased{})
	}()
}

// release ends the process group (SIGHUP, then SIGKILL after the grace) and frees
// every descriptor once the exit waiter has reaped it.
func release(proc pty.Process, grace time.Duration, sessions *pty.SessionScanner) {
	if proc == nil {
		return
	}
	pty.Terminate(proc, grace, sessions)
	<-proc.Done()
	_ = proc.Close()
}

// readOutput turns the process's output into messages: each decoded chunk straight
// to the terminal, then the end of the output to the shell actor. One decoder for
// the one stream, so a character split across reads arrives whole. A panic ends it
// through fail; what the failed read held is lost, nothing after it.
//
// The buffer follows the output: a quiet terminal reads into a small one, so a
// thousand idle shells do not each hold a flood's worth; a read that fills it starts
// a flood, which gets a large one (the reader gathers into it, see pty), dropped
// again when the output goes quiet.
//
// A flood's buffer is 256 KiB. A chunk is one frame, encoded once and written once
// to every subscriber's socket, so each per-frame cost (a writer woken and a writev
// per subscriber, a reader woken on the other end) is paid per chunk. The reader
// gathers until the coalescing window passes with nothing new or the buffer is
// full, so the slower the rest of the path (many subscribers, a busy machine), the
// larger its chunks and the fewer its per-frame costs (issue 13's fifth pass: with
// 50 subscribers, a quarter of the writevs and half the subscribers' reads of a
// 64 KiB buffer).
func readOutput(system *actor.ActorSystem, term, shell *actor.PID, out io.Reader, fail func(any)) {
	defer func() {
		if r := recover(); r != nil {
			fail(r)
		}
	}()
	const quietSize, floodSize = 4 << 10, 256 << 10
	var dec pty.UTF8Decoder
	buf := make([]byte, quietSize)
	for {
		n, err := out.Read(buf)
		echotrace.Mark("pty read")
		if n > 0 {
			if text := dec.Decode(buf[:n]); text != "" {
				system.Root.Send(term, &shellOutput{data: text})
			}
		}
		if err != nil {
			if tail := dec.Flush(); tail != "" {
				system.Root.Send(term, &shellOutput{data: tail})
			}
			system.Root.Send(shell, &outputEnded{})
			return
		}
		switch {
		case n == len(buf) && len(buf) < floodSize:
			buf = make([]byte, floodSize)
		case n < quietSize/4 && len(buf) > quietSize:
			buf = make([]byte, quietSize)
		}
	}
}

// waitExit is the process's one Wait; the status goes to the shell actor.
func waitExit(system *actor.ActorSystem, shell *actor.PID, proc pty.Process, fail func(any)) {
	defer func() {
		if r := recover(); r != nil {
			fail(r)
		}
	}()
	exit := proc.Wait()
	system.Root.Send(shell, &processExited{exit: exit})
}
