package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/messages"
)

// The sessions scenario: long-lived agent sessions, each a client sending `!echo x`
// turns back to back, timed from the chat/turnStarted it dispatches to the
// chat/turnComplete it is sent. A `!` turn starts a shell of the host's own at its
// prompt, types the command, reads its end mark and keeps the turn, so its raw
// counterparts are a shell spawned under a pty for `echo x` (SHELL -c 'echo x', the
// issue's baseline) and an interactive shell spawned under a pty, given `echo x` and
// exit as typed input and read to its end (what a `!` turn does, minus the host).
// Both sides make one untimed turn (or spawn) each before the timed run: a chat's
// first turn does what a chat does once, and shows as its own figure.

// sessionsCommand is the command every turn runs.
const sessionsCommand = "echo x"

func sessionsSummary(s Sizes) string {
	long := ""
	if s.SessionsLong > 0 {
		long = fmt.Sprintf(", and 1 session for %v", s.SessionsLong)
	}
	return fmt.Sprintf("`!%s` turns back to back, one client per session (turnStarted sent → chat/turnComplete seen): %v session(s) for %v each%s; "+
		"against `SHELL -c '%s'` and `SHELL -i` given `%s` and exit, spawned on a local pty from as many goroutines",
		sessionsCommand, s.SessionCounts, s.SessionsShort, long, sessionsCommand, sessionsCommand)
}

// turnRun is what one run of turns measured.
type turnRun struct {
	turns   int
	elapsed time.Duration
	// latencies are the turns' times, in the order they ended: with one session,
	// the order of its chat.
	latencies []time.Duration
	// first are the sessions' first turns, all at once and untimed by the run:
	// each chat's first, and what it does once (host), or each worker's first spawn
	// (raw).
	first []time.Duration
	// failed counts turns whose command did not run (its call failed).
	failed int
	// cpu measured the run: the host's process (or, raw, this one) and the machine.
	cpu *cpuMeter
	// clients measured this process, the turns' clients, when the host is another.
	clients *cpuMeter
}

// machineCPUPerTurn is the CPU time the whole machine spent per turn (or raw shell).
func (t turnRun) machineCPUPerTurn() (float64, bool) {
	if t.cpu == nil || !t.cpu.ok || t.turns == 0 {
		return 0, false
	}
	return t.cpu.busy * float64(runtime.NumCPU()) * t.elapsed.Seconds() / float64(t.turns), true
}

func (t turnRun) rate() float64 { return float64(t.turns) / t.elapsed.Seconds() }

func runSessions(ctx context.Context, e *env, r *report.Result) error {
	sz := e.sizes
	r.Params["sessions"] = sz.SessionCounts
	r.Params["seconds"] = sz.SessionsShort.Seconds()
	r.Params["longSeconds"] = sz.SessionsLong.Seconds()
	r.Params["command"] = "!" + sessionsCommand
	r.Params["rawCommand"] = e.shell + " -c '" + sessionsCommand + "'"

	counts := slices.Clone(sz.SessionCounts)
	slices.Sort(counts)
	counts = slices.Compact(counts)
	type row struct {
		sessions int
		long     bool
	}
	var rows []row
	for _, n := range counts {
		rows = append(rows, row{n, false})
		if n == 1 && sz.SessionsLong > 0 {
			rows = append(rows, row{1, true})
		}
	}
	raws := map[int][2]turnRun{} // per worker count: raw spawn, raw interactive
	for i, rw := range rows {
		d := sz.SessionsShort
		if rw.long {
			d = sz.SessionsLong
		}
		raw, ok := raws[rw.sessions]
		if !ok {
			// The raw sides run for the short time only: a spawn does not get slower
			// with the spawns before it.
			spawn, err := e.rawTurns(ctx, rw.sessions, sz.SessionsShort, false)
			if err != nil {
				return err
			}
			interactive, err := e.rawTurns(ctx, rw.sessions, sz.SessionsShort, true)
			if err != nil {
				return err
			}
			raw = [2]turnRun{spawn, interactive}
			raws[rw.sessions] = raw
		}
		host, err := e.hostTurns(ctx, rw.sessions, d, i)
		if err != nil {
			return fmt.Errorf("%d session(s), %v: %w", rw.sessions, d, err)
		}
		label := fmt.Sprintf("%d session(s), %v, %d turns", rw.sessions, d, host.turns)
		f := r.Add(report.Figure{Name: "turns per second, " + label, Value: host.rate(), Unit: report.UnitPerSecond}).WithRaw(raw[0].rate())
		if rw.sessions > 1 && rw.sessions == counts[len(counts)-1] {
			// The most sessions at once (50 by default) against as many raw spawners.
			f.Judge("≥ 0.50 × raw spawns", f.Ratio != nil && *f.Ratio >= 0.5)
		}
		p50, p99 := percentile(host.latencies, 0.5), percentile(host.latencies, 0.99)
		r.Add(report.Figure{Name: "turn p50, " + label, Value: p50.Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw[0].latencies, 0.5).Seconds())
		r.Add(report.Figure{Name: "turn p99, " + label, Value: p99.Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw[0].latencies, 0.99).Seconds())
		// The first turns, untimed by the run: a fresh chat's first, with as many
		// sessions making theirs at once, against a first interactive shell each.
		if !rw.long {
			r.Add(report.Figure{Name: fmt.Sprintf("first turn p50, %d fresh session(s) at once", rw.sessions), Value: percentile(host.first, 0.5).Seconds(), Unit: report.UnitSeconds}).
				WithRaw(percentile(raw[1].first, 0.5).Seconds())
		}
		ip50 := percentile(raw[1].latencies, 0.5)
		g := r.Add(report.Figure{Name: "turn p50 vs interactive shell, " + label, Value: p50.Seconds(), Unit: report.UnitSeconds}).WithRaw(ip50.Seconds())
		if rw.sessions == 1 && !rw.long {
			g.Judge("≤ raw + 2 ms", p50 <= ip50+2*time.Millisecond)
		}
		if rw.long {
			// The same chat at its end and at its start: a turn should cost the same.
			tenth := max(len(host.latencies)/10, 1)
			early := percentile(host.latencies[:tenth], 0.5)
			late := percentile(host.latencies[len(host.latencies)-tenth:], 0.5)
			r.Add(report.Figure{Name: fmt.Sprintf("turn p50, the chat's first %d turns", tenth), Value: early.Seconds(), Unit: report.UnitSeconds})
			r.Add(report.Figure{Name: fmt.Sprintf("turn p50, the chat's last %d turns", tenth), Value: late.Seconds(), Unit: report.UnitSeconds})
			ratio := late.Seconds() / early.Seconds()
			r.Add(report.Figure{Name: "turn p50, last ÷ first", Value: ratio, Unit: report.UnitRatio}).Judge("≤ 1.10", ratio <= 1.1)
		}
		// Where the CPU goes: the host's own process, and the machine (its shells,
		// and the bench's clients) per turn, against the machine per raw
		// interactive shell.
		if host.cpu != nil && host.cpu.ok && !e.cfg.InProcess {
			r.Add(report.Figure{Name: "host process CPU per turn, " + label, Value: host.cpu.process / float64(host.turns), Unit: report.UnitSeconds})
			// The shells the host started (the turns', spares, the ones retired),
			// against the interactive shells the raw side spawned, each per turn.
			f := r.Add(report.Figure{Name: "host's shells' CPU per turn, " + label, Value: host.cpu.children / float64(host.turns), Unit: report.UnitSeconds})
			if rc := raw[1].cpu; rc != nil && rc.ok && raw[1].turns > 0 {
				f.WithRaw(rc.children / float64(raw[1].turns))
			}
		}
		if cl := host.clients; cl != nil && cl.ok {
			r.Add(report.Figure{Name: "the bench's clients' CPU per turn, " + label, Value: cl.process / float64(host.turns), Unit: report.UnitSeconds})
		}
		if m, ok := host.machineCPUPerTurn(); ok {
			f := r.Add(report.Figure{Name: "machine CPU per turn, " + label, Value: m, Unit: report.UnitSeconds})
			if rm, ok := raw[1].machineCPUPerTurn(); ok {
				f.WithRaw(rm)
			}
		}
		if host.failed > 0 {
			r.Note("%s: %d turns' commands failed to run", label, host.failed)
		}
	}
	for _, n := range counts {
		raw := raws[n]
		r.Add(report.Figure{Name: fmt.Sprintf("raw interactive shells per second, %d goroutine(s)", n), Value: raw[1].rate(), Unit: report.UnitPerSecond}).WithRaw(raw[0].rate())
	}
	r.Note("raw figures beside a turn are `%s -c '%s'` spawned under a pty by as many goroutines as there are sessions; 'vs interactive shell' compares with `%s -i` given `%s` and exit as typed input, read to its end",
		e.shell, sessionsCommand, e.shell, sessionsCommand)
	e.noteShared(r)
	return nil
}

// hostTurns runs `!echo x` turns back to back in n sessions at once, one client each,
// for d, and measures each turn.
func (e *env) hostTurns(ctx context.Context, n int, d time.Duration, run int) (turnRun, error) {
	label := fmt.Sprintf("sessions%d", run)
	ctls, closeCtls, err := e.dialCtls(ctx, label, n)
	defer closeCtls()
	if err != nil {
		return turnRun{}, err
	}
	chats, closeChats, err := e.openChats(ctx, ctls, label, nil, nil)
	defer closeChats()
	if err != nil {
		return turnRun{}, err
	}
	turn := func(ctx context.Context, k *wsclient.Control, c benchChat, id string) (bool, error) {
		return e.hostTurn(ctx, k, c.w, c.chat, id)
	}
	first, err := e.firstTurns(ctx, ctls, chats, turn)
	if err != nil {
		return turnRun{}, err
	}
	timed, err := e.turnsBackToBack(ctx, ctls, chats, "sessions", d, turn)
	timed.first = first
	return timed, err
}

// hostTurn sends one `!echo x` turn and waits for its chat/turnComplete; failed says
// the command's call did not succeed.
func (e *env) hostTurn(ctx context.Context, k *wsclient.Control, w *wsclient.Watch, chat, turnID string) (failed bool, err error) {
	action := map[string]any{"type": messages.ChatTurnStarted, "turnId": turnID, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": "!" + sessionsCommand, "origin": map[string]any{"kind": "user"}}}
	if err := k.Dispatch(ctx, chat, k.NextSeq(), action); err != nil {
		return false, err
	}
	for {
		env, err := nextEnvelope(ctx, k, w)
		if err != nil {
			return false, fmt.Errorf("waiting for chat/turnComplete: %w", err)
		}
		if env.RejectionReason != "" {
			return false, fmt.Errorf("%s was refused: %s", env.Type, env.RejectionReason)
		}
		switch env.Type {
		case messages.ChatToolCallComplete, messages.ChatTurnComplete, messages.ChatError:
		default:
			continue
		}
		var a struct {
			TurnID string `json:"turnId"`
			Result struct {
				Success bool `json:"success"`
			} `json:"result"`
		}
		if json.Unmarshal(env.Action, &a) != nil || a.TurnID != turnID {
			continue
		}
		switch env.Type {
		case messages.ChatToolCallComplete:
			failed = !a.Result.Success
		case messages.ChatError:
			return true, fmt.Errorf("the turn ended in error: %s", env.Action)
		case messages.ChatTurnComplete:
			return failed, nil
		}
	}
}

// rawTurns runs the raw side of a turn from workers goroutines for d: `SHELL -c 'echo
// x'` under a pty, or with interactive `SHELL -i` given `echo x` and exit.
func (e *env) rawTurns(ctx context.Context, workers int, d time.Duration, interactive bool) (turnRun, error) {
	var mu sync.Mutex // guards out
	out := turnRun{}
	turn := func(buf []byte) error {
		if interactive {
			return e.rawInteractiveTurn(buf)
		}
		return e.rawSpawnTurn(buf)
	}
	// One untimed spawn each first, as the host's sessions make their first turns.
	var warm errgroup.Group
	for range workers {
		warm.Go(func() error {
			began := time.Now()
			if err := turn(make([]byte, 4096)); err != nil {
				return err
			}
			mu.Lock()
			out.first = append(out.first, time.Since(began))
			mu.Unlock()
			return nil
		})
	}
	if err := warm.Wait(); err != nil {
		return out, err
	}
	g, gctx := errgroup.WithContext(ctx)
	out.cpu = meterCPUAndChildren(os.Getpid())
	start := time.Now()
	deadline := start.Add(d)
	for range workers {
		g.Go(func() error {
			buf := make([]byte, 4096)
			for time.Now().Before(deadline) && gctx.Err() == nil {
				began := time.Now()
				if err := turn(buf); err != nil {
					return err
				}
				ended := time.Now()
				mu.Lock()
				out.turns++
				out.latencies = append(out.latencies, ended.Sub(began))
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	out.elapsed = time.Since(start)
	out.cpu.stop()
	return out, err
}

// rawSpawnTurn is `SHELL -c 'echo x'` spawned, read to its end and reaped.
func (e *env) rawSpawnTurn(buf []byte) error {
	p, err := raw.Start(e.pty, e.shell, sessionsCommand)
	if err != nil {
		return err
	}
	_, err = p.Drain(buf)
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// rawInteractiveTurn is an interactive shell spawned (its startup files read, as a
// person's shell reads them), given `echo x` and exit as typed input, and read to its
// end. Typed ahead, the lines wait in the terminal until the shell reads them, as a
// `!` command waits for the shell's prompt.
func (e *env) rawInteractiveTurn(buf []byte) error {
	cmd := exec.Command(e.shell, "-i")
	p, err := raw.StartCmd(e.pty, cmd)
	if err != nil {
		return err
	}
	// A shell that never reads its input would hold the run forever.
	stuck := time.AfterFunc(e.cfg.WaitTimeout, p.Kill)
	defer stuck.Stop()
	newline := "\n"
	if e.pty {
		newline = "\r"
	}
	if _, err := p.Write([]byte(sessionsCommand + newline + "exit" + newline)); err != nil {
		p.Kill()
		_ = p.Close()
		return fmt.Errorf("raw: typing into %s: %w", e.shell, err)
	}
	_, err = p.Drain(buf)
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}
