package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/pty"
)

// The open scenario (issue 13): how long a client waits from createTerminal until it
// sees the shell's first output, against spawning the same shell under a local
// pseudoterminal and reading its first byte. Two kinds of terminal take turns, one of
// each per round with their raw sides, so other work on the machine lands on all four
// alike:
//
//   - plain: a one-command terminal running `bash --norc --noprofile -i`, and the same
//     `SHELL -c 'exec bash …'` raw: what the host adds to a start (and, beside it,
//     `bash --norc --noprofile -i` spawned directly, the floor of any shell's start);
//   - integrated: a terminal with no command, the host's shell with termhost's
//     integration script injected, and the same shell started raw with the same
//     injection (integration.Inject): what the host adds, and what the script costs.
//
// The host side is timed as a client sees it: createTerminal sent, its answer, a
// subscribe, and the snapshot or the first terminal/data holding output.

func openSummary(s Sizes) string {
	return fmt.Sprintf("%d rounds of createTerminal until the shell's first output is seen, plain bash and the host's shell with its integration, against the same shells spawned raw under a pty", s.OpenRounds)
}

// openPlainArgv is the plain shell both sides run.
var openPlainArgv = []string{"--norc", "--noprofile", "-i"}

func runOpen(ctx context.Context, e *env, r *Result) error {
	if !e.pty {
		r.note("the host runs terminals on pipes: a shell there prints nothing until it is given something to run, so there is no first output to time")
		return nil
	}
	rounds := e.sizes.OpenRounds
	r.Params["rounds"] = rounds
	plainCmd := pty.QuoteArgv(append([]string{e.shell}, openPlainArgv...))
	r.Params["plain"] = plainCmd
	k, err := e.dialCtl(ctx, "open")
	if err != nil {
		return err
	}
	defer k.Close()
	var hostPlain, rawPlain, hostInt, rawInt, rawDirect []time.Duration
	for i := range rounds + 1 { // the first round warms both sides up and is not counted
		hp, err := e.hostOpen(ctx, k, fmt.Sprintf("open-plain-%d", i), e.shell, openPlainArgv)
		if err != nil {
			return fmt.Errorf("plain, round %d: %w", i, err)
		}
		rp, err := e.rawOpen(exec.Command(e.shell, "-c", "exec "+plainCmd))
		if err != nil {
			return fmt.Errorf("raw plain, round %d: %w", i, err)
		}
		hi, err := e.hostOpen(ctx, k, fmt.Sprintf("open-integrated-%d", i), "", nil)
		if err != nil {
			return fmt.Errorf("integrated, round %d: %w", i, err)
		}
		inj, ok, err := integration.Inject(e.shell, nil, integration.InjectOptions{Nonce: integration.NewNonce()})
		if err != nil || !ok {
			return fmt.Errorf("raw integrated: no integration for %s (%v)", e.shell, err)
		}
		cmd := exec.Command(e.shell, inj.Args...)
		cmd.Env = append(os.Environ(), inj.Env...)
		ri, err := e.rawOpen(cmd)
		if err != nil {
			return fmt.Errorf("raw integrated, round %d: %w", i, err)
		}
		rd, err := e.rawOpen(exec.Command(e.shell, openPlainArgv...))
		if err != nil {
			return fmt.Errorf("raw plain, round %d: %w", i, err)
		}
		if i > 0 {
			rawDirect = append(rawDirect, rd)
			hostPlain, rawPlain = append(hostPlain, hp), append(rawPlain, rp)
			hostInt, rawInt = append(hostInt, hi), append(rawInt, ri)
		}
	}
	add := func(name string, host, raw []time.Duration) {
		hm, rm := percentile(host, 0.5), percentile(raw, 0.5)
		f := r.add(Figure{Name: name + ", median", Value: hm.Seconds(), Unit: UnitSeconds}).withRaw(rm.Seconds())
		f.target("≤ raw + 1 ms", hm-rm <= time.Millisecond)
		r.add(Figure{Name: name + ", p90", Value: percentile(host, 0.9).Seconds(), Unit: UnitSeconds}).withRaw(percentile(raw, 0.9).Seconds())
		r.add(Figure{Name: name + ", host − raw, median", Value: (hm - rm).Seconds(), Unit: UnitSeconds})
	}
	add("open, plain bash", hostPlain, rawPlain)
	add("open, with integration", hostInt, rawInt)
	// The plain terminal is a one-command terminal, so it starts through `SHELL -c
	// exec …`: two starts of bash. The integration's cost is held against one.
	direct := percentile(rawDirect, 0.5)
	r.add(Figure{Name: "raw `bash --norc --noprofile -i`, median", Value: direct.Seconds(), Unit: UnitSeconds})
	r.add(Figure{Name: "the integration's cost, raw (integrated − bash --norc, medians)", Value: (percentile(rawInt, 0.5) - direct).Seconds(), Unit: UnitSeconds})
	r.add(Figure{Name: "the integration's cost, host (integrated − raw bash --norc, medians)", Value: (percentile(hostInt, 0.5) - direct).Seconds(), Unit: UnitSeconds})
	return nil
}

// hostOpen times one terminal's opening as a client sees it; a command opens a
// one-command terminal running it, "" the host's shell to sit in. The terminal is
// disposed after, untimed.
func (e *env) hostOpen(ctx context.Context, k *ctl, label, command string, args []string) (time.Duration, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	uri := e.uri(label, 0)
	w := k.watch(uri)
	defer k.unwatch(uri)
	p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": k.id}}
	if command != "" {
		p["_meta"] = map[string]any{"x-termhost": map[string]any{"command": command, "args": args}}
	}
	start := time.Now()
	if _, err := k.Request(wctx, "createTerminal", p); err != nil {
		return 0, fmt.Errorf("createTerminal %s: %w", uri, err)
	}
	defer func() {
		dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
		defer cancel()
		_ = k.dispose(dctx, uri)
	}()
	st, err := k.subscribe(wctx, uri)
	if err != nil {
		return 0, err
	}
	if st.Text() != "" {
		return time.Since(start), nil
	}
	for {
		env, err := nextEnvelope(wctx, k, w)
		if err != nil {
			return 0, fmt.Errorf("waiting for the first output: %w", err)
		}
		if envelopeData(env) != "" {
			return time.Since(start), nil
		}
	}
}

// rawOpen times cmd from its start under a pty to its first byte of output, then
// ends it.
func (e *env) rawOpen(cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	p, err := startRawCmd(true, cmd)
	if err != nil {
		return 0, err
	}
	defer func() { p.kill(); _ = p.close() }()
	buf := make([]byte, 4096)
	if _, err := p.read(buf); err != nil {
		return 0, fmt.Errorf("raw: no output: %w", err)
	}
	return time.Since(start), nil
}
