package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/procstat"
)

// The flood: `head -c N /dev/zero | base64 -w 100`, printed by a one-command terminal
// that first waits for a line, so every subscriber is in place before the first byte.
// It prints "ready" first because a terminal under a pseudoterminal is listed (and
// createTerminal answered) once its shell has said something.

func floodCommand(n int64) string {
	return fmt.Sprintf("echo ready; read x; head -c %d /dev/zero | base64 -w 100", n)
}

func floodScript(n int64) string {
	return fmt.Sprintf("head -c %d /dev/zero | base64 -w 100", n)
}

// floodOutputBytes is what the flood prints: base64 of n bytes in lines of 100, each
// ending in \n, which a pseudoterminal turns into \r\n (ONLCR).
func floodOutputBytes(n int64, pty bool) int64 {
	enc := (n + 2) / 3 * 4
	lines := (enc + 99) / 100
	if pty {
		return enc + 2*lines
	}
	return enc + lines
}

// subResult is one subscriber's view of a flood.
type subResult struct {
	end  wsclient.End
	secs float64 // from the input that starts the flood to terminal/exited (or the end)
}

func (s subResult) rate() float64 {
	if s.secs <= 0 {
		return 0
	}
	return float64(s.end.Bytes) / s.secs
}

// complete says the subscriber saw the whole flood and the exit.
func (s subResult) complete(expected int64) bool {
	return s.end.Exited && s.end.Bytes >= expected
}

// floodRun is one flood through one terminal to its subscribers.
type floodRun struct {
	subs     []subResult
	expected int64
}

// completed are the subscribers that saw everything.
func (f *floodRun) completed() []subResult {
	var out []subResult
	for _, s := range f.subs {
		if s.complete(f.expected) {
			out = append(out, s)
		}
	}
	return out
}

// closedBy describes the subscribers that did not see everything, by how they ended.
func (f *floodRun) closedBy() map[string]int {
	out := map[string]int{}
	for _, s := range f.subs {
		if s.complete(f.expected) {
			continue
		}
		out[describeEnd(s.end)]++
	}
	return out
}

func describeEnd(end wsclient.End) string {
	switch {
	case end.Before:
		return end.Err.Error()
	case end.Exited:
		return fmt.Sprintf("saw the exit after only %d bytes", end.Bytes)
	case end.CloseCode >= 0:
		return fmt.Sprintf("closed by the host with status %d %q", end.CloseCode, end.CloseReason)
	case end.Err != nil:
		return fmt.Sprintf("connection ended without a close frame (%v)", end.Err)
	}
	return "ended"
}

// flood opens a flood terminal, subscribes subs streams to it, runs beside (if any)
// once they are in place, starts the flood and reads every stream to its end.
func (e *env) flood(ctx context.Context, k *wsclient.Control, label string, i int, n int64, subs int, beside func(ctx context.Context, uri string) error) (*floodRun, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	uri := e.uri(label, i)
	if err := k.Create(wctx, uri, floodCommand(n)); err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
		defer cancel()
		_ = k.Dispose(dctx, uri)
	}()
	streams := make([]*wsclient.Counter, 0, subs)
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	for j := range subs {
		s, err := wsclient.DialCounter(wctx, e.target, fmt.Sprintf("bench-%s-%d-%d", label, i, j), uri)
		if err != nil {
			return nil, err
		}
		streams = append(streams, s)
	}
	if beside != nil {
		if err := beside(wctx, uri); err != nil {
			return nil, err
		}
	}
	run := &floodRun{subs: make([]subResult, subs), expected: floodOutputBytes(n, e.pty)}
	counts := make([]atomic.Int64, subs)
	stop := e.prog.every(func() string {
		return fmt.Sprintf("%s: %d subscriber(s), first has %.1f of %.1f MB", label, subs, float64(counts[0].Load())/1e6, float64(run.expected)/1e6)
	})
	defer stop()
	var wg sync.WaitGroup
	start := time.Now()
	for j, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end := s.Drain(wctx, func(total int64) { counts[j].Store(total) })
			run.subs[j] = subResult{end: end, secs: time.Since(start).Seconds()}
		}()
	}
	if err := k.Input(wctx, uri, "\r"); err != nil {
		cancel()
		wg.Wait()
		return nil, fmt.Errorf("starting the flood: %w", err)
	}
	wg.Wait()
	return run, nil
}

// rawFlood runs the flood's command straight on a pseudoterminal (or pipes) and reads
// it to the end: the bytes and the seconds from start to EOF.
func (e *env) rawFlood(n int64) (int64, float64, error) {
	buf := make([]byte, 32<<10)
	start := time.Now()
	p, err := raw.Start(e.pty, e.shell, floodScript(n))
	if err != nil {
		return 0, 0, err
	}
	total, err := p.Drain(buf)
	secs := time.Since(start).Seconds()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return total, secs, err
}

// rawFloods are raw runs of a flood; their rate is the mean. The throughput scenario
// runs one before and one after the host's run, so a machine that grows busier or
// quieter meanwhile moves both sides.
type rawFloods struct {
	bytes int64 // what the last raw flood read
	total int64 // what every raw flood read together
	rates []float64
}

func (r *rawFloods) measure(e *env, n int64) error {
	b, secs, err := e.rawFlood(n)
	if err != nil {
		return err
	}
	r.bytes = b
	r.total += b
	r.rates = append(r.rates, float64(b)/secs)
	return nil
}

func (r *rawFloods) rate() float64 {
	if len(r.rates) == 0 {
		return 0
	}
	var sum float64
	for _, x := range r.rates {
		sum += x
	}
	return sum / float64(len(r.rates))
}

// settleMemory returns freed memory to the OS when the host is in this process, so an
// RSS figure starts from what is live rather than from earlier scenarios' garbage.
func (e *env) settleMemory() {
	if e.cfg.InProcess {
		runtime.GC()
		debug.FreeOSMemory()
	}
}

// rssSampler polls the host's RSS until stopped and keeps the peak.
type rssSampler struct {
	peak atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

func (e *env) sampleRSS() *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	if e.pid == 0 {
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v, ok := e.hostRSS(); ok && v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-t.C:
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// stop ends the polling; the peak is 0 when the RSS could not be read.
func (s *rssSampler) stop() int64 {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return s.peak.Load()
}

// cpuMeter measures, between its start and stop, one process's CPU time and the
// share of the machine's CPUs that were busy. ok is false where /proc does not say.
type cpuMeter struct {
	pid     int
	process float64 // the process's CPU seconds
	// children is its children's CPU seconds (procstat.ChildrenCPUSeconds), with
	// meterCPUAndChildren; reading them lists /proc, so the others leave it out.
	children     float64
	withChildren bool
	busy         float64 // the machine's busy share, 0 to 1
	switches     int64   // the machine's context switches
	span         float64 // the machine's CPU time over the span, in its own units
	ok           bool

	startCPU, startChildren float64
	startMachine            procstat.Machine
}

func meterCPU(pid int) *cpuMeter { return startMeter(&cpuMeter{pid: pid}) }

// meterCPUAndChildren is meterCPU that also measures the process's children.
func meterCPUAndChildren(pid int) *cpuMeter {
	return startMeter(&cpuMeter{pid: pid, withChildren: true})
}

func startMeter(m *cpuMeter) *cpuMeter {
	if m.pid == 0 {
		return m
	}
	kids, ok2 := m.childrenCPU()
	cpu, ok1 := procstat.CPUSeconds(m.pid)
	ms, ok3 := procstat.ReadMachine()
	m.ok = ok1 && ok2 && ok3
	m.startCPU, m.startChildren, m.startMachine = cpu, kids, ms
	return m
}

func (m *cpuMeter) childrenCPU() (float64, bool) {
	if !m.withChildren {
		return 0, true
	}
	return procstat.ChildrenCPUSeconds(m.pid)
}

// add counts a later metered span of the same process with this one: CPU and
// context switches summed, the machine's busy share averaged over both spans' time.
func (m *cpuMeter) add(o *cpuMeter) {
	if !m.ok || !o.ok {
		m.ok = false
		return
	}
	a, b := m.span, o.span
	if a+b > 0 {
		m.busy = (m.busy*a + o.busy*b) / (a + b)
	}
	m.span += o.span
	m.process += o.process
	m.children += o.children
	m.switches += o.switches
}

func (m *cpuMeter) stop() {
	if !m.ok {
		return
	}
	cpu, ok1 := procstat.CPUSeconds(m.pid)
	ms, ok3 := procstat.ReadMachine()
	kids, ok2 := m.childrenCPU()
	if !ok1 || !ok2 || !ok3 || ms.Total <= m.startMachine.Total {
		m.ok = false
		return
	}
	m.process = cpu - m.startCPU
	m.children = kids - m.startChildren
	m.busy = float64(ms.Busy-m.startMachine.Busy) / float64(ms.Total-m.startMachine.Total)
	m.span = float64(ms.Total - m.startMachine.Total)
	m.switches = ms.Switches - m.startMachine.Switches
}
