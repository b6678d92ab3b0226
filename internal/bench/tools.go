package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/messages"
)

// The tools scenarios: the agent shell tools at /mcp, called the way an agent calls
// them, by the MCP SDK's own client, each bound (?session=…&tools=pty) to a session
// the bench creates over AHP first.
//
// tools times one `bash` call of `true` in the chat's persistent shell. Its floor is
// the same command typed into a persistent interactive bash on a local pty (`bash
// --norc --noprofile -i`, given `true; echo MARK` and read until MARK's output line);
// beside it, `bash -c true` spawned for every call, the host's shell (bash with
// termhost's integration script) typed into directly, and an MCP call that types
// into no shell (bash_output), which together say where a call's time goes. The
// sides take turns call by call, so a burst of other work on a shared machine lands
// on all of them alike.
//
// tools-load runs many agents at once, each calling `bash` with `sleep 1` every 2 s,
// and measures how late each answer is (answer − (sent + 1 s)); its raw side is the
// same schedule typed into as many persistent bashes on local ptys by this process,
// and again into as many bashes started as the host starts its shells (termhost's
// integration script), which says how late the shells alone would be.

const (
	// toolsCommand is the tools scenario's command.
	toolsCommand = "true"
	// toolsWarmup calls go first and are not timed: the first opens the chat's shell.
	toolsWarmup = 5
	// toolsCPUTime is the least time each side's CPU is metered over.
	toolsCPUTime = 500 * time.Millisecond
	// loadCommand is what each agent of tools-load runs, every loadPeriod.
	loadCommand = "sleep 1"
	loadSleep   = time.Second
	loadPeriod  = 2 * time.Second
	// loadLateLimit is how late an answer may be before it counts as late.
	loadLateLimit = 100 * time.Millisecond
	// loadOpeners is how many agents are opened at once.
	loadOpeners = 8
)

func toolsSummary(s Sizes) string {
	return fmt.Sprintf("%d `bash` calls of `%s` from an MCP client (go-sdk) in one session's persistent shell, after %d warm-up calls, taking turns with `%s` typed into a persistent `bash --norc --noprofile -i` on a local pty, `bash -c %s` spawned, and the host's shell (bash + integration script) typed into directly",
		s.ToolCalls, toolsCommand, toolsWarmup, toolsCommand, toolsCommand)
}

func toolsLoadSummary(s Sizes) string {
	return fmt.Sprintf("%d agents at once, each its own session and MCP connection, calling `bash` with `%s` every %v (starts spread over the first %v) for %v: lateness = answer − (sent + %v), and the host's CPU and RSS; against the same schedule typed into %d persistent bashes on local ptys, plain and with the host's integration script",
		s.ToolsLoadSessions, loadCommand, loadPeriod, loadPeriod, s.ToolsLoadDuration, loadSleep, s.ToolsLoadSessions)
}

func runTools(ctx context.Context, e *env, r *report.Result) error {
	n := e.sizes.ToolCalls
	bash, err := e.bash()
	if err != nil {
		return err
	}
	r.Params["calls"] = n
	r.Params["warmup"] = toolsWarmup
	r.Params["command"] = toolsCommand
	r.Params["rawInteractive"] = bash + " --norc --noprofile -i"
	r.Params["rawSpawn"] = bash + " -c " + toolsCommand

	// Every side is set up and warmed up first; then they take turns, one call each
	// per round, so a burst of other work on the machine lands on all of them alike.
	k, err := e.dialCtl(ctx, "tools")
	if err != nil {
		return err
	}
	defer k.Close()
	work, err := os.MkdirTemp("", "termhost-bench-tools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	wctx, cancel := e.waitCtx(ctx)
	a, err := e.openAgent(wctx, k, "tools", 0, work)
	cancel()
	if err != nil {
		return err
	}
	defer e.closeAgent(ctx, k, a)
	failed := 0
	hostCall := func() error {
		wctx, cancel := e.waitCtx(ctx)
		defer cancel()
		ans, err := a.bash(wctx, toolsCommand)
		if err == nil && !ans.ok() {
			failed++
		}
		return err
	}
	var shellID string
	for i := range toolsWarmup {
		wctx, cancel := e.waitCtx(ctx)
		ans, err := a.bash(wctx, toolsCommand)
		cancel()
		if err != nil {
			return fmt.Errorf("warm-up call %d: %w", i, err)
		}
		if !ans.ok() {
			return fmt.Errorf("warm-up call %d answered %s", i, ans)
		}
		shellID = ans.shellID
	}

	persistent, err := startRawBash(e.pty, bash, e.cfg.WaitTimeout)
	if err != nil {
		return fmt.Errorf("raw persistent bash: %w", err)
	}
	defer persistent.close()
	rawCall := func() error { return persistent.command(toolsCommand) }
	buf := make([]byte, 4096)
	spawnCall := func() error {
		p, err := raw.Start(e.pty, bash, toolsCommand)
		if err != nil {
			return err
		}
		_, err = p.Drain(buf)
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var integratedCall func() error
	integrated, integErr := e.startIntegratedBash(bash)
	if integErr == nil {
		defer integrated.close()
		integratedCall = func() error { return integrated.marked(toolsCommand) }
	}
	for range toolsWarmup {
		if err := rawCall(); err != nil {
			return fmt.Errorf("raw persistent bash: %w", err)
		}
		if integratedCall != nil {
			if integErr = integratedCall(); integErr != nil {
				integratedCall = nil
			}
		}
	}

	sides := []struct {
		name  string
		call  func() error
		times []time.Duration
	}{{"host", hostCall, nil}, {"raw persistent bash", rawCall, nil}, {"raw bash -c", spawnCall, nil}, {"the host's shell typed into directly", integratedCall, nil}}
	var done atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("tools: %d of %d rounds", done.Load(), n) })
	for round := range n {
		for i := range sides {
			if sides[i].call == nil {
				continue
			}
			start := time.Now()
			if err := sides[i].call(); err != nil {
				stop()
				return fmt.Errorf("%s, call %d: %w", sides[i].name, round, err)
			}
			sides[i].times = append(sides[i].times, time.Since(start))
		}
		done.Add(1)
	}
	stop()
	host, rawTimes, spawned, integ := sides[0].times, sides[1].times, sides[2].times, sides[3].times

	// What a call costs in CPU, each side metered on its own: half as many calls,
	// and for at least toolsCPUTime, since /proc counts in 10 ms ticks and a raw
	// call takes under a millisecond.
	hostCPU, err := timeCalls(max(n/2, 1), toolsCPUTime, e.pid, hostCall)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	rawCPU, err := timeCalls(max(n/2, 1), toolsCPUTime, os.Getpid(), rawCall)
	if err != nil {
		return fmt.Errorf("raw persistent bash: %w", err)
	}
	// An MCP call that reaches the session's shell service and reads, typing into no
	// shell: the floor under a call's round trip.
	reads, err := timeCalls(n, 0, 0, func() error {
		wctx, cancel := e.waitCtx(ctx)
		defer cancel()
		res, err := a.cs.CallTool(wctx, &sdk.CallToolParams{Name: "bash_output", Arguments: map[string]any{"bash_id": shellID}})
		if err == nil && res.IsError {
			err = fmt.Errorf("bash_output answered an error: %v", res.Content)
		}
		return err
	})
	if err != nil {
		return err
	}

	hm, h90, h99 := percentile(host, 0.5), percentile(host, 0.9), percentile(host, 0.99)
	am, a90, a99 := percentile(rawTimes, 0.5), percentile(rawTimes, 0.9), percentile(rawTimes, 0.99)
	r.Add(report.Figure{Name: "bash call, median", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(am.Seconds())
	r.Add(report.Figure{Name: "bash call − raw persistent bash, median", Value: (hm - am).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "bash call, p90", Value: h90.Seconds(), Unit: report.UnitSeconds}).WithRaw(a90.Seconds())
	r.Add(report.Figure{Name: "bash call, p99", Value: h99.Seconds(), Unit: report.UnitSeconds}).WithRaw(a99.Seconds())
	r.Add(report.Figure{Name: "bash call − raw persistent bash, p99", Value: (h99 - a99).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "bash call, max", Value: slices.Max(host).Seconds(), Unit: report.UnitSeconds}).WithRaw(slices.Max(rawTimes).Seconds())
	r.Add(report.Figure{Name: "bash call vs `bash -c true` spawned, median", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(spawned, 0.5).Seconds())
	r.Add(report.Figure{Name: "bash call vs `bash -c true` spawned, p99", Value: h99.Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(spawned, 0.99).Seconds())
	// Where a call's time goes: the host's own shell (integration script and all)
	// without the host, and an MCP call that types into no shell.
	if integErr != nil {
		r.Note("the host's shell typed into directly failed: %v", integErr)
	} else {
		im := percentile(integ, 0.5)
		r.Add(report.Figure{Name: "bash call vs the host's shell (bash + integration) typed into directly, median", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(im.Seconds())
		r.Add(report.Figure{Name: "bash call − the host's shell typed into directly, median", Value: (hm - im).Seconds(), Unit: report.UnitSeconds})
	}
	r.Add(report.Figure{Name: "MCP call that types into no shell (bash_output), median", Value: percentile(reads.times, 0.5).Seconds(), Unit: report.UnitSeconds})
	if hostCPU.cpu.ok && rawCPU.cpu.ok && hostCPU.cpu.busy > 0 && rawCPU.cpu.busy > 0 {
		// The whole machine per call: the host, its shell, and the bench's client;
		// raw, the persistent bash and this process reading it.
		r.Add(report.Figure{Name: "machine CPU per call", Value: hostCPU.machinePerCall(), Unit: report.UnitSeconds}).WithRaw(rawCPU.machinePerCall())
		if !e.cfg.InProcess {
			r.Add(report.Figure{Name: "host process CPU per call", Value: hostCPU.cpu.process / float64(len(hostCPU.times)), Unit: report.UnitSeconds})
		}
	} else {
		r.Note("CPU per call is left out: /proc did not say")
	}
	if failed > 0 {
		r.Note("%d of %d calls did not answer exit code 0 with the command ended", failed, n+len(hostCPU.times))
	}
	r.Note("the sides take turns call by call; raw: `%s` typed into `%s --norc --noprofile -i` on a local pty as `%s; echo MARK`, read until MARK's output line; `%s -c %s` spawned under a pty, read to its end and reaped; the host's shell is %s with termhost's integration script, given ` %s` as the host types it and read until its OSC 633 D mark",
		toolsCommand, bash, toolsCommand, bash, toolsCommand, bash, toolsCommand)
	if filepath.Base(e.shell) != "bash" {
		r.Note("the host's shell is %s; the raw baselines run %s", e.shell, bash)
	}
	e.noteAgentsShared(r)
	return nil
}

// timedCalls are one side's timed commands, with the CPU their loop took.
type timedCalls struct {
	times   []time.Duration
	cpu     *cpuMeter
	elapsed time.Duration // the timed loop's wall time, which cpu measured
}

// machinePerCall is the CPU time the whole machine spent per call.
func (t timedCalls) machinePerCall() float64 {
	return t.cpu.busy * float64(runtime.NumCPU()) * t.elapsed.Seconds() / float64(len(t.times))
}

// timeCalls runs do n times, and on until at least d has passed, timing each, with
// the CPU of pid and of the machine metered around the loop.
func timeCalls(n int, d time.Duration, pid int, do func() error) (timedCalls, error) {
	out := timedCalls{times: make([]time.Duration, 0, n), cpu: meterCPU(pid)}
	began := time.Now()
	for i := 0; i < n || time.Since(began) < d; i++ {
		start := time.Now()
		if err := do(); err != nil {
			return out, err
		}
		out.times = append(out.times, time.Since(start))
	}
	out.elapsed = time.Since(began)
	out.cpu.stop()
	return out, nil
}

// bash is the bash the raw sides run: the host's shell when that is bash, else the
// first on $PATH.
func (e *env) bash() (string, error) {
	if filepath.Base(e.shell) == "bash" {
		return e.shell, nil
	}
	p, err := exec.LookPath("bash")
	if err != nil {
		return "", fmt.Errorf("the raw sides need bash: %w", err)
	}
	return p, nil
}

// startIntegratedBash starts bash as the host starts an agent's shell, on a local
// pty: termhost's integration script, history kept private, LC_ALL=C.UTF-8. It
// returns once the shell has marked its first prompt.
func (e *env) startIntegratedBash(bash string) (*rawShell, error) {
	if !e.pty {
		return nil, errors.New("the integration marks need a pseudoterminal")
	}
	inj, ok, err := integration.Inject(bash, nil, integration.InjectOptions{Nonce: integration.NewNonce()})
	if !ok {
		return nil, fmt.Errorf("no integration for %s: %v", bash, err)
	}
	cmd := exec.Command(bash, inj.Args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", integration.PreventHistoryEnv+"=1", "LC_ALL=C.UTF-8")
	cmd.Env = append(cmd.Env, inj.Env...)
	cmd.ExtraFiles = inj.Files
	p, err := raw.StartCmd(true, cmd)
	inj.Close()
	if err != nil {
		return nil, err
	}
	sh := &rawShell{p: p, pty: true, wait: e.cfg.WaitTimeout, buf: make([]byte, 32<<10)}
	// The first prompt is marked ready (B) once the script has run.
	if err := sh.until(nil, []byte("\x1b]633;B")); err != nil {
		sh.close()
		return nil, err
	}
	return sh, nil
}

// rawShell is a persistent shell on a local pty (or pipes) that this process types
// into and reads, as the host does an agent's shell but with nothing in between.
type rawShell struct {
	p   *raw.Proc
	pty bool
	// wait bounds each command: a shell that never prints its end is killed, and
	// its read ends in an error.
	wait time.Duration
	buf  []byte
	seen []byte // output read since the last line was typed
	seq  int
}

// startRawBash starts `bash --norc --noprofile -i`, the floor of a command in a
// persistent shell: no startup files, no prompt hooks.
func startRawBash(usePty bool, bash string, wait time.Duration) (*rawShell, error) {
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	if usePty {
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	}
	p, err := raw.StartCmd(usePty, cmd)
	if err != nil {
		return nil, err
	}
	return &rawShell{p: p, pty: usePty, wait: wait, buf: make([]byte, 32<<10)}, nil
}

// command types `cmd; echo MARK` and reads until MARK's output line. The mark is
// typed with an empty pair of single quotes inside it, so the terminal's echo of the
// typed line never matches what echo prints; it is read with its line's end, which a
// pty writes as CRLF.
func (s *rawShell) command(cmd string) error {
	s.seq++
	n := strconv.Itoa(s.seq)
	line := "termhost-bench-" + n + "\n"
	if s.pty {
		line = "termhost-bench-" + n + "\r\n"
	}
	return s.until([]byte(cmd+"; echo termhost-be''nch-"+n+"\n"), []byte(line))
}

// marked types cmd as the host types an agent's command (a leading space, then
// Enter) into a shell with termhost's integration, and reads until the shell marks
// the command's end (OSC 633 D).
func (s *rawShell) marked(cmd string) error {
	return s.until([]byte(" "+cmd+"\r"), []byte("\x1b]633;D;"))
}

// until types line (nil types nothing) and reads until the output since holds want.
func (s *rawShell) until(line, want []byte) error {
	stuck := time.AfterFunc(s.wait, s.p.Kill)
	defer stuck.Stop()
	if line != nil {
		s.seen = s.seen[:0]
		if _, err := s.p.Write(line); err != nil {
			return fmt.Errorf("raw: typing %q: %w", line, err)
		}
	}
	for !bytes.Contains(s.seen, want) {
		if err := s.more(); err != nil {
			return fmt.Errorf("%w before %q (saw %q)", err, want, s.seen)
		}
	}
	return nil
}

// more reads what the shell has printed next.
func (s *rawShell) more() error {
	n, err := s.p.Read(s.buf)
	s.seen = append(s.seen, s.buf[:n]...)
	if err != nil {
		return fmt.Errorf("raw: reading the shell: %w", err)
	}
	return nil
}

func (s *rawShell) close() {
	s.p.Kill()
	_ = s.p.Close()
}

// toolAgent is one agent: an MCP client of the SDK's own, on an HTTP transport of its
// own (an agent is a process of its own), bound to a session the bench created.
type toolAgent struct {
	session   string
	cs        *sdk.ClientSession
	transport *http.Transport
}

// toolAnswer is what a `bash` call answered, from its structured content.
type toolAnswer struct {
	isError  bool
	shellID  string
	exitCode *int
	running  bool
	status   string
}

// ok says the command ended, with exit code 0.
func (a toolAnswer) ok() bool {
	return !a.isError && !a.running && a.exitCode != nil && *a.exitCode == 0
}

func (a toolAnswer) String() string {
	code := "none"
	if a.exitCode != nil {
		code = strconv.Itoa(*a.exitCode)
	}
	return fmt.Sprintf("error=%v exit_code=%s running=%v status=%q", a.isError, code, a.running, a.status)
}

// bearer signs each request in with the token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// mcpEndpoint is the host's /mcp address bound to session with the PTY tools.
func (e *env) mcpEndpoint(session string) (string, error) {
	u, err := url.Parse(e.target.URL)
	if err != nil {
		return "", fmt.Errorf("bench: --url %q: %w", e.target.URL, err)
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path = "/mcp"
	u.RawQuery = url.Values{"session": {session}, "tools": {"pty"}}.Encode()
	return u.String(), nil
}

// openAgent creates a session over AHP on k (working folder dir) and connects an MCP
// client bound to it.
func (e *env) openAgent(ctx context.Context, k *wsclient.Control, label string, i int, dir string) (*toolAgent, error) {
	uri := fmt.Sprintf("ahp-session:/bench-%s-%s-%d", e.run, label, i)
	raw, err := k.Request(ctx, "createSession", map[string]any{"channel": uri, "workingDirectories": []string{messages.FileURI(dir)}})
	if err != nil {
		return nil, fmt.Errorf("createSession: %w", err)
	}
	var res struct{ Chat string }
	if err := json.Unmarshal(raw, &res); err != nil || res.Chat == "" {
		return nil, fmt.Errorf("createSession answered %s", raw)
	}
	endpoint, err := e.mcpEndpoint(uri)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c := sdk.NewClient(&sdk.Implementation{Name: "termhost-bench-agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{e.target.Token, tr}}}, nil)
	if err != nil {
		tr.CloseIdleConnections()
		dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
		_, _ = k.Request(dctx, "disposeSession", map[string]any{"channel": uri})
		cancel()
		return nil, fmt.Errorf("MCP connect to %s: %w", endpoint, err)
	}
	return &toolAgent{session: uri, cs: cs, transport: tr}, nil
}

// closeAgent ends the agent's MCP session and disposes its host session (its shells).
func (e *env) closeAgent(ctx context.Context, k *wsclient.Control, a *toolAgent) {
	_ = a.cs.Close()
	a.transport.CloseIdleConnections()
	dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
	defer cancel()
	_, _ = k.Request(dctx, "disposeSession", map[string]any{"channel": a.session})
}

// bash calls the bash tool with command. An error is a protocol failure; a tool
// error is an answer.
func (a *toolAgent) bash(ctx context.Context, command string) (toolAnswer, error) {
	res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": command}})
	if err != nil {
		return toolAnswer{}, err
	}
	out := toolAnswer{isError: res.IsError}
	var st struct {
		ShellID  string `json:"shell_id"`
		ExitCode *int   `json:"exit_code"`
		Running  bool   `json:"running"`
		Status   string `json:"status"`
	}
	if b, err := json.Marshal(res.StructuredContent); err == nil && json.Unmarshal(b, &st) == nil {
		out.shellID, out.exitCode, out.running, out.status = st.ShellID, st.ExitCode, st.Running, st.Status
	}
	if out.isError && out.status == "" {
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				out.status += tc.Text
			}
		}
	}
	return out, nil
}

// lateRun is one side of tools-load: how late each answer was.
type lateRun struct {
	late []time.Duration
	// failed counts calls that did not end with exit code 0 (host only).
	failed int
	// behind counts calls sent after their slot, the call before still out.
	behind  int
	elapsed time.Duration
	cpu     *cpuMeter
	// clients measured the bench's own process during a host run with the host in
	// another process: the agents' MCP clients. Nil otherwise.
	clients *cpuMeter
}

// machinePerCall is the CPU time the whole machine spent per call.
func (l lateRun) machinePerCall() float64 {
	return l.cpu.busy * float64(runtime.NumCPU()) * l.elapsed.Seconds() / float64(len(l.late))
}

func (l lateRun) overLimit() int {
	n := 0
	for _, d := range l.late {
		if d > loadLateLimit {
			n++
		}
	}
	return n
}

func runToolsLoad(ctx context.Context, e *env, r *report.Result) error {
	n, d := e.sizes.ToolsLoadSessions, e.sizes.ToolsLoadDuration
	bash, err := e.bash()
	if err != nil {
		return err
	}
	r.Params["sessions"] = n
	r.Params["seconds"] = d.Seconds()
	r.Params["periodSeconds"] = loadPeriod.Seconds()
	r.Params["command"] = loadCommand
	r.Params["rawShell"] = bash + " --norc --noprofile -i"

	// Two raw sides: the floor (plain persistent bashes), and the host's own shells
	// (bash with the integration script) typed into directly, which says how much of
	// the host's lateness its shells would have without the host.
	e.prog.say("tools-load: raw side, %d plain bashes", n)
	raw, err := e.rawLoad(ctx, "tools-load: raw", n, d, func() (*rawShell, error) { return startRawBash(e.pty, bash, e.cfg.WaitTimeout) },
		func(sh *rawShell, cmd string) error { return sh.command(cmd) })
	if err != nil {
		return fmt.Errorf("raw: %w", err)
	}
	var integrated lateRun
	integErr := errors.New("the integration marks need a pseudoterminal")
	if e.pty {
		e.prog.say("tools-load: raw side, %d bashes with the host's integration script", n)
		integrated, integErr = e.rawLoad(ctx, "tools-load: raw, integrated", n, d, func() (*rawShell, error) { return e.startIntegratedBash(bash) },
			func(sh *rawShell, cmd string) error { return sh.marked(cmd) })
	}
	host, rss, err := e.hostLoad(ctx, n, d)
	if err != nil {
		return err
	}

	label := fmt.Sprintf("%d sessions, %v", n, d)
	r.Add(report.Figure{Name: "calls answered, " + label, Value: float64(len(host.late)), Unit: report.UnitCount}).WithRaw(float64(len(raw.late)))
	r.Add(report.Figure{Name: "lateness p50", Value: percentile(host.late, 0.5).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw.late, 0.5).Seconds())
	r.Add(report.Figure{Name: "lateness p99", Value: percentile(host.late, 0.99).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw.late, 0.99).Seconds())
	r.Add(report.Figure{Name: "lateness max", Value: slices.Max(host.late).Seconds(), Unit: report.UnitSeconds}).WithRaw(slices.Max(raw.late).Seconds())
	over := host.overLimit()
	r.Add(report.Figure{Name: fmt.Sprintf("calls late by more than %v", loadLateLimit), Value: float64(over), Unit: report.UnitCount}).
		WithRaw(float64(raw.overLimit())).Judge("0", over == 0)
	if integErr != nil {
		r.Note("the host's shells driven directly failed: %v", integErr)
	} else {
		const vs = ", vs the host's shells typed into directly"
		r.Add(report.Figure{Name: "lateness p50" + vs, Value: percentile(host.late, 0.5).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(integrated.late, 0.5).Seconds())
		r.Add(report.Figure{Name: "lateness p99" + vs, Value: percentile(host.late, 0.99).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(integrated.late, 0.99).Seconds())
		r.Add(report.Figure{Name: "lateness max" + vs, Value: slices.Max(host.late).Seconds(), Unit: report.UnitSeconds}).WithRaw(slices.Max(integrated.late).Seconds())
		r.Add(report.Figure{Name: fmt.Sprintf("calls late by more than %v", loadLateLimit) + vs, Value: float64(over), Unit: report.UnitCount}).WithRaw(float64(integrated.overLimit()))
	}
	if host.cpu.ok && raw.cpu.ok {
		who := "host process"
		if e.cfg.InProcess {
			who = "host process (and the agents' clients)"
		}
		// Raw, this process: what driving the shells directly costs.
		r.Add(report.Figure{Name: who + " CPU", Value: host.cpu.process, Unit: report.UnitSeconds}).WithRaw(raw.cpu.process)
		r.Add(report.Figure{Name: who + " CPU ÷ one core", Value: host.cpu.process / host.elapsed.Seconds(), Unit: report.UnitRatio}).WithRaw(raw.cpu.process / raw.elapsed.Seconds())
		if host.clients != nil && host.clients.ok {
			r.Add(report.Figure{Name: "the agents' MCP clients (the bench's process) CPU", Value: host.clients.process, Unit: report.UnitSeconds})
		}
		// The whole machine per call: the host, the agents' clients, the shells and
		// the kernel; raw, the shells and this process driving them.
		r.Add(report.Figure{Name: "machine CPUs busy", Value: host.cpu.busy, Unit: report.UnitRatio}).WithRaw(raw.cpu.busy)
		r.Add(report.Figure{Name: "machine CPU per call", Value: host.machinePerCall(), Unit: report.UnitSeconds}).WithRaw(raw.machinePerCall())
		if integErr == nil && integrated.cpu.ok {
			r.Add(report.Figure{Name: "machine CPU per call, vs the host's shells typed into directly", Value: host.machinePerCall(), Unit: report.UnitSeconds}).WithRaw(integrated.machinePerCall())
		}
	}
	if rss.known {
		r.Add(report.Figure{Name: "host RSS before the sessions opened", Value: float64(rss.before), Unit: report.UnitBytes})
		r.Add(report.Figure{Name: "host RSS with the sessions open, before the run", Value: float64(rss.opened), Unit: report.UnitBytes})
		r.Add(report.Figure{Name: "host RSS peak during the run", Value: float64(rss.peak), Unit: report.UnitBytes})
		r.Add(report.Figure{Name: "host RSS per session (opened − before) ÷ sessions", Value: float64(rss.opened-rss.before) / float64(n), Unit: report.UnitBytes})
	} else {
		r.Note("the host's RSS is unknown (a remote host: pass --host-pid)")
	}
	if host.failed > 0 {
		r.Note("%d of %d host calls did not end with exit code 0 within their call", host.failed, len(host.late))
	}
	if host.behind > 0 || raw.behind > 0 || integrated.behind > 0 {
		r.Note("calls sent after their slot because the one before was still out: host %d, raw %d, the host's shells typed into directly %d", host.behind, raw.behind, integrated.behind)
	}
	r.Note("each agent's first call (`true`, which opens its shell) and each raw shell's first command are made before the clock starts; raw: `%s` typed into %d `%s --norc --noprofile -i` on local ptys as `%s; echo MARK`, read until MARK's output line, on the same schedule from as many goroutines; the host's shells typed into directly: %d %s with termhost's integration script, given ` %s` as the host types it and read until its OSC 633 D mark",
		loadCommand, n, bash, loadCommand, n, bash, loadCommand)
	e.noteAgentsShared(r)
	return nil
}

// noteAgentsShared says, for an in-process host, that the agents' MCP clients run in
// the host's process: its CPU figures hold theirs.
func (e *env) noteAgentsShared(r *report.Result) {
	if e.cfg.InProcess {
		r.Note("in-process host: the agents' MCP clients and the host share this process and its %d CPUs", e.machineCPUs())
	}
}

// loadRSS is the host's resident set around tools-load's run.
type loadRSS struct {
	known                bool
	before, opened, peak int64
}

// hostLoad opens n agents, each with its shell open, and runs the schedule for d.
func (e *env) hostLoad(ctx context.Context, n int, d time.Duration) (lateRun, loadRSS, error) {
	ctls, closeCtls, err := e.dialCtls(ctx, "tools-load", min(loadOpeners, n))
	defer closeCtls()
	if err != nil {
		return lateRun{}, loadRSS{}, err
	}
	work, err := os.MkdirTemp("", "termhost-bench-tools-load-")
	if err != nil {
		return lateRun{}, loadRSS{}, err
	}
	defer os.RemoveAll(work)

	var rss loadRSS
	e.settleMemory()
	rss.before, rss.known = e.hostRSS()
	agents := make([]*toolAgent, n)
	owners := make([]*wsclient.Control, n) // the connection that created each agent's session
	defer func() {
		var wg sync.WaitGroup
		for i, a := range agents {
			if a != nil {
				wg.Go(func() { e.closeAgent(ctx, owners[i], a) })
			}
		}
		wg.Wait()
	}()
	err = e.parallel(ctx, ctls, n, "tools-load: opening sessions", func(ctx context.Context, k *wsclient.Control, i int) error {
		a, err := e.openAgent(ctx, k, "tools-load", i, work)
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		agents[i], owners[i] = a, k
		ans, err := a.bash(ctx, toolsCommand)
		if err != nil {
			return fmt.Errorf("session %d, first call: %w", i, err)
		}
		if !ans.ok() {
			return fmt.Errorf("session %d, first call answered %s", i, ans)
		}
		return nil
	})
	if err != nil {
		return lateRun{}, rss, err
	}
	if rss.known {
		rss.opened, _ = e.hostRSS()
	}

	stopRSS := e.pollPeakRSS()
	var clients *cpuMeter
	if e.pid != os.Getpid() {
		clients = meterCPU(os.Getpid())
	}
	out, err := e.schedule(ctx, "tools-load: host", n, d, func(ctx context.Context, i int) (bool, error) {
		ans, err := agents[i].bash(ctx, loadCommand)
		return err == nil && ans.ok(), err
	}, meterCPU(e.pid))
	if clients != nil {
		clients.stop()
		out.clients = clients
	}
	rss.peak = stopRSS()
	return out, rss, err
}

// pollPeakRSS polls the host's RSS every 100 ms until the returned stop, which gives
// the peak (0 when it cannot be read). sampleRSS polls every 10 ms for a flood's
// brief peak; here that would cost this process about 2% of a core, which tools-load
// counts as the agents' clients', and a minute of calls moves the host's memory slowly.
func (e *env) pollPeakRSS() (stop func() int64) {
	var peak int64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v, ok := e.hostRSS(); ok && v > peak {
				peak = v
			}
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	}()
	return func() int64 { close(done); <-finished; return peak }
}

// rawLoad starts n shells with start, each given its first command (true) before
// the clock starts, and runs the schedule in them with run.
func (e *env) rawLoad(ctx context.Context, label string, n int, d time.Duration, start func() (*rawShell, error), run func(sh *rawShell, cmd string) error) (lateRun, error) {
	shells := make([]*rawShell, 0, n)
	defer func() {
		for _, sh := range shells {
			sh.close()
		}
	}()
	for range n {
		sh, err := start()
		if err != nil {
			return lateRun{}, err
		}
		shells = append(shells, sh)
		if err := run(sh, toolsCommand); err != nil {
			return lateRun{}, err
		}
	}
	return e.schedule(ctx, label, n, d, func(_ context.Context, i int) (bool, error) {
		return true, run(shells[i], loadCommand)
	}, meterCPU(os.Getpid()))
}

// schedule runs call for each of n callers every loadPeriod for d, caller i's first
// at i/n of a period, and records how late each answer was: answer − (sent +
// loadSleep). A caller whose previous call is still out when its slot comes sends
// the next as soon as it is answered. cpu, started by the caller, is stopped at the
// end.
func (e *env) schedule(ctx context.Context, label string, n int, d time.Duration, call func(ctx context.Context, i int) (ok bool, err error), cpu *cpuMeter) (lateRun, error) {
	var mu sync.Mutex // guards out
	out := lateRun{cpu: cpu}
	var done, worst atomic.Int64
	stop := e.prog.every(func() string {
		return fmt.Sprintf("%s: %d calls answered, the latest by %v at most", label, done.Load(), time.Duration(worst.Load()).Round(time.Millisecond))
	})
	defer stop()
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	end := start.Add(d)
	for i := range n {
		g.Go(func() error {
			offset := loadPeriod * time.Duration(i) / time.Duration(n)
			for slot := start.Add(offset); slot.Before(end); slot = slot.Add(loadPeriod) {
				behind := false
				if wait := time.Until(slot); wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-t.C:
					case <-gctx.Done():
						t.Stop()
						return gctx.Err()
					}
				} else {
					behind = wait < -time.Millisecond
				}
				wctx, cancel := e.waitCtx(gctx)
				sent := time.Now()
				ok, err := call(wctx, i)
				late := time.Since(sent) - loadSleep
				cancel()
				if err != nil {
					return fmt.Errorf("caller %d: %w", i, err)
				}
				done.Add(1)
				for w := worst.Load(); int64(late) > w && !worst.CompareAndSwap(w, int64(late)); w = worst.Load() {
				}
				mu.Lock()
				out.late = append(out.late, late)
				if !ok {
					out.failed++
				}
				if behind {
					out.behind++
				}
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	out.elapsed = time.Since(start)
	out.cpu.stop()
	if err == nil && len(out.late) == 0 {
		err = errors.New("no call was answered")
	}
	return out, err
}
