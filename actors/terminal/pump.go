package terminal

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"syscall"
)

// inputPump writes input to the process; the shell actor owns it. A write the
// process can take at once is made by the caller (a keystroke goes from the
// terminal's goroutine straight to the process, with no hand-off); what it cannot
// take yet, or what comes before the process is attached, is queued for the pump's
// own goroutine, so a child that does not read its input never blocks the shell
// actor's or the terminal's mailbox.
//
// A resize and an interrupt go through the pump too, in their place among the
// writes: a client's "resize, then type stty size" must reach the process in that
// order, which two ways in (the pump for input, the shell actor's mailbox for the
// rest) could not promise.
//
// A panic in a write, the caller's or the goroutine's, is the pump's: it is
// recovered, the write that panicked is dropped (written again, it would likely
// panic again), and the shell actor is told, which fails so that its supervisor
// restarts it. Until the restarted actor attaches the pump again, everything pushed
// waits in the queue, in order.
type inputPump struct {
	logger *slog.Logger
	wake   chan struct{}

	mu      sync.Mutex     // guards the fields below
	w       io.Writer      // the process; nil until attach
	try     tryWriter      // w's non-blocking write, or nil: everything goes through the queue
	ctl     processControl // the process's controls; nil until attach
	queue   []pumpOp
	writing bool // a write is under way, by the pump or a caller; the next waits
	running bool // the pump's goroutine runs
	broken  bool // a write panicked; the caller's writes are queued until attach
	closed  bool
	failed  func(reason any) // tells the owner of a panic
}

// pumpOp is one thing for the process, in order: bytes to write, or a control.
type pumpOp struct {
	data    []byte
	control func(processControl)
}

// processControl is what the pump does to the process besides writing to it: a
// pty.Process.
type processControl interface {
	Resize(cols, rows int) error
	Signal(sig syscall.Signal) error
	Pid() int
}

// tryWriter writes what it can without waiting; it reports a full buffer as
// syscall.EAGAIN with the count written so far.
type tryWriter interface {
	TryWrite(b []byte) (int, error)
}

func newInputPump(logger *slog.Logger) *inputPump {
	return &inputPump{logger: logger, wake: make(chan struct{}, 1)}
}

// attach gives the pump its process, the first time, and starts its goroutine where
// none runs: when the shell actor starts, and again when a restarted one finds that
// a panic ended it. failed hears of a panic. What was pushed meanwhile is written
// first, in order.
func (p *inputPump) attach(w io.Writer, ctl processControl, failed func(reason any)) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if p.w == nil {
		p.w, p.ctl = w, ctl
		p.try, _ = w.(tryWriter)
	}
	p.failed = failed
	p.broken = false
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
	p.signal()
}

// push writes b to the process, or queues it behind what waits.
func (p *inputPump) push(b []byte) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if p.try == nil || p.writing || p.broken || len(p.queue) > 0 {
		p.queue = append(p.queue, pumpOp{data: b})
		p.mu.Unlock()
		p.signal()
		return
	}
	p.writing = true
	p.mu.Unlock()

	n, err := p.tryWrite(b)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		p.logWriteError(err)
		n = len(b) // the process is gone or refuses input; the rest would fail too
	}

	p.mu.Lock()
	p.writing = false
	if n < len(b) && !p.closed {
		p.queue = append([]pumpOp{{data: b[n:]}}, p.queue...)
	}
	queued := len(p.queue) > 0
	p.mu.Unlock()
	if queued {
		p.signal()
	}
}

// resize sets the process's window size once what was pushed before is written.
func (p *inputPump) resize(cols, rows int) {
	p.control(func(c processControl) {
		if err := c.Resize(cols, rows); err != nil {
			p.logger.Debug("resize failed", "err", err)
		}
	})
}

// interrupt sends SIGINT to the process's group once what was pushed before is
// written, as ^C does under a pseudoterminal.
func (p *inputPump) interrupt() {
	p.control(func(c processControl) {
		// Only with a child pid: signalling group 0 would signal the host's own group.
		if c.Pid() > 0 {
			if err := c.Signal(syscall.SIGINT); err != nil {
				p.logger.Debug("interrupt failed", "err", err)
			}
		}
	})
}

// control does op to the process now if nothing waits before it (a control does
// not block), else queues it behind what does.
func (p *inputPump) control(op func(processControl)) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if p.ctl == nil || p.writing || p.broken || len(p.queue) > 0 {
		p.queue = append(p.queue, pumpOp{control: op})
		p.mu.Unlock()
		p.signal()
		return
	}
	ctl := p.ctl
	p.writing = true
	p.mu.Unlock()
	p.controlNow(op, ctl)
	p.mu.Lock()
	p.writing = false
	queued := len(p.queue) > 0
	p.mu.Unlock()
	if queued {
		p.signal()
	}
}

// controlNow is the caller's control; a panic in it is the pump's, as a write's.
func (p *inputPump) controlNow(op func(processControl), ctl processControl) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked(r, false)
		}
	}()
	op(ctl)
}

// tryWrite is the caller's write; a panic in it is the pump's, not the caller's.
func (p *inputPump) tryWrite(b []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked(r, false)
			n, err = len(b), nil
		}
	}()
	return p.try.TryWrite(b)
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
	defer func() {
		if r := recover(); r != nil {
			p.panicked(r, true)
		}
	}()
	for range p.wake {
		for {
			p.mu.Lock()
			if p.closed {
				p.running = false
				p.mu.Unlock()
				return
			}
			if len(p.queue) == 0 || p.writing {
				// A caller writing now signals again when it leaves anything queued.
				p.mu.Unlock()
				break
			}
			op, w, ctl := p.queue[0], p.w, p.ctl
			p.queue = p.queue[1:]
			p.writing = true
			p.mu.Unlock()
			if op.control != nil {
				op.control(ctl)
			} else if _, err := w.Write(op.data); err != nil {
				p.logWriteError(err)
			}
			p.mu.Lock()
			p.writing = false
			p.mu.Unlock()
		}
	}
}

// panicked marks the pump broken after a write panicked, in the pump's goroutine
// (which has then ended) or a caller's, and tells its owner.
func (p *inputPump) panicked(reason any, inGoroutine bool) {
	p.mu.Lock()
	p.broken = true
	p.writing = false
	if inGoroutine {
		p.running = false
	}
	failed := p.failed
	p.mu.Unlock()
	if failed != nil {
		failed(reason)
	}
}

func (p *inputPump) logWriteError(err error) {
	if !errors.Is(err, io.ErrClosedPipe) {
		p.logger.Debug("input write failed", "err", err)
	}
}
