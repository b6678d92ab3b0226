package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/messages"
)

// The echo terminal runs cat with the terminal in raw mode, so each keystroke goes to
// cat at once and comes back because cat wrote it, not because the line discipline
// echoed it. On pipes there is no line discipline and cat echoes as it is.
const (
	echoCommandPty   = "stty raw -echo; echo ready; exec cat"
	echoCommandPipes = "echo ready; exec cat"
)

// echoWarmup keystrokes go first and are not timed.
const echoWarmup = 20

func echoSummary(s Sizes) string {
	return fmt.Sprintf("%d keystrokes, each sent as terminal/input to a terminal running cat and timed until it is back in terminal/data, against cat on a local pty (pipes when the host uses pipes)", s.EchoKeys)
}

func (e *env) echoCommand() string {
	if e.pty {
		return echoCommandPty
	}
	return echoCommandPipes
}

// keyFor is the i-th keystroke: letters in turn, so a late echo is never taken for
// the one awaited.
func keyFor(i int) byte { return 'a' + byte(i%26) }

func runEcho(ctx context.Context, e *env, r *Result) error {
	keys := e.sizes.EchoKeys
	r.Params["keystrokes"] = keys
	r.Params["command"] = e.echoCommand()

	rawCPU := meterCPU(os.Getpid()) // the raw loop is this process
	rawTimes, err := e.rawEcho(keys)
	if err != nil {
		return err
	}
	rawCPU.stop()
	hostTimes, pings, hostCPU, err := e.hostEcho(ctx, keys)
	if err != nil {
		return err
	}
	hm, hp := percentile(hostTimes, 0.5), percentile(hostTimes, 0.99)
	rm, rp := percentile(rawTimes, 0.5), percentile(rawTimes, 0.99)
	f := r.add(Figure{Name: "round trip, median", Value: hm.Seconds(), Unit: UnitSeconds}).withRaw(rm.Seconds())
	f.target("≤ 1.5 × raw", f.Ratio != nil && *f.Ratio <= 1.5)
	r.add(Figure{Name: "round trip, p99", Value: hp.Seconds(), Unit: UnitSeconds}).withRaw(rp.Seconds())
	r.add(Figure{Name: "round trip, max", Value: slices.Max(hostTimes).Seconds(), Unit: UnitSeconds}).withRaw(slices.Max(rawTimes).Seconds())
	// What the WebSocket and the connection cost with no terminal in the way: the
	// floor under the keystroke's round trip.
	r.add(Figure{Name: "ping round trip, median", Value: percentile(pings, 0.5).Seconds(), Unit: UnitSeconds})
	floor := percentile(pings, 0.5) + rm
	// A keystroke's round trip holds a WebSocket round trip and the raw one: this is
	// what the host adds beyond both.
	r.add(Figure{Name: "round trip ÷ (ping + raw), median", Value: hm.Seconds() / floor.Seconds(), Unit: UnitRatio})
	if hostCPU.ok && rawCPU.ok && !e.cfg.InProcess {
		// The host's run also answered the pings; they are cheap beside a keystroke.
		// Both loops' warm-up keystrokes ran inside their meters too.
		r.add(Figure{Name: "CPU per keystroke, host", Value: hostCPU.process / float64(keys+echoWarmup), Unit: UnitSeconds}).withRaw(rawCPU.process / float64(keys+echoWarmup))
	}
	e.noteShared(r)
	return nil
}

// hostEcho times keystrokes through a terminal on the host.
// The meter it returns covers the keystrokes alone, not the set-up or the pings.
func (e *env) hostEcho(ctx context.Context, keys int) (times, pings []time.Duration, keysCPU *cpuMeter, err error) {
	k, err := e.dialCtl(ctx, "echo")
	if err != nil {
		return nil, nil, nil, err
	}
	defer k.Close()
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	uri := e.uri("echo", 0)
	w := k.watch(uri)
	if err := k.create(wctx, uri, e.echoCommand()); err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
		defer cancel()
		_ = k.dispose(dctx, uri)
	}()
	st, err := k.subscribe(wctx, uri)
	if err != nil {
		return nil, nil, nil, err
	}
	// cat is running once "ready" is out (the snapshot, or data after it).
	seen := st.Text()
	for !strings.Contains(seen, "ready") {
		env, err := nextEnvelope(wctx, k, w)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("waiting for cat: %w (saw %q)", err, seen)
		}
		if d := envelopeData(env); d != "" {
			seen += d
		}
	}
	times = make([]time.Duration, 0, keys)
	keysCPU = meterCPU(e.pid)
	var sent atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("echo: %d of %d keystrokes", sent.Load(), keys+echoWarmup) })
	defer stop()
	for i := range keys + echoWarmup {
		sent.Store(int64(i))
		key := string(keyFor(i))
		start := time.Now()
		if err := k.input(wctx, uri, key); err != nil {
			return nil, nil, nil, err
		}
		for {
			env, err := nextEnvelope(wctx, k, w)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("keystroke %d: %w", i, err)
			}
			if env.RejectionReason != "" {
				return nil, nil, nil, fmt.Errorf("keystroke %d was refused: %s", i, env.RejectionReason)
			}
			if strings.Contains(envelopeData(env), key) {
				break
			}
		}
		if i >= echoWarmup {
			times = append(times, time.Since(start))
		}
	}
	keysCPU.stop()
	pings = make([]time.Duration, 0, keys)
	for range keys {
		start := time.Now()
		if _, err := k.Request(wctx, "ping", nil); err != nil {
			return nil, nil, nil, fmt.Errorf("ping: %w", err)
		}
		pings = append(pings, time.Since(start))
	}
	return times, pings, keysCPU, nil
}

// rawEcho times keystrokes through cat on a local pseudoterminal (or pipes).
func (e *env) rawEcho(keys int) ([]time.Duration, error) {
	p, err := startRaw(e.pty, e.shell, e.echoCommand())
	if err != nil {
		return nil, err
	}
	defer func() { p.kill(); _ = p.close() }()
	buf := make([]byte, 4096)
	if err := p.readUntil(buf, []byte("ready")); err != nil {
		return nil, err
	}
	times := make([]time.Duration, 0, keys)
	for i := range keys + echoWarmup {
		key := []byte{keyFor(i)}
		start := time.Now()
		if _, err := p.in.Write(key); err != nil {
			return nil, fmt.Errorf("raw: keystroke %d: %w", i, err)
		}
		if err := p.readUntil(buf, key); err != nil {
			return nil, err
		}
		if i >= echoWarmup {
			times = append(times, time.Since(start))
		}
	}
	return times, nil
}

func nextEnvelope(ctx context.Context, k *ctl, w *watch) (*clientEnvelope, error) {
	select {
	case env := <-w.ch:
		return env, nil
	case <-k.Done():
		return nil, fmt.Errorf("connection closed: %v", k.Err())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// envelopeData is a terminal/data envelope's text, "" for anything else.
func envelopeData(env *clientEnvelope) string {
	if env.Type != messages.TerminalData || env.RejectionReason != "" {
		return ""
	}
	a, err := env.Decode()
	if err != nil || a.Data == nil {
		return ""
	}
	return *a.Data
}

// percentile is the value at or below which a fraction q of the samples lie.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
