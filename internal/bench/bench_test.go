package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/bench/hoststart"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/pty"
)

// tinySizes keep each scenario to a moment: the tests check that every scenario runs
// end to end against a real host and reports sane figures, never how fast anything was.
var tinySizes = Sizes{
	ThroughputBytes:   200_000,
	EchoKeys:          20,
	FanoutBytes:       200_000,
	FanoutSubscribers: []int{1, 3},
	ChurnCycles:       20,
	ChurnClients:      []int{1, 2},
	IdleTerminals:     10,
	SlowBytes:         3_000_000,
	SessionCounts:     []int{1, 2},
	SessionsShort:     300 * time.Millisecond,
	SessionsLong:      600 * time.Millisecond,
}

// run runs scenarios against a host started in this process for the test.
func run(t *testing.T, usePty bool, names ...string) *report.Report {
	t.Helper()
	return runWith(t, usePty, nil, names...)
}

// runWith is run with the config changed by set first, when set is not nil.
func runWith(t *testing.T, usePty bool, set func(*Config), names ...string) *report.Report {
	t.Helper()
	return runOnHost(t, hoststart.LocalOptions{UsePty: usePty, EmptyHome: true}, set, names...)
}

// runOnHost is runWith against a host started with opts.
func runOnHost(t *testing.T, opts hoststart.LocalOptions, set func(*Config), names ...string) *report.Report {
	t.Helper()
	h, err := hoststart.StartLocal(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{
		URL: h.URL, Token: h.Token, InProcess: true,
		Scenarios: names, Sizes: tinySizes, WaitTimeout: 30 * time.Second,
		Progress: testWriter{t},
	}
	if set != nil {
		set(&cfg)
	}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != len(names) {
		t.Fatalf("ran %d scenarios, want %d", len(rep.Scenarios), len(names))
	}
	for _, s := range rep.Scenarios {
		if s.Error != "" {
			t.Fatalf("%s failed: %s\n%s", s.Name, s.Error, text(rep))
		}
	}
	return rep
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func text(rep *report.Report) string {
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	return b.String()
}

// figure finds a figure by the start of its name, failing the test with the report
// when it is missing.
func figure(t *testing.T, rep *report.Report, scenario, name string) report.Figure {
	t.Helper()
	for _, s := range rep.Scenarios {
		if s.Name != scenario {
			continue
		}
		for _, f := range s.Figures {
			if strings.HasPrefix(f.Name, name) {
				return f
			}
		}
	}
	t.Fatalf("no figure %q in %s:\n%s", name, scenario, text(rep))
	return report.Figure{}
}

// positive asserts a figure measured something, and that its raw counterpart and
// ratio did too where it has them.
func positive(t *testing.T, rep *report.Report, f report.Figure) {
	t.Helper()
	if f.Value <= 0 || (f.Raw != nil && *f.Raw <= 0) || (f.Ratio != nil && *f.Ratio <= 0) {
		t.Fatalf("figure %q is not a positive measurement: %+v\n%s", f.Name, f, text(rep))
	}
}

func hasTarget(t *testing.T, rep *report.Report, f report.Figure) {
	t.Helper()
	if f.Target == "" || f.Pass == nil {
		t.Fatalf("figure %q has no target verdict\n%s", f.Name, text(rep))
	}
}

func ptyOrSkip(t *testing.T) {
	if !pty.Available() {
		t.Skip("this machine cannot open a pseudoterminal")
	}
}

func TestThroughput(t *testing.T) {
	for _, mode := range []struct {
		name string
		pty  bool
	}{{"pty", true}, {"pipes", false}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.pty {
				ptyOrSkip(t)
			}
			rep := run(t, mode.pty, "throughput")
			if rep.Host.Pty != mode.pty {
				t.Fatalf("the probe says pty=%v for a host started with pty=%v", rep.Host.Pty, mode.pty)
			}
			f := figure(t, rep, "throughput", "throughput, 1 subscriber")
			positive(t, rep, f)
			hasTarget(t, rep, f)
			got := figure(t, rep, "throughput", "output received")
			if want := floodOutputBytes(tinySizes.ThroughputBytes, mode.pty); got.Value < float64(want) || *got.Raw != float64(want) {
				t.Fatalf("host received %v bytes and raw read %v, want %d both\n%s", got.Value, *got.Raw, want, text(rep))
			}
		})
	}
}

func TestEcho(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "echo")
	median := figure(t, rep, "echo", "round trip, median")
	positive(t, rep, median)
	hasTarget(t, rep, median)
	p99 := figure(t, rep, "echo", "round trip, p99")
	positive(t, rep, p99)
	if p99.Value < median.Value {
		t.Fatalf("p99 %v below the median %v", p99.Value, median.Value)
	}
}

func TestFanout(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "fanout")
	positive(t, rep, figure(t, rep, "fanout", "per subscriber, 1 subscriber"))
	positive(t, rep, figure(t, rep, "fanout", "per subscriber, 3 subscriber"))
	positive(t, rep, figure(t, rep, "fanout", "all subscribers together, 3"))
	positive(t, rep, figure(t, rep, "fanout", "3 ÷ 1 subscriber"))
}

func TestChurn(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "churn")
	for _, name := range []string{"cycles per second, 1 client", "cycles per second, 2 client"} {
		positive(t, rep, figure(t, rep, "churn", name))
	}
	for _, name := range []string{"zombies right after", "zombies after settling", "children left", "descriptor delta", "goroutine delta"} {
		figure(t, rep, "churn", name)
	}
}

func TestIdle(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "idle")
	// Ten terminals may be within RSS's noise; then a note says so instead of a verdict.
	mem := figure(t, rep, "idle", "host memory per terminal (RSS")
	if mem.Value > 0 {
		hasTarget(t, rep, mem)
	} else if !strings.Contains(text(rep), "did not grow measurably") {
		t.Fatalf("no memory figure and no note why\n%s", text(rep))
	}
	// Ten raw shells may be below what RSS resolves; then a note says so.
	if mem.Raw == nil && !strings.Contains(text(rep), "raw shells' memory was below") {
		t.Fatalf("neither a raw memory figure nor why not\n%s", text(rep))
	}
	positive(t, rep, figure(t, rep, "idle", "open 10"))
	list := figure(t, rep, "idle", "list: initialize with the root")
	positive(t, rep, list)
	if !strings.Contains(list.Name, "terminals)") || strings.Contains(text(rep), "the root list showed") {
		t.Fatalf("the root list did not show every terminal\n%s", text(rep))
	}
	positive(t, rep, figure(t, rep, "idle", "subscribe to all 10"))
	positive(t, rep, figure(t, rep, "idle", "dispose all 10"))
}

func TestSlow(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "slow")
	positive(t, rep, figure(t, rep, "slow", "reader alone"))
	beside := figure(t, rep, "slow", "reader beside a slow one")
	positive(t, rep, beside)
	hasTarget(t, rep, beside)
	peak := figure(t, rep, "slow", "host peak RSS beside")
	positive(t, rep, peak)
	hasTarget(t, rep, peak)
	positive(t, rep, figure(t, rep, "slow", "bytes the slow one received"))
	t.Log(text(rep))
	if _, ok := rep.Scenarios[0].Params["slowClosed"]; !ok {
		t.Fatalf("the report does not say whether the slow connection was closed\n%s", text(rep))
	}
}

func TestSessions(t *testing.T) {
	ptyOrSkip(t)
	rep := run(t, true, "sessions")
	for _, name := range []string{"turns per second, 1 session(s), 300ms", "turns per second, 2 session(s), 300ms", "turns per second, 1 session(s), 600ms",
		"turn p50, 1 session(s), 300ms", "turn p99, 2 session(s)", "turn p50 vs interactive shell, 1 session(s), 300ms",
		"raw interactive shells per second, 2 goroutine(s)", "first turn p50, 1 fresh session(s) at once", "first turn p50, 2 fresh session(s) at once"} {
		positive(t, rep, figure(t, rep, "sessions", name))
	}
	hasTarget(t, rep, figure(t, rep, "sessions", "turn p50 vs interactive shell, 1 session(s), 300ms"))
	positive(t, rep, figure(t, rep, "sessions", "turn p50, the chat's first"))
	positive(t, rep, figure(t, rep, "sessions", "turn p50, the chat's last"))
	late := figure(t, rep, "sessions", "turn p50, last ÷ first")
	positive(t, rep, late)
	hasTarget(t, rep, late)
	if strings.Contains(text(rep), "failed to run") {
		t.Fatalf("turns failed\n%s", text(rep))
	}
}

// A run that names no scenario leaves the long ones out; naming one runs it.
func TestDefaultScenarios(t *testing.T) {
	if slices.Contains(DefaultNames(), "sessions") || !slices.Contains(Names(), "sessions") {
		t.Fatalf("default %v, all %v", DefaultNames(), Names())
	}
	all, err := choose(nil)
	if err != nil || len(all) != len(DefaultNames()) {
		t.Fatalf("choose(nil) = %d scenarios, %v", len(all), err)
	}
	named, err := choose([]string{"sessions"})
	if err != nil || len(named) != 1 || named[0].name != "sessions" {
		t.Fatalf("choose(sessions) = %v, %v", named, err)
	}
}

// TestJSONShape pins the shape of --json: what a script reading it relies on.
func TestJSONShape(t *testing.T) {
	rep := run(t, pty.Available(), "echo")
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Started *time.Time `json:"started"`
		Seconds *float64   `json:"seconds"`
		Host    *struct {
			URL       string `json:"url"`
			InProcess *bool  `json:"inProcess"`
			PID       int    `json:"pid"`
			Pty       *bool  `json:"pty"`
			Shell     string `json:"shell"`
			HostShell string `json:"hostShell"`
		} `json:"host"`
		Machine *struct {
			CPUs       int    `json:"cpus"`
			GOMAXPROCS int    `json:"gomaxprocs"`
			GoVersion  string `json:"goVersion"`
			OS         string `json:"os"`
			Arch       string `json:"arch"`
			Kernel     string `json:"kernel"`
			Load       string `json:"loadAverage"`
		} `json:"machine"`
		Scenarios []struct {
			Name    string         `json:"name"`
			Summary string         `json:"summary"`
			Params  map[string]any `json:"params"`
			Seconds *float64       `json:"seconds"`
			Notes   []string       `json:"notes"`
			Error   string         `json:"error"`
			Figures []struct {
				Name   string   `json:"name"`
				Value  *float64 `json:"value"`
				Unit   string   `json:"unit"`
				Raw    *float64 `json:"raw"`
				Ratio  *float64 `json:"ratio"`
				Target string   `json:"target"`
				Pass   *bool    `json:"pass"`
			} `json:"figures"`
		} `json:"scenarios"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decoding --json: %v\n%s", err, b.String())
	}
	if doc.Started == nil || doc.Seconds == nil || doc.Host == nil || doc.Machine == nil {
		t.Fatalf("top-level fields missing:\n%s", b.String())
	}
	if !strings.HasPrefix(doc.Host.URL, "ws://") || doc.Host.InProcess == nil || !*doc.Host.InProcess || doc.Host.PID == 0 || doc.Host.Pty == nil || doc.Host.Shell == "" {
		t.Fatalf("host: %+v", *doc.Host)
	}
	if doc.Machine.CPUs == 0 || doc.Machine.GOMAXPROCS == 0 || doc.Machine.GoVersion == "" || doc.Machine.OS == "" || doc.Machine.Arch == "" {
		t.Fatalf("machine: %+v", *doc.Machine)
	}
	if len(doc.Scenarios) != 1 || doc.Scenarios[0].Name != "echo" || doc.Scenarios[0].Summary == "" || doc.Scenarios[0].Seconds == nil || doc.Scenarios[0].Params["keystrokes"] != float64(tinySizes.EchoKeys) {
		t.Fatalf("scenarios: %s", b.String())
	}
	median := doc.Scenarios[0].Figures[0]
	if median.Name != "round trip, median" || median.Value == nil || median.Unit != report.UnitSeconds || median.Raw == nil || median.Ratio == nil || median.Target == "" || median.Pass == nil {
		t.Fatalf("the first echo figure: %+v", median)
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := Run(context.Background(), Config{URL: "ws://127.0.0.1:1/", Scenarios: []string{"nosuch"}})
	if err == nil || !strings.Contains(err.Error(), `no scenario "nosuch"`) {
		t.Fatalf("got %v", err)
	}
}

func TestFloodOutputBytes(t *testing.T) {
	// base64 of 150 bytes is 200 characters: two lines of 100.
	if got := floodOutputBytes(150, false); got != 202 {
		t.Fatalf("pipes: %d", got)
	}
	if got := floodOutputBytes(150, true); got != 204 {
		t.Fatalf("pty: %d", got)
	}
}

// A stream that subscribes to a terminal after it printed keeps what its snapshot
// holds (the initialize's answer): the echo scenario waits for cat's "ready" there
// as well as in the data after it. Before, the answer was read and dropped, and a
// "ready" printed before the subscribe was waited for until the deadline.
func TestStreamKeepsItsSnapshot(t *testing.T) {
	ctx, tg, k := ptyHostControl(t, "printer")
	const uri = "ahp-terminal:/printed-before"
	w := k.Watch(uri)
	if err := k.Create(ctx, uri, echoCommandPty); err != nil {
		t.Fatal(err)
	}
	snap, err := k.SubscribeTerminal(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	for text := snap.Text(); !strings.Contains(text, "ready"); {
		select {
		case env := <-w.C:
			if env.Action != nil && strings.Contains(string(env.Action), "ready") {
				text = "ready"
			}
		case <-ctx.Done():
			t.Fatal("cat never said ready")
		}
	}
	s, err := wsclient.DialStream(ctx, tg, "late-reader", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !bytes.Contains(s.Answer(), []byte("ready")) {
		t.Fatalf("the stream's snapshot lacks what the terminal printed before it: %q", s.Answer())
	}
}

// A terminal that has ended before a flood's reader subscribes (its shell could not
// start: a folder gone, say) sends no terminal/exited after the subscribe; its
// snapshot says so. Both readers end at once with how it ended and its last line,
// where before they waited out the bench's deadline (two minutes) and said only
// "connection ended without a close frame".
func TestReadersOfAnEndedTerminalEndAtOnce(t *testing.T) {
	ctx, tg, k := ptyHostControl(t, "ender")
	const uri = "ahp-terminal:/ended-before"
	w := k.Watch(uri)
	if err := k.Create(ctx, uri, "echo gone for good; exit 3"); err != nil {
		t.Fatal(err)
	}
	snap, err := k.SubscribeTerminal(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	for exited := snap.ExitCode != nil; !exited; {
		select {
		case env := <-w.C:
			exited = env.Action != nil && bytes.Contains(env.Action, []byte(`"terminal/exited"`))
		case <-ctx.Done():
			t.Fatal("the terminal never exited")
		}
	}
	c, err := wsclient.DialCounter(ctx, tg, "late-counter", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := wsclient.DialStream(ctx, tg, "late-stream", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, end := range map[string]wsclient.End{"counter": c.Drain(ctx, nil), "stream": s.Drain(ctx, nil)} {
		if ctx.Err() != nil {
			t.Fatalf("%s: waited out the deadline", name)
		}
		if !end.Before || !end.Exited || end.Err == nil {
			t.Fatalf("%s: ended %+v, want the exit seen in the snapshot", name, end)
		}
		for _, want := range []string{"code 3", "gone for good"} {
			if !strings.Contains(end.Err.Error(), want) {
				t.Errorf("%s: %q does not say %q", name, end.Err, want)
			}
		}
	}
}

// ptyHostControl starts a host in this process with pseudoterminals and connects a
// control client to it as clientID; both end with the test, and ctx bounds it.
func ptyHostControl(t *testing.T, clientID string) (context.Context, wsclient.Target, *wsclient.Control) {
	t.Helper()
	ptyOrSkip(t)
	h, err := hoststart.StartLocal(hoststart.LocalOptions{UsePty: true, EmptyHome: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	tg := wsclient.Target{URL: h.URL, Token: h.Token}
	k, err := wsclient.DialControl(ctx, tg, clientID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return ctx, tg, k
}
