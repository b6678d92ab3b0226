package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
)

func throughputSummary(s Sizes) string {
	return fmt.Sprintf("head -c %s /dev/zero | base64 -w 100 through one terminal to 1 subscriber, against the same command read straight from a local pty (pipes when the host uses pipes)", mb(s.ThroughputBytes))
}

func runThroughput(ctx context.Context, e *env, r *report.Result) error {
	n := e.sizes.ThroughputBytes
	r.Params["bytes"] = n
	r.Params["command"] = floodScript(n)
	k, err := e.dialCtl(ctx, "throughput")
	if err != nil {
		return err
	}
	defer k.Close()
	m, err := e.meteredFlood(ctx, k, "throughput", n)
	if err != nil {
		return err
	}
	raw, rawCPU, hostCPU, run := &m.raw, m.rawCPU, m.hostCPU, m.run
	s := run.subs[0]
	f := r.Add(report.Figure{Name: "throughput, 1 subscriber", Value: s.rate(), Unit: report.UnitBytesPerSecond}).WithRaw(raw.rate())
	f.Judge("≥ 0.90 × raw", f.Ratio != nil && *f.Ratio >= 0.9)
	r.Add(report.Figure{Name: "output received", Value: float64(s.end.Bytes), Unit: report.UnitBytes}).WithRaw(float64(raw.bytes))
	if s.end.Frames > 0 {
		// How much output each frame carried: the host's coalescing at work.
		r.Add(report.Figure{Name: "mean terminal/data per frame", Value: float64(s.end.Bytes) / float64(s.end.Frames), Unit: report.UnitBytes})
	}
	// What limits the ratio: the CPU the host spends per byte beside the raw reader's,
	// and how busy the machine was in each run (the flood's writer and the kernel's
	// pty work share the same CPUs).
	if mb := float64(s.end.Bytes) / 1e6; mb > 0 && hostCPU.ok && rawCPU.ok {
		who := "host"
		if e.cfg.InProcess {
			who = "host and subscriber"
		}
		r.Add(report.Figure{Name: "CPU per MB, " + who, Value: hostCPU.process / mb, Unit: report.UnitSeconds}).WithRaw(rawCPU.process / (float64(raw.total) / 1e6))
		r.Add(report.Figure{Name: "machine CPUs busy", Value: hostCPU.busy, Unit: report.UnitRatio}).WithRaw(rawCPU.busy)
		r.Add(report.Figure{Name: "context switches per MB, machine", Value: float64(hostCPU.switches) / mb, Unit: report.UnitCount}).WithRaw(float64(rawCPU.switches) / (float64(raw.total) / 1e6))
	}
	if !s.complete(run.expected) {
		r.Note("the subscriber did not see the whole flood: %s", describeEnd(s.end))
	}
	e.noteShared(r)
	return nil
}

// meteredFlood is one flood of n bytes through the host between two raw ones, with
// the CPU of the first raw reader (this process) and of the host metered.
type meteredFlood struct {
	raw             rawFloods
	rawCPU, hostCPU *cpuMeter
	run             *floodRun
}

func (e *env) meteredFlood(ctx context.Context, k *wsclient.Control, label string, n int64) (*meteredFlood, error) {
	m := &meteredFlood{rawCPU: meterCPU(os.Getpid())}
	if err := m.raw.measure(e, n); err != nil {
		return nil, err
	}
	m.rawCPU.stop()
	m.hostCPU = meterCPU(e.pid)
	run, err := e.flood(ctx, k, label, 0, n, 1, nil)
	if err != nil {
		return nil, err
	}
	m.hostCPU.stop()
	m.run = run
	// The raw side is metered on both sides of the host's flood, as its rate is: a
	// raw reader's CPU per MB moves with how the machine schedules it (a reader
	// that waits finds more in the pty per read), so one flood before the host's
	// let a drift of the load count as the host's (issue 13, the busy flood's CPU
	// per MB ran 0.6 to 1.9 × in five runs).
	after := meterCPU(os.Getpid())
	if err := m.raw.measure(e, n); err != nil {
		return nil, err
	}
	after.stop()
	m.rawCPU.add(after)
	return m, nil
}

func fanoutSummary(s Sizes) string {
	counts := make([]string, len(s.FanoutSubscribers))
	for i, c := range s.FanoutSubscribers {
		counts[i] = fmt.Sprint(c)
	}
	return fmt.Sprintf("the %s flood to %s subscribers (separate connections) on one terminal, %d floods each (the median's figures)", mb(s.FanoutBytes), strings.Join(counts, ", "), fanoutRounds)
}

func runFanout(ctx context.Context, e *env, r *report.Result) error {
	n := e.sizes.FanoutBytes
	r.Params["bytes"] = n
	r.Params["subscribers"] = e.sizes.FanoutSubscribers
	k, err := e.dialCtl(ctx, "fanout")
	if err != nil {
		return err
	}
	defer k.Close()
	var raw rawFloods
	if err := raw.measure(e, n); err != nil {
		return err
	}
	perSub := map[int]float64{}
	for i, count := range e.sizes.FanoutSubscribers {
		// Each count floods fanoutRounds times, and its figures are the median
		// round's: a single flood on this kind of machine ranges from 0.65 to 1.12 of
		// raw within one series, and the one-subscriber flood is every ratio's
		// denominator. The rounds of one count run back to back, so none of them
		// follows a wider fanout except the first (the host carries one subscriber
		// more slowly for a moment after letting 50 go).
		rounds := make([]fanoutRound, 0, fanoutRounds)
		for round := range fanoutRounds {
			run, err := e.flood(ctx, k, "fanout", i*fanoutRounds+round, n, count, nil)
			if err != nil {
				return fmt.Errorf("%d subscribers: %w", count, err)
			}
			rounds = append(rounds, fanoutRoundOf(run))
		}
		slices.SortFunc(rounds, func(a, b fanoutRound) int { return cmp.Compare(a.mean, b.mean) })
		mid := rounds[len(rounds)/2]
		perSub[count] = mid.mean
		r.Add(report.Figure{Name: fmt.Sprintf("per subscriber, %d subscriber(s)", count), Value: mid.mean, Unit: report.UnitBytesPerSecond}).WithRaw(raw.rate())
		if count > 1 {
			r.Add(report.Figure{Name: fmt.Sprintf("slowest subscriber, %d subscribers", count), Value: mid.worst, Unit: report.UnitBytesPerSecond})
			r.Add(report.Figure{Name: fmt.Sprintf("all subscribers together, %d", count), Value: mid.together, Unit: report.UnitBytesPerSecond})
		}
		means := make([]string, len(rounds))
		for j, rd := range rounds {
			means[j] = fmt.Sprintf("%.3g", rd.mean)
		}
		r.Note("%d subscriber(s): per subscriber in each of %d floods, B/s, sorted: %s (the figures are the median flood's)", count, len(rounds), strings.Join(means, ", "))
		for _, rd := range rounds {
			if rd.note != "" {
				r.Note("%d subscribers: %s", count, rd.note)
			}
		}
	}
	if one, ok := perSub[1]; ok && one > 0 {
		for _, count := range e.sizes.FanoutSubscribers {
			if count == 1 {
				continue
			}
			f := r.Add(report.Figure{Name: fmt.Sprintf("%d ÷ 1 subscriber, per subscriber", count), Value: perSub[count] / one, Unit: report.UnitRatio})
			switch count {
			case 10:
				f.Judge("≥ 0.80", f.Value >= 0.8)
			case 50:
				f.Judge("≥ 0.60", f.Value >= 0.6)
			}
		}
	}
	e.noteShared(r)
	return nil
}

// fanoutRounds is how many floods each subscriber count of the fanout scenario makes.
const fanoutRounds = 3

// fanoutRound is what one fanout flood measured.
type fanoutRound struct {
	mean, worst, together float64 // per subscriber, the slowest, all together (B/s)
	note                  string  // subscribers that did not see the whole flood, and why
}

// fanoutRoundOf sums up a fanout flood: per-subscriber figures count only the
// subscribers that saw the whole flood.
func fanoutRoundOf(run *floodRun) fanoutRound {
	done := run.completed()
	var rd fanoutRound
	var sum, longest float64
	var total int64
	for j, s := range done {
		sum += s.rate()
		if j == 0 || s.rate() < rd.worst {
			rd.worst = s.rate()
		}
	}
	for _, s := range run.subs {
		total += s.end.Bytes
		longest = max(longest, s.secs)
	}
	if len(done) > 0 {
		rd.mean = sum / float64(len(done))
	}
	if longest > 0 {
		rd.together = float64(total) / longest
	}
	if len(done) < len(run.subs) {
		var why []string
		for reason, c := range run.closedBy() {
			why = append(why, fmt.Sprintf("%d %s", c, reason))
		}
		sort.Strings(why)
		rd.note = fmt.Sprintf("%d saw the whole flood; %s (per-subscriber figures count only those that saw it all)", len(done), strings.Join(why, "; "))
	}
	return rd
}

func slowSummary(s Sizes) string {
	return fmt.Sprintf("a %s flood read by one connection, alone and then beside one that subscribed and never reads", mb(s.SlowBytes))
}

func runSlow(ctx context.Context, e *env, r *report.Result) error {
	n := e.sizes.SlowBytes
	r.Params["bytes"] = n
	k, err := e.dialCtl(ctx, "slow")
	if err != nil {
		return err
	}
	defer k.Close()
	var raw rawFloods
	if err := raw.measure(e, n); err != nil {
		return err
	}

	e.settleMemory()
	base, _ := e.hostRSS()
	sampler := e.sampleRSS()
	alone, err := e.flood(ctx, k, "slow-alone", 0, n, 1, nil)
	peakAlone := sampler.stop()
	if err != nil {
		return err
	}

	e.settleMemory()
	var slow *wsclient.Counter
	defer func() {
		if slow != nil {
			slow.Close()
		}
	}()
	sampler = e.sampleRSS()
	beside, err := e.flood(ctx, k, "slow-beside", 1, n, 1, func(ctx context.Context, uri string) error {
		// Subscribed, answered, and never read again until the flood is over.
		s, err := wsclient.DialCounter(ctx, e.target, "bench-slow-reader", uri)
		slow = s
		return err
	})
	peakBeside := sampler.stop()
	if err != nil {
		return err
	}

	a, b := alone.subs[0], beside.subs[0]
	r.Add(report.Figure{Name: "reader alone", Value: a.rate(), Unit: report.UnitBytesPerSecond}).WithRaw(raw.rate())
	f := r.Add(report.Figure{Name: "reader beside a slow one", Value: b.rate(), Unit: report.UnitBytesPerSecond})
	if a.rate() > 0 {
		f.WithRatio(b.rate() / a.rate())
		f.Judge("≥ 0.90 × alone", b.rate() >= 0.9*a.rate())
	}
	for _, s := range []subResult{a, b} {
		if !s.complete(alone.expected) {
			r.Note("a reader did not see the whole flood: %s", describeEnd(s.end))
		}
	}
	if peakBeside > 0 {
		r.Add(report.Figure{Name: "host peak RSS beside a slow one", Value: float64(peakBeside), Unit: report.UnitBytes}).
			Judge("< 256 MiB", peakBeside < 256<<20)
		r.Add(report.Figure{Name: "host peak RSS, reader alone", Value: float64(peakAlone), Unit: report.UnitBytes})
		if base > 0 {
			r.Add(report.Figure{Name: "host RSS before the floods", Value: float64(base), Unit: report.UnitBytes})
		}
	} else {
		r.Note("the host's RSS is unknown (a remote host: pass --host-pid)")
	}

	// The flood is over: read what the slow connection was sent, up to how it ended.
	if slow != nil {
		dctx, cancel := e.waitCtx(ctx)
		end := slow.Drain(dctx, nil)
		cancel()
		r.Add(report.Figure{Name: "bytes the slow one received", Value: float64(end.Bytes), Unit: report.UnitBytes})
		switch {
		case end.Exited:
			r.Note("the slow connection was not closed: it had all %s queued for it and read it late", mb(end.Bytes))
		case end.CloseCode >= 0:
			r.Note("the slow connection was closed by the host: status %d, reason %q", end.CloseCode, end.CloseReason)
		default:
			r.Note("the slow connection was closed without a close frame (no reason reached it): %v", end.Err)
		}
		r.Params["slowClosed"] = !end.Exited
		r.Params["slowCloseCode"] = end.CloseCode
		r.Params["slowCloseReason"] = end.CloseReason
	}
	e.noteShared(r)
	return nil
}

// noteShared says, for an in-process host, that the bench's clients share its CPUs.
func (e *env) noteShared(r *report.Result) {
	if e.cfg.InProcess {
		r.Note("in-process host: the subscribers' reading and the host share this process's %d CPUs", e.machineCPUs())
	}
}

func mb(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.4g MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.4g kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
