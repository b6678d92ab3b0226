package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/procstat"
	"github.com/termhost/termhost/messages"
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
// The host side is timed as a client sees it, two ways: a client that sends subscribe
// right behind createTerminal (it named the terminal, so it need not wait; the target
// is on this one) and reads the shell's first terminal/data as the host reads it; and
// one that waits for createTerminal's answer, then subscribes, and finds the output in
// the snapshot. A shell to sit in is answered only once it printed something, so the
// second pays a round trip after the output.

func openSummary(s Sizes) string {
	return fmt.Sprintf("%d rounds of createTerminal until the shell's first output is seen, plain bash and the host's shell with its integration, against the same shells spawned raw under a pty", s.OpenRounds)
}

// openPlainArgv is the plain shell both sides run.
var openPlainArgv = []string{"--norc", "--noprofile", "-i"}

func runOpen(ctx context.Context, e *env, r *report.Result) error {
	if !e.pty {
		r.Note("the host runs terminals on pipes: a shell there prints nothing until it is given something to run, so there is no first output to time")
		return nil
	}
	rounds := e.sizes.OpenRounds
	r.Params["rounds"] = rounds
	if kids, ok := procstat.Children(e.pid); ok && e.pid != 0 {
		e.baseChildren = len(kids)
	}
	// "Plain" is bash whatever the host's shell is (a host whose shell is dash would
	// otherwise time dash refusing bash's flags).
	bash, err := exec.LookPath("bash")
	if err != nil {
		r.Note("no bash on this machine's PATH: there is no plain bash to open")
		return nil
	}
	plainCmd := pty.QuoteArgv(append([]string{bash}, openPlainArgv...))
	r.Params["plain"] = plainCmd
	// The integrated terminal is the host's shell with its script; a shell the
	// integration does not know (dash, say) has none, and its half is not timed.
	_, integrated, err := integration.Inject(e.shell, nil, integration.InjectOptions{Nonce: integration.NewNonce()})
	if err != nil {
		return fmt.Errorf("integration for %s: %w", e.shell, err)
	}
	if !integrated {
		r.Note("the host's shell %s has no integration script, so only plain bash is timed; run the host with SHELL=bash for the integrated figures", e.shell)
	}
	k, err := e.dialCtl(ctx, "open")
	if err != nil {
		return err
	}
	defer k.Close()
	pipe, err := e.dialPipelined(ctx)
	if err != nil {
		return err
	}
	defer pipe.close()
	var hostPlain, rawPlain, hostInt, rawInt, rawDirect, pipePlain, pipeInt []time.Duration
	for i := range rounds + 1 { // the first round warms both sides up and is not counted
		hp, err := e.hostOpen(ctx, k, fmt.Sprintf("open-plain-%d", i), bash, openPlainArgv)
		if err != nil {
			return fmt.Errorf("plain, round %d: %w", i, err)
		}
		rp, err := e.rawOpen(e.rawShellCmd(e.shell, nil, "-c", "exec "+plainCmd))
		if err != nil {
			return fmt.Errorf("raw plain, round %d: %w", i, err)
		}
		pp, err := pipe.open(ctx, e.uri(fmt.Sprintf("open-plain-pipelined-%d", i), 0), bash, openPlainArgv)
		if err != nil {
			return fmt.Errorf("plain, pipelined, round %d: %w", i, err)
		}
		rd, err := e.rawOpen(e.rawShellCmd(bash, nil, openPlainArgv...))
		if err != nil {
			return fmt.Errorf("raw plain, round %d: %w", i, err)
		}
		var hi, ri, pi time.Duration
		if integrated {
			if hi, err = e.hostOpen(ctx, k, fmt.Sprintf("open-integrated-%d", i), "", nil); err != nil {
				return fmt.Errorf("integrated, round %d: %w", i, err)
			}
			inj, _, err := integration.Inject(e.shell, nil, integration.InjectOptions{Nonce: integration.NewNonce()})
			if err != nil {
				return fmt.Errorf("raw integrated, round %d: %w", i, err)
			}
			rc := e.rawShellCmd(e.shell, inj.Env, inj.Args...)
			rc.ExtraFiles = inj.Files
			ri, err = e.rawOpen(rc)
			inj.Close()
			if err != nil {
				return fmt.Errorf("raw integrated, round %d: %w", i, err)
			}
			if pi, err = pipe.open(ctx, e.uri(fmt.Sprintf("open-integrated-pipelined-%d", i), 0), "", nil); err != nil {
				return fmt.Errorf("integrated, pipelined, round %d: %w", i, err)
			}
		}
		if i > 0 {
			rawDirect = append(rawDirect, rd)
			pipePlain, hostPlain, rawPlain = append(pipePlain, pp), append(hostPlain, hp), append(rawPlain, rp)
			if integrated {
				pipeInt, hostInt, rawInt = append(pipeInt, pi), append(hostInt, hi), append(rawInt, ri)
			}
		}
	}
	add := func(name string, host, raw []time.Duration) {
		hm, rm := percentile(host, 0.5), percentile(raw, 0.5)
		f := r.Add(report.Figure{Name: name + ", median", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(rm.Seconds())
		if strings.Contains(name, "pipelined") {
			f.Judge("≤ raw + 1 ms", hm-rm <= time.Millisecond)
		}
		r.Add(report.Figure{Name: name + ", p90", Value: percentile(host, 0.9).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw, 0.9).Seconds())
		r.Add(report.Figure{Name: name + ", host − raw, median", Value: (hm - rm).Seconds(), Unit: report.UnitSeconds})
	}
	add("open, plain bash, pipelined", pipePlain, rawPlain)
	add("open, plain bash, answer then subscribe", hostPlain, rawPlain)
	// The plain terminal is a one-command terminal, so it starts through `SHELL -c
	// exec …`: two starts of bash. The integration's cost is held against one.
	direct := percentile(rawDirect, 0.5)
	r.Add(report.Figure{Name: "raw `bash --norc --noprofile -i`, median", Value: direct.Seconds(), Unit: report.UnitSeconds})
	if !integrated {
		return nil
	}
	add("open, with integration, pipelined", pipeInt, rawInt)
	add("open, with integration, answer then subscribe", hostInt, rawInt)
	r.Add(report.Figure{Name: "the integration's cost, raw (integrated − bash --norc, medians)", Value: (percentile(rawInt, 0.5) - direct).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "the integration's cost, host (integrated − raw bash --norc, medians)", Value: (percentile(hostInt, 0.5) - direct).Seconds(), Unit: report.UnitSeconds})
	return nil
}

// hostOpen times one terminal's opening as a client sees it; a command opens a
// one-command terminal running it, "" the host's shell to sit in. The terminal is
// disposed after, untimed.
func (e *env) hostOpen(ctx context.Context, k *wsclient.Control, label, command string, args []string) (time.Duration, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	uri := e.uri(label, 0)
	w := k.Watch(uri)
	defer k.Unwatch(uri)
	p := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": k.ID()}}
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
		_ = k.Dispose(dctx, uri)
		e.waitChildrenGone()
	}()
	st, err := k.SubscribeTerminal(wctx, uri)
	if err != nil {
		return 0, err
	}
	if shellSpoke(st) {
		return time.Since(start), nil
	}
	for {
		env, err := nextEnvelope(wctx, k, w)
		if err != nil {
			return 0, fmt.Errorf("waiting for the first output: %w", err)
		}
		if env.RejectionReason == "" {
			return time.Since(start), nil
		}
	}
}

// shellSpoke says a terminal's state holds something its shell printed: output, or
// the marks of the integration (which the raw side reads as its first bytes).
func shellSpoke(st *messages.TerminalState) bool {
	return st.Text() != "" || (st.SupportsCommandDetection != nil && *st.SupportsCommandDetection)
}

// rawShellCmd is the shell with args and the environment the host gives a terminal's
// process (pty.BuildEnv: TERM, COLUMNS, LINES over this process's), plus env.
func (e *env) rawShellCmd(shell string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(shell, args...)
	cmd.Env = pty.BuildEnv(os.Environ(), pty.Spec{Shell: e.shell, Env: env, UsePty: true, Cols: 80, Rows: 24})
	return cmd
}

// rawOpen times cmd from its start under a pty to its first byte of output, then
// ends it.
func (e *env) rawOpen(cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	p, err := raw.StartCmd(true, cmd)
	if err != nil {
		return 0, err
	}
	defer func() { p.Kill(); _ = p.Close() }()
	// The read is bounded by the bench's wait: a shell that never prints is an error
	// of this run, not a run that never ends (the kill and close end the read).
	first := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		_, err := p.Read(buf)
		first <- err
	}()
	wait := time.NewTimer(e.cfg.WaitTimeout)
	defer wait.Stop()
	select {
	case err := <-first:
		if err != nil {
			return 0, fmt.Errorf("raw: no output: %w", err)
		}
		return time.Since(start), nil
	case <-wait.C:
		return 0, fmt.Errorf("raw: %s printed nothing within %s", strings.Join(cmd.Args, " "), e.cfg.WaitTimeout)
	}
}

// pipelined is a bare WebSocket that sends createTerminal and subscribe back to back.
type pipelined struct {
	e   *env
	ws  *websocket.Conn
	id  int
	buf bytes.Buffer
}

func (e *env) dialPipelined(ctx context.Context) (*pipelined, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	s, err := wsclient.DialStream(wctx, e.target, "bench-open-pipelined-"+e.run, "")
	if err != nil {
		return nil, err
	}
	return &pipelined{e: e, ws: s.WS(), id: 100}, nil
}

func (p *pipelined) close() { _ = p.ws.Close(websocket.StatusNormalClosure, "") }

func (p *pipelined) send(ctx context.Context, method string, params any) (string, error) {
	id, b, err := p.encode(method, params)
	if err != nil {
		return "", err
	}
	return id, p.ws.Write(ctx, websocket.MessageText, b)
}

// encode makes the next request's frame and its id.
func (p *pipelined) encode(method string, params any) (string, []byte, error) {
	p.id++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	return fmt.Sprint(p.id), b, err
}

// open times createTerminal, with subscribe sent right behind it, until the shell's
// first output is seen, then disposes the terminal.
func (p *pipelined) open(ctx context.Context, uri, command string, args []string) (time.Duration, error) {
	wctx, cancel := p.e.waitCtx(ctx)
	defer cancel()
	params := map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "bench-open-pipelined-" + p.e.run}}
	if command != "" {
		params["_meta"] = map[string]any{"x-termhost": map[string]any{"command": command, "args": args}}
	}
	// Both frames are encoded before the clock starts, as the echo scenario's
	// keystroke is: how long this client takes to build JSON is not the host's,
	// and the raw side has nothing like it.
	createID, create, err := p.encode("createTerminal", params)
	if err != nil {
		return 0, err
	}
	subID, sub, err := p.encode("subscribe", map[string]any{"channel": uri})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := p.ws.Write(wctx, websocket.MessageText, create); err != nil {
		return 0, err
	}
	if err := p.ws.Write(wctx, websocket.MessageText, sub); err != nil {
		return 0, err
	}
	actionPrefix := bytes.TrimSuffix(messages.DataFramePrefix(uri), []byte(`,"action":{"type":"terminal/data","data":"`))
	var took time.Duration
	created := false
	for took == 0 || !created {
		_, rd, err := p.ws.Reader(wctx)
		if err != nil {
			return 0, err
		}
		p.buf.Reset()
		if _, err := p.buf.ReadFrom(rd); err != nil {
			return 0, err
		}
		f := p.buf.Bytes()
		// Any action on the channel after the snapshot comes from the shell's output:
		// a shell with the integration begins with marks (terminal/commandDetection-
		// Available, terminal/cwdChanged), which the raw side reads as its first bytes.
		if bytes.HasPrefix(f, actionPrefix) {
			if took == 0 && !bytes.Contains(f, []byte(`"rejectionReason"`)) {
				took = time.Since(start)
			}
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Error  *messages.Error `json:"error"`
			Result *struct {
				Snapshot *struct {
					State messages.TerminalState `json:"state"`
				} `json:"snapshot"`
			} `json:"result"`
		}
		if json.Unmarshal(f, &m) != nil {
			continue
		}
		if m.ID == nil {
			continue // an action on another channel
		}
		switch string(m.ID) {
		case createID:
			if m.Error != nil {
				return 0, fmt.Errorf("createTerminal %s: %w", uri, m.Error)
			}
			created = true
		case subID:
			if m.Error != nil {
				return 0, fmt.Errorf("subscribe %s: %w", uri, m.Error)
			}
			if m.Result != nil && m.Result.Snapshot != nil && shellSpoke(&m.Result.Snapshot.State) && took == 0 {
				took = time.Since(start)
			}
		}
	}
	if _, err := p.send(wctx, "disposeTerminal", map[string]any{"channel": uri}); err != nil {
		return 0, err
	}
	p.e.waitChildrenGone()
	return took, nil
}

// waitChildrenGone waits, up to 300 ms, until the host has no more child processes
// than the open scenario found when it began: a dispose is answered before its shell
// is ended and reaped, and an open timed meanwhile would share the CPUs with that. A
// shell that does not end on SIGHUP (one disposed before it set up its signals) waits
// asleep for its SIGKILL, which costs nothing, so the wait is bounded. Polled: no
// event says a process was reaped.
func (e *env) waitChildrenGone() {
	if e.pid == 0 || e.cfg.InProcess {
		return
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if kids, ok := procstat.Children(e.pid); !ok || len(kids) <= e.baseChildren {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
