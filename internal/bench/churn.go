package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/procstat"
)

func churnSummary(s Sizes) string {
	return fmt.Sprintf("createTerminal → run `true` → terminal/exited → disposeTerminal with %v concurrent clients (%d cycles with the most, %d with the others), against spawning `SHELL -c true` on a local pty; then the host's zombies, descriptors and goroutines", s.ChurnClients, s.ChurnCycles, rateCycles(s.ChurnCycles))
}

// rateCycles is how many cycles a run that only measures a rate does.
func rateCycles(cycles int) int {
	return max(cycles/4, min(cycles, 100))
}

func runChurn(ctx context.Context, e *env, r *report.Result) error {
	cycles := e.sizes.ChurnCycles
	r.Params["cycles"] = cycles
	r.Params["clients"] = e.sizes.ChurnClients
	r.Params["rawCommand"] = e.shell + " -c true"

	// The raw spawn rate, with as many goroutines as the host runs clients.
	rawRates := map[int]float64{}
	for _, clients := range e.sizes.ChurnClients {
		rate, err := e.rawChurn(rateCycles(cycles), clients)
		if err != nil {
			return err
		}
		rawRates[clients] = rate
	}

	// The connections are opened before the "before" counts and closed after the
	// "after" ones, so what they hold is in both.
	most := slices.Max(e.sizes.ChurnClients)
	ctls, closeCtls, err := e.dialCtls(ctx, "churn", most)
	defer closeCtls()
	if err != nil {
		return err
	}
	// One cycle first, so what the host creates once (a first actor, a first pty)
	// is not counted as growth.
	if err := e.churnCycle(ctx, ctls[0], e.uri("churn-warm", 0)); err != nil {
		return err
	}
	fdsBefore, fdsKnown := procstat.Descriptors(e.pid)
	goroutinesBefore := runtime.NumGoroutine()
	threadsBefore, threadsKnown := procstat.Threads(e.pid)

	// The run with the most clients goes last and does every cycle, so the counts
	// after it follow the most work.
	order := slices.Clone(e.sizes.ChurnClients)
	slices.Sort(order)
	order = slices.Compact(order)
	for run, clients := range order {
		n := rateCycles(cycles)
		if clients == most {
			n = cycles
		}
		rate, err := e.hostChurn(ctx, ctls[:clients], n, run)
		if err != nil {
			return fmt.Errorf("%d clients: %w", clients, err)
		}
		f := r.Add(report.Figure{Name: fmt.Sprintf("cycles per second, %d client(s), %d cycles", clients, n), Value: rate, Unit: report.UnitPerSecond}).WithRaw(rawRates[clients])
		if clients == 8 {
			f.Judge("≥ 0.50 × raw", f.Ratio != nil && *f.Ratio >= 0.5)
		}
	}

	if e.pid == 0 {
		r.Note("the host's children, descriptors and goroutines are unknown (a remote host: pass --host-pid)")
		return nil
	}
	// Right after the last dispose is answered, some children may not be reaped yet:
	// that is a count, not a leak. What is left after a settling moment is.
	kids, _ := procstat.Children(e.pid)
	r.Add(report.Figure{Name: "zombies right after the last cycle", Value: float64(procstat.Zombies(kids)), Unit: report.UnitCount})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		kids, _ = procstat.Children(e.pid)
		fds, _ := procstat.Descriptors(e.pid)
		if len(kids) == 0 && (!fdsKnown || fds <= fdsBefore) && (!e.cfg.InProcess || runtime.NumGoroutine() <= goroutinesBefore) {
			break
		}
		time.Sleep(50 * time.Millisecond) // no event says another process was reaped
	}
	kids, _ = procstat.Children(e.pid)
	r.Add(report.Figure{Name: "zombies after settling (≤ 10 s)", Value: float64(procstat.Zombies(kids)), Unit: report.UnitCount}).Judge("0", procstat.Zombies(kids) == 0)
	r.Add(report.Figure{Name: "children left after settling", Value: float64(len(kids)), Unit: report.UnitCount})
	if fdsKnown {
		fds, _ := procstat.Descriptors(e.pid)
		r.Add(report.Figure{Name: "descriptor delta", Value: float64(fds - fdsBefore), Unit: report.UnitCount}).Judge("0", fds <= fdsBefore)
	}
	if e.cfg.InProcess {
		g := runtime.NumGoroutine() - goroutinesBefore
		r.Add(report.Figure{Name: "goroutine delta", Value: float64(g), Unit: report.UnitCount}).Judge("0", g <= 0)
	} else if threadsKnown {
		// Goroutines of another process are out of sight; its threads are not. The
		// runtime keeps threads it made for a burst, so a delta is a hint, not a leak.
		th, _ := procstat.Threads(e.pid)
		r.Add(report.Figure{Name: "thread delta", Value: float64(th - threadsBefore), Unit: report.UnitCount})
		r.Note("goroutines are counted only with the host in this process (--host inprocess)")
	}
	return nil
}

// hostChurn runs cycles through the host, spread over the clients, and returns cycles
// per second.
func (e *env) hostChurn(ctx context.Context, ctls []*wsclient.Control, cycles, run int) (float64, error) {
	var next, done atomic.Int64
	stop := e.prog.every(func() string {
		return fmt.Sprintf("churn: %d clients, %d of %d cycles", len(ctls), done.Load(), cycles)
	})
	defer stop()
	// The first error cancels ctx, which stops the other clients' cycles.
	g, ctx := errgroup.WithContext(ctx)
	start := time.Now()
	for _, k := range ctls {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= cycles || ctx.Err() != nil {
					return nil
				}
				if err := e.churnCycle(ctx, k, e.uri(fmt.Sprintf("churn%d", run), i)); err != nil {
					return err
				}
				done.Add(1)
			}
		})
	}
	err := g.Wait()
	secs := time.Since(start).Seconds()
	if err != nil {
		return 0, err
	}
	return float64(cycles) / secs, nil
}

// churnCycle is one create → run `true` → exited → dispose.
func (e *env) churnCycle(ctx context.Context, k *wsclient.Control, uri string) error {
	ctx, cancel := e.waitCtx(ctx)
	defer cancel()
	w := k.Watch(uri)
	defer k.Unwatch(uri)
	if err := k.Create(ctx, uri, "true"); err != nil {
		return err
	}
	st, err := k.SubscribeTerminal(ctx, uri)
	if err != nil {
		return err
	}
	if err := k.WaitExited(ctx, w, st); err != nil {
		return fmt.Errorf("%s: %w", uri, err)
	}
	return k.Dispose(ctx, uri)
}

// rawChurn spawns `shell -c true` on a pty (or pipes) from workers goroutines, reading
// each to its end and reaping it, and returns spawns per second.
func (e *env) rawChurn(cycles, workers int) (float64, error) {
	var next atomic.Int64
	var g errgroup.Group
	start := time.Now()
	for range workers {
		g.Go(func() error {
			buf := make([]byte, 4096)
			for next.Add(1) <= int64(cycles) {
				p, err := raw.Start(e.pty, e.shell, "true")
				if err != nil {
					return err
				}
				_, err = p.Drain(buf)
				if cerr := p.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	secs := time.Since(start).Seconds()
	if err != nil {
		return 0, err
	}
	return float64(cycles) / secs, nil
}
