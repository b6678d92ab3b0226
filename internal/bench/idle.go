package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/internal/procstat"
	"github.com/termhost/termhost/messages"
)

// idleWorkers is how many terminals are opened, subscribed or disposed at once.
const idleWorkers = 8

// rawIdleShells bounds the raw floor's sample: its figure is a cost per shell, which a
// few hundred shells measure as well as a thousand, in a fraction of the time.
const rawIdleShells = 250

func idleSummary(s Sizes) string {
	return fmt.Sprintf("%d idle shells at their prompt: host memory per terminal, the time to list them and to subscribe to all of them", s.IdleTerminals)
}

func runIdle(ctx context.Context, e *env, r *report.Result) error {
	n := e.sizes.IdleTerminals
	r.Params["terminals"] = n

	// The raw floor: shells held on local ptys by this process, each with a
	// goroutine reading it into a 32 KiB buffer (as the host's reader does), and
	// reaped at the end. It runs first, and its memory is given back before the
	// host's turn.
	rawPer, rawErr := e.rawIdle(min(n, rawIdleShells))
	if rawErr != nil {
		r.Note("raw idle shells failed: %v", rawErr)
	}

	ctls, closeCtls, err := e.dialCtls(ctx, "idle", idleWorkers)
	defer closeCtls()
	if err != nil {
		return err
	}
	uris := make([]string, n)
	for i := range uris {
		uris[i] = e.uri("idle", i)
	}
	opened := make([]bool, n)
	// disposeOpened disposes every terminal opened and not yet disposed.
	disposeOpened := func(ctx context.Context) error {
		var left []int
		for i, ok := range opened {
			if ok {
				left = append(left, i)
			}
		}
		return e.parallel(ctx, ctls, len(left), "idle: disposing", func(ctx context.Context, k *wsclient.Control, j int) error {
			if err := k.Dispose(ctx, uris[left[j]]); err != nil {
				return err
			}
			opened[left[j]] = false
			return nil
		})
	}
	defer func() { _ = disposeOpened(context.WithoutCancel(ctx)) }()

	e.settleMemory()
	before, rssKnown := e.hostRSS()
	var heapBefore runtime.MemStats
	goroutinesBefore := runtime.NumGoroutine()
	if e.cfg.InProcess {
		runtime.ReadMemStats(&heapBefore)
	}
	start := time.Now()
	err = e.parallel(ctx, ctls, n, "idle: opening", func(ctx context.Context, k *wsclient.Control, i int) error {
		// createTerminal answers once the shell has printed its prompt.
		if err := k.Create(ctx, uris[i], ""); err != nil {
			return err
		}
		opened[i] = true
		return nil
	})
	if err != nil {
		return err
	}
	r.Add(report.Figure{Name: fmt.Sprintf("open %d (%d at a time)", n, idleWorkers), Value: time.Since(start).Seconds(), Unit: report.UnitSeconds})
	afterOpenUnsettled, _ := e.hostRSS()
	e.settleMemory()
	afterOpen, _ := e.hostRSS()
	if rssKnown {
		per := float64(afterOpen-before) / float64(n)
		f := r.Add(report.Figure{Name: "host memory per terminal (RSS delta / N)", Value: per, Unit: report.UnitBytes})
		switch {
		case rawErr != nil:
		case rawPer > 0:
			f.WithRaw(rawPer)
		default:
			r.Note("the raw shells' memory was below what RSS resolves with %d of them", min(n, rawIdleShells))
		}
		if per > 0 {
			f.Judge("≤ 256 KiB", per <= 256<<10)
		} else {
			// A few terminals can be within the noise of RSS (a GC, the scavenger).
			r.Note("the host's RSS did not grow measurably with %d terminals; open more for a memory figure", n)
		}
		if e.cfg.InProcess {
			r.Add(report.Figure{Name: "same, before a GC gives garbage back", Value: float64(afterOpenUnsettled-before) / float64(n), Unit: report.UnitBytes})
			var heap runtime.MemStats
			runtime.ReadMemStats(&heap)
			r.Add(report.Figure{Name: "Go heap in use per terminal", Value: (float64(heap.HeapInuse) - float64(heapBefore.HeapInuse)) / float64(n), Unit: report.UnitBytes})
			r.Add(report.Figure{Name: "goroutine stacks per terminal", Value: (float64(heap.StackInuse) - float64(heapBefore.StackInuse)) / float64(n), Unit: report.UnitBytes})
			r.Add(report.Figure{Name: "goroutines per terminal", Value: float64(runtime.NumGoroutine()-goroutinesBefore) / float64(n), Unit: report.UnitCount})
			r.Note("in-process host: RSS is this process's VmRSS after a GC that gives freed memory back; the shells are processes of their own and not in it")
		} else {
			r.Note("RSS is the host process's VmRSS, with no GC forced in it, so garbage counts too; the shells are processes of their own and not in it")
		}
	} else {
		r.Note("the host's memory is unknown (a remote host: pass --host-pid)")
	}

	// List: one new connection's initialize with the root snapshot.
	lctx, cancel := e.waitCtx(ctx)
	defer cancel()
	u, err := e.target.DialURL()
	if err != nil {
		return err
	}
	lister, err := client.Dial(lctx, u, nil)
	if err != nil {
		return err
	}
	defer lister.Close()
	go func() {
		// Nobody reads this connection's actions; keep its queue moving.
		for range lister.Notifications {
		}
	}()
	start = time.Now()
	res, err := lister.Initialize(lctx, "bench-idle-list-"+e.run, messages.RootURI)
	listTime := time.Since(start)
	if err != nil {
		return fmt.Errorf("initialize with the root: %w", err)
	}
	listed, ours := countTerminals(res.Snapshots, "ahp-terminal:/bench-"+e.run+"-idle-")
	r.Add(report.Figure{Name: fmt.Sprintf("list: initialize with the root (%d terminals)", listed), Value: listTime.Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "initialize answer size", Value: float64(len(res.Raw)), Unit: report.UnitBytes})
	if ours != n {
		r.Note("the root list showed %d of this run's %d terminals", ours, n)
	}

	// Subscribe to every one of them on that one connection, several requests at a
	// time, as a client restoring its tabs would.
	const inFlight = 32
	start = time.Now()
	err = e.parallel(ctx, make([]*wsclient.Control, inFlight), n, "idle: subscribing", func(ctx context.Context, _ *wsclient.Control, i int) error {
		_, err := lister.Subscribe(ctx, uris[i])
		return err
	})
	if err != nil {
		return err
	}
	r.Add(report.Figure{Name: fmt.Sprintf("subscribe to all %d (%d at a time, one connection)", n, inFlight), Value: time.Since(start).Seconds(), Unit: report.UnitSeconds})
	if rssKnown {
		e.settleMemory()
		afterSub, _ := e.hostRSS()
		r.Add(report.Figure{Name: "host memory per subscription", Value: float64(afterSub-afterOpen) / float64(n), Unit: report.UnitBytes})
	}

	start = time.Now()
	if err := disposeOpened(ctx); err != nil {
		return err
	}
	r.Add(report.Figure{Name: fmt.Sprintf("dispose all %d", n), Value: time.Since(start).Seconds(), Unit: report.UnitSeconds})
	if !rssKnown {
		return nil
	}
	// What is left once every shell has been reaped is what the host failed to
	// give back. Disposal is answered before the reaping, so wait for the children.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if kids, ok := procstat.Children(e.pid); !ok || len(kids) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond) // no event says another process was reaped
	}
	e.settleMemory()
	afterDispose, _ := e.hostRSS()
	r.Add(report.Figure{Name: "host memory per terminal left after disposing all", Value: float64(afterDispose-before) / float64(n), Unit: report.UnitBytes})
	if e.cfg.InProcess {
		var heap runtime.MemStats
		runtime.ReadMemStats(&heap)
		r.Add(report.Figure{Name: "Go heap in use per terminal left after disposing all", Value: (float64(heap.HeapInuse) - float64(heapBefore.HeapInuse)) / float64(n), Unit: report.UnitBytes})
		r.Add(report.Figure{Name: "goroutines per terminal left after disposing all", Value: float64(runtime.NumGoroutine()-goroutinesBefore) / float64(n), Unit: report.UnitCount})
	}
	return nil
}

// countTerminals counts the rows of the root snapshot, and those whose URI has prefix.
func countTerminals(snaps []client.RawSnapshot, prefix string) (all, ours int) {
	for _, s := range snaps {
		if s.Resource != messages.RootURI {
			continue
		}
		var root struct {
			Terminals []struct {
				Resource string `json:"resource"`
			} `json:"terminals"`
		}
		if json.Unmarshal(s.State, &root) != nil {
			continue
		}
		for _, t := range root.Terminals {
			all++
			if strings.HasPrefix(t.Resource, prefix) {
				ours++
			}
		}
	}
	return all, ours
}

// parallel runs do for 0..n-1 spread over the control connections, one at a time on
// each, and stops at the first error.
func (e *env) parallel(ctx context.Context, ctls []*wsclient.Control, n int, label string, do func(ctx context.Context, k *wsclient.Control, i int) error) error {
	var next, done atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("%s: %d of %d", label, done.Load(), n) })
	defer stop()
	// The first error cancels ctx, which stops the other connections' work.
	g, ctx := errgroup.WithContext(ctx)
	for _, k := range ctls {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return nil
				}
				wctx, wcancel := e.waitCtx(ctx)
				err := do(wctx, k, i)
				wcancel()
				if err != nil {
					return err
				}
				done.Add(1)
			}
		})
	}
	return g.Wait()
}

// rawIdle holds n shells on local ptys (or pipes) the way a minimal host must: each
// with a goroutine reading it into a 32 KiB buffer, as the host's reader does, and
// reaped at the end. It returns this process's RSS growth per shell.
func (e *env) rawIdle(n int) (float64, error) {
	e.settleMemory()
	before, ok := procstat.RSSBytes(os.Getpid())
	procs := make([]*raw.Proc, n)
	var readers sync.WaitGroup
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.Kill()
			}
		}
		readers.Wait()
		for _, p := range procs {
			if p != nil {
				_ = p.Close()
			}
		}
	}()
	var next, started atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("idle: raw shells: %d of %d", started.Load(), n) })
	defer stop()
	var g errgroup.Group
	for range idleWorkers {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return nil
				}
				p, err := raw.Start(e.pty, e.shell, "")
				if err != nil {
					return err
				}
				procs[i] = p
				first := make(chan struct{})
				readers.Add(1)
				go func() {
					defer readers.Done()
					buf := make([]byte, 32<<10)
					for said := false; ; said = true {
						_, err := p.Read(buf)
						if !said {
							close(first)
						}
						if err != nil {
							return
						}
					}
				}()
				if e.pty {
					// Counted like the host's: once the shell is at its prompt.
					select {
					case <-first:
					case <-time.After(e.cfg.WaitTimeout):
						return fmt.Errorf("raw: a shell printed no prompt within %v", e.cfg.WaitTimeout)
					}
				}
				started.Add(1)
			}
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if !ok {
		return 0, nil
	}
	e.settleMemory()
	after, _ := procstat.RSSBytes(os.Getpid())
	return float64(after-before) / float64(n), nil
}
