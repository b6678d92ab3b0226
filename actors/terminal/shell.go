package terminal

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/pty"
)

// shellHandle is what must outlive a shell actor's restart: the process and its
// input pump. The shell actor's producer closes over it, so a restarted instance finds
// the process it is to re-attach to.
type shellHandle struct {
	spec     pty.Spec
	startErr error // a failure decided before starting (an unusable folder)
	logger   *slog.Logger
	// killGrace is the time between SIGHUP and SIGKILL when the process is ended.
	killGrace time.Duration
	// sessions finds an exited shell's session members, one pass for the host's
	// terminals ended at the same time.
	sessions *pty.SessionScanner
	// input takes everything written to the process, from the terminal and the
	// shell actor alike; it is made with the handle, so a write made before the
	// process starts waits in it, in order, and goes first.
	input *inputPump

	mu       sync.Mutex // guards the fields below
	started  bool
	released bool
	proc     pty.Process
}

// shell owns one process: it starts it, writes to it, resizes and signals it, and
// runs the two goroutines that report back as messages to the terminal: the reader
// (output, then drained) and the waiter (the exit status).
type shell struct {
	handle   *shellHandle
	terminal *actor.PID
}

func newShellProps(h *shellHandle, terminal *actor.PID) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &shell{handle: h, terminal: terminal} })
}

func (s *shell) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *shellWrite:
		s.handle.input.push(m.data)
	case *shellResize:
		if p := s.process(); p != nil {
			if err := p.Resize(m.cols, m.rows); err != nil {
				s.handle.logger.Debug("resize failed", "err", err)
			}
		}
	case *shellInterrupt:
		// Only with a child pid: signalling group 0 would signal the host's own group.
		if p := s.process(); p != nil && p.Pid() > 0 {
			if err := p.Signal(syscall.SIGINT); err != nil {
				s.handle.logger.Debug("interrupt failed", "err", err)
			}
		}
	case *shellCloseOutput:
		if p := s.process(); p != nil {
			_ = p.CloseOutput()
		}
	case *shellTerminate:
		// End and reap the process off the mailbox, then stop: the terminal, and the
		// host's shutdown, wait for this actor's end, so they wait for the reaping too.
		self, system := ctx.Self(), ctx.ActorSystem()
		go func() {
			s.release()
			system.Root.Send(self, &shellReleased{})
		}()
	case *shellKill:
		// The process ends; the terminal hears of it as of any exit.
		if p := s.process(); p != nil {
			grace := s.handle.killGrace
			go pty.Terminate(p, grace, s.handle.sessions)
		}
	case *shellReleased:
		ctx.Stop(ctx.Self())
	case *actor.Stopped:
		// Stopped without a terminate (the actor system itself stopping): end the
		// process here rather than leave it running unowned.
		s.release()
	case *shellCrash:
		panic("shell actor: crash requested by a test")
	}
}

func (s *shell) process() pty.Process {
	s.handle.mu.Lock()
	defer s.handle.mu.Unlock()
	return s.handle.proc
}

// start starts the process, or, after a restart, finds it already running: the reader
// and waiter goroutines report to the terminal, not to this instance, so they carry on.
func (s *shell) start(ctx actor.Context) {
	h := s.handle
	h.mu.Lock()
	if h.started {
		h.mu.Unlock()
		return
	}
	h.started = true
	if h.startErr != nil {
		h.mu.Unlock()
		ctx.Send(s.terminal, &shellFailed{err: h.startErr})
		return
	}
	proc, err := pty.Start(h.spec)
	if err != nil {
		h.mu.Unlock()
		ctx.Send(s.terminal, &shellFailed{err: err})
		return
	}
	h.proc = proc
	h.mu.Unlock()
	h.input.attach(proc)

	system, term := ctx.ActorSystem(), s.terminal
	ctx.Send(term, &shellStarted{pid: proc.Pid()})
	go readOutput(system, term, proc.Output())
	go func() {
		exit := proc.Wait()
		system.Root.Send(term, &shellExited{exit: exit})
	}()
}

// release ends the process group (SIGHUP, then SIGKILL after the grace) and frees
// every descriptor once it has been reaped. It runs when the shell actor stops for
// good, which is when its terminal is disposed or the host shuts down.
func (s *shell) release() {
	h := s.handle
	h.mu.Lock()
	proc := h.proc
	released := h.released
	h.released = true
	h.mu.Unlock()
	h.input.close()
	if proc == nil || released {
		return
	}
	pty.Terminate(proc, h.killGrace, h.sessions)
	<-proc.Done()
	_ = proc.Close()
}

// readOutput turns the process's output into messages: decoded text, then drained.
// One decoder for the one stream, so a character split across reads arrives whole.
//
// The buffer follows the output: a quiet terminal reads into a small one, so a
// thousand idle shells do not each hold a flood's worth; a read that fills it starts
// a flood, which gets a large one (the reader gathers into it, see pty), dropped
// again when the output goes quiet.
func readOutput(system *actor.ActorSystem, term *actor.PID, out io.Reader) {
	const quietSize, floodSize = 4 << 10, 64 << 10
	var dec pty.UTF8Decoder
	buf := make([]byte, quietSize)
	for {
		n, err := out.Read(buf)
		if n > 0 {
			if text := dec.Decode(buf[:n]); text != "" {
				system.Root.Send(term, &shellOutput{data: text})
			}
		}
		if err != nil {
			if tail := dec.Flush(); tail != "" {
				system.Root.Send(term, &shellOutput{data: tail})
			}
			system.Root.Send(term, &shellDrained{})
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

// inputPump writes input to the process. A write the process can take at once is
// made by the caller (a keystroke goes straight to the terminal, with no hand-off);
// what it cannot take yet, or what comes before the process is attached, is queued
// for the pump's own goroutine, so a child that does not read its input never blocks
// the shell actor's or the terminal's mailbox.
type inputPump struct {
	logger *slog.Logger

	mu      sync.Mutex // guards the fields below
	w       io.Writer  // the process; nil until attach
	try     tryWriter  // w's non-blocking write, or nil: everything goes through the queue
	queue   [][]byte
	writing bool // a write is under way, by the pump or a caller; the next waits
	closed  bool
	wake    chan struct{}
}

// tryWriter writes what it can without waiting; it reports a full buffer as
// syscall.EAGAIN with the count written so far.
type tryWriter interface {
	TryWrite(b []byte) (int, error)
}

func newInputPump(logger *slog.Logger) *inputPump {
	return &inputPump{logger: logger, wake: make(chan struct{}, 1)}
}

// attach gives the pump its process and starts its goroutine; what was pushed before
// is written first, in order.
func (p *inputPump) attach(w io.Writer) {
	p.mu.Lock()
	if p.closed || p.w != nil {
		p.mu.Unlock()
		return
	}
	p.w = w
	p.try, _ = w.(tryWriter)
	p.mu.Unlock()
	go p.run()
	p.signal()
}

func (p *inputPump) push(b []byte) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if p.try == nil || p.writing || len(p.queue) > 0 {
		p.queue = append(p.queue, b)
		p.mu.Unlock()
		p.signal()
		return
	}
	p.writing = true
	p.mu.Unlock()

	n, err := p.try.TryWrite(b)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		p.logWriteError(err)
		n = len(b) // the process is gone or refuses input; the rest would fail too
	}

	p.mu.Lock()
	p.writing = false
	if n < len(b) && !p.closed {
		p.queue = append([][]byte{b[n:]}, p.queue...)
	}
	queued := len(p.queue) > 0
	p.mu.Unlock()
	if queued {
		p.signal()
	}
}

func (p *inputPump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *inputPump) close() {
	p.mu.Lock()
	p.closed = true
	p.queue = nil
	p.mu.Unlock()
	p.signal()
}

func (p *inputPump) run() {
	for range p.wake {
		for {
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				return
			}
			if len(p.queue) == 0 || p.writing {
				// A caller writing now signals again when it leaves anything queued.
				p.mu.Unlock()
				break
			}
			b, w := p.queue[0], p.w
			p.queue = p.queue[1:]
			p.writing = true
			p.mu.Unlock()
			if _, err := w.Write(b); err != nil {
				p.logWriteError(err)
			}
			p.mu.Lock()
			p.writing = false
			p.mu.Unlock()
		}
	}
}

func (p *inputPump) logWriteError(err error) {
	if !errors.Is(err, io.ErrClosedPipe) {
		p.logger.Debug("input write failed", "err", err)
	}
}
