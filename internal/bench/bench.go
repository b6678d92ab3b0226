// Package bench is `termhost bench`: scenarios that drive a host over AHP the way its
// clients do and measure it against the same work done raw, in the same run, on the
// same machine. Machines here are noisy and small, so a figure alone says little; the
// ratio to the raw limit beside it is what to watch.
//
// Each scenario prints its figures, the raw figure, their ratio and the target it is
// held to (PASS or MISS). A miss is information, never an error: Run fails only when
// a scenario cannot be carried out at all, and even then the other scenarios run.
//
// The host is either one already running (a URL and a token) or one started in this
// process (hoststart.StartLocal). In process, the host's memory, descriptors and
// goroutines can be read from this process, and the bench's clients share the host's
// CPUs, which is said beside the figures it affects.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/procstat"
)

// Sizes are how much work each scenario does. The zero value of a field means its
// default (DefaultSizes), chosen so the whole default run takes under about three
// minutes on a 2-core machine.
type Sizes struct {
	// ThroughputBytes is N in `head -c N /dev/zero | base64 -w 100`: the output is
	// about 4/3 of it. Default 50 MB.
	ThroughputBytes int64
	// EchoKeys is how many keystrokes the echo scenario times. Default 500.
	EchoKeys int
	// FanoutBytes is N for each fan-out run. Default 10 MB: 50 subscribers
	// of a 50 MB flood alone would take minutes on a 2-core machine.
	FanoutBytes int64
	// FanoutSubscribers are the subscriber counts, each a run of its own.
	// Default 1, 10, 50.
	FanoutSubscribers []int
	// ChurnCycles is how many create/run/exit/dispose cycles the churn run with
	// the most clients does, before the host's children, descriptors and goroutines
	// are counted. The other runs, and the raw spawns, only measure a rate and do a
	// quarter as many. Default 2,000.
	ChurnCycles int
	// ChurnClients are the numbers of concurrent clients, each a run of its own.
	// Default 1, 8.
	ChurnClients []int
	// IdleTerminals is how many idle shells the idle scenario opens. Default 1,000.
	IdleTerminals int
	// SlowBytes is N for the slow-reader flood. Default 100 MB.
	SlowBytes int64
	// SessionCounts are the numbers of sessions the sessions scenario runs at once,
	// each a run of its own lasting SessionsShort. Default 1, 10, 50.
	SessionCounts []int
	// SessionsShort is how long each sessions run lasts. Default 3 s.
	SessionsShort time.Duration
	// SessionsLong is how long the one-session run that shows a chat's later turns
	// beside its first lasts. Default 30 s; negative leaves the run out.
	SessionsLong time.Duration
	// ToolCalls is how many `bash` calls of `true` the tools scenario times, and
	// as many raw commands. Default 200.
	ToolCalls int
	// ToolsLoadSessions is how many agents tools-load runs at once, each a
	// session and an MCP connection of its own, and as many raw shells. Default 100.
	ToolsLoadSessions int
	// ToolsLoadDuration is how long tools-load's host run lasts, and each raw run.
	// Default 60 s.
	ToolsLoadDuration time.Duration
	// AgentSessionCounts are the numbers of sessions the agents scenario runs at
	// once, each with an agent process of its own, each a run of its own lasting
	// AgentsDuration, and as many raw agents. Default 1, 10, 50.
	AgentSessionCounts []int
	// AgentsDuration is how long each agents run lasts, host and raw. Default 5 s.
	AgentsDuration time.Duration
	// ClusterTerminals is how many terminals the cluster scenario opens across its
	// nodes before timing how long every node takes to list them all. Default 1,000.
	ClusterTerminals int
	// OpenRounds is how many rounds the open scenario times, each opening a plain
	// and an integrated terminal and both raw. Default 20.
	OpenRounds int
	// BusySpinners is how many goroutines the busy scenario's neighbour process
	// keeps spinning. Default: the machine's CPUs.
	BusySpinners int
}

// DefaultSizes are the sizes of a default run.
func DefaultSizes() Sizes {
	return Sizes{
		ThroughputBytes:    50_000_000,
		EchoKeys:           500,
		FanoutBytes:        10_000_000,
		FanoutSubscribers:  []int{1, 10, 50},
		ChurnCycles:        2000,
		ChurnClients:       []int{1, 8},
		IdleTerminals:      1000,
		SlowBytes:          100_000_000,
		SessionCounts:      []int{1, 10, 50},
		SessionsShort:      3 * time.Second,
		SessionsLong:       30 * time.Second,
		ToolCalls:          200,
		ToolsLoadSessions:  100,
		ToolsLoadDuration:  60 * time.Second,
		AgentSessionCounts: []int{1, 10, 50},
		AgentsDuration:     5 * time.Second,
		ClusterTerminals:   1000,
		OpenRounds:         20,
		BusySpinners:       runtime.NumCPU(),
	}
}

func (s Sizes) withDefaults() Sizes {
	d := DefaultSizes()
	if s.ThroughputBytes <= 0 {
		s.ThroughputBytes = d.ThroughputBytes
	}
	if s.EchoKeys <= 0 {
		s.EchoKeys = d.EchoKeys
	}
	if s.FanoutBytes <= 0 {
		s.FanoutBytes = d.FanoutBytes
	}
	if len(s.FanoutSubscribers) == 0 {
		s.FanoutSubscribers = d.FanoutSubscribers
	}
	if s.ChurnCycles <= 0 {
		s.ChurnCycles = d.ChurnCycles
	}
	if len(s.ChurnClients) == 0 {
		s.ChurnClients = d.ChurnClients
	}
	if s.IdleTerminals <= 0 {
		s.IdleTerminals = d.IdleTerminals
	}
	if s.SlowBytes <= 0 {
		s.SlowBytes = d.SlowBytes
	}
	if len(s.SessionCounts) == 0 {
		s.SessionCounts = d.SessionCounts
	}
	if s.SessionsShort <= 0 {
		s.SessionsShort = d.SessionsShort
	}
	if s.SessionsLong == 0 {
		s.SessionsLong = d.SessionsLong
	}
	if s.ToolCalls <= 0 {
		s.ToolCalls = d.ToolCalls
	}
	if s.ToolsLoadSessions <= 0 {
		s.ToolsLoadSessions = d.ToolsLoadSessions
	}
	if s.ToolsLoadDuration <= 0 {
		s.ToolsLoadDuration = d.ToolsLoadDuration
	}
	if len(s.AgentSessionCounts) == 0 {
		s.AgentSessionCounts = d.AgentSessionCounts
	}
	if s.AgentsDuration <= 0 {
		s.AgentsDuration = d.AgentsDuration
	}
	if s.ClusterTerminals <= 0 {
		s.ClusterTerminals = d.ClusterTerminals
	}
	if s.OpenRounds <= 0 {
		s.OpenRounds = d.OpenRounds
	}
	if s.BusySpinners <= 0 {
		s.BusySpinners = d.BusySpinners
	}
	return s
}

// Config is one bench run.
type Config struct {
	// URL is the host's WebSocket address, ws://HOST:PORT/; required.
	URL string
	// Token signs the bench in (as ?tkn=); it needs the owner's grants.
	Token string
	// InProcess says the host runs in this process (hoststart.StartLocal): its
	// memory, descriptors, children and goroutines are then this process's.
	InProcess bool
	// Started says the bench started the host as a process of its own
	// (hoststart.StartProcess), rather than measuring one somebody runs.
	Started bool
	// HostPID is the host's process id for a host in another process, when known:
	// its memory, descriptors and children are read from /proc. 0 leaves them out.
	HostPID int
	// Shell is the shell the raw baselines run `-c` with; it should be the host's own
	// so host and raw do the same work. Default: the host's default title says which;
	// else $SHELL, else /bin/sh.
	Shell string
	// Scenarios to run, by name (Names); empty means DefaultNames, in the order of Names.
	Scenarios []string
	Sizes     Sizes
	// AgentCommand is the argv of `termhost bench-agent`, which the agents scenario's
	// raw side runs and a host the bench starts has as its agent "bench"
	// (AgentProvider). Empty: the agents scenario cannot run.
	AgentCommand []string
	// BusyCommand is the argv of `termhost bench-busy` without its count: the busy
	// scenario's neighbour process. Empty: the busy scenario cannot run.
	BusyCommand []string
	// ClusterExe is the termhost binary the cluster scenario runs each of its nodes
	// as, `ClusterExe serve --cluster …` in a process of its own; empty runs the
	// nodes in this process. `termhost bench --host process` sets it to itself.
	ClusterExe string
	// ClusterEnv are KEY=VALUE pairs added to each node process's environment, as
	// `termhost bench --host-env` adds them to the host's.
	ClusterEnv []string
	// Progress receives a line now and then during long scenarios; nil is quiet.
	Progress io.Writer
	// WaitTimeout bounds each single wait on the host (an answer, an exit, a
	// stream's end). Default 120 s.
	WaitTimeout time.Duration
}

// scenario is one named measurement.
type scenario struct {
	name    string
	summary func(s Sizes) string
	run     func(ctx context.Context, e *env, r *report.Result) error
	// onlyByName keeps a long scenario out of a run that names none.
	onlyByName bool
}

var scenarios = []scenario{
	{"throughput", throughputSummary, runThroughput, false},
	{"echo", echoSummary, runEcho, false},
	// open times starts, so it runs before the scenarios that load the host.
	{"open", openSummary, runOpen, false},
	// tools times latencies too, so it runs before the scenarios that load the host.
	{"tools", toolsSummary, runTools, false},
	{"fanout", fanoutSummary, runFanout, false},
	// slow runs before churn and idle: those open thousands of terminals, and what
	// the host keeps of them would be in its RSS figures.
	{"slow", slowSummary, runSlow, false},
	// busy starts a CPU-bound neighbour and stops it when its floods are done.
	{"busy", busySummary, runBusy, false},
	{"churn", churnSummary, runChurn, false},
	{"idle", idleSummary, runIdle, false},
	// sessions takes about a minute and a half; it runs when it is named.
	{"sessions", sessionsSummary, runSessions, true},
	// tools-load takes over three minutes: 100 agents on the host and two raw sides,
	// 60 s each.
	{"tools-load", toolsLoadSummary, runToolsLoad, true},
	// agents runs 1, 10 and 50 agent processes behind sessions, and as many raw, 5 s
	// each: about half a minute with their start.
	{"agents", agentsSummary, runAgents, true},
	// cluster starts three nodes of its own (processes with Config.ClusterExe) and
	// opens 1,000 terminals across them.
	{"cluster", clusterSummary, runCluster, true},
}

// Names lists the scenarios in the order a run runs them; those a run that names
// none leaves out (DefaultNames) included.
func Names() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.name
	}
	return out
}

// env is what every scenario works with.
type env struct {
	cfg    Config
	sizes  Sizes
	target wsclient.Target
	run    string // a random tag in every URI this run creates
	pty    bool   // the host's terminals run under a pseudoterminal
	shell  string // the shell the raw baselines run
	pid    int    // the host's pid, 0 when unknown
	prog   *progress
	// baseChildren is how many child processes the host had when the open scenario
	// began (waitChildrenGone).
	baseChildren int
}

// Run runs the chosen scenarios against the host cfg names and reports every one of
// them, including those that failed (their Error says why). The error is non-nil only
// when the host cannot be reached or a scenario name is unknown.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	if cfg.URL == "" {
		return nil, errors.New("bench: a host URL is required")
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 120 * time.Second
	}
	chosen, err := choose(cfg.Scenarios)
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, sizes: cfg.Sizes.withDefaults(), target: wsclient.Target{URL: cfg.URL, Token: cfg.Token}, prog: &progress{w: cfg.Progress}}
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	e.run = hex.EncodeToString(tag[:])
	switch {
	case cfg.InProcess:
		e.pid = os.Getpid()
	case cfg.HostPID > 0:
		e.pid = cfg.HostPID
	}
	rep := &report.Report{Started: time.Now(), Machine: machineInfo()}
	hostShell, err := e.probe(ctx)
	if err != nil {
		return nil, err
	}
	e.shell = cfg.Shell
	if e.shell == "" {
		e.shell = pickShell(hostShell)
	}
	rep.Host = report.HostInfo{URL: cfg.URL, InProcess: cfg.InProcess, Started: cfg.Started, PID: e.pid, Pty: e.pty, Shell: e.shell, HostShell: hostShell}
	for _, s := range chosen {
		r := &report.Result{Name: s.name, Summary: s.summary(e.sizes), Params: map[string]any{}}
		start := time.Now()
		e.prog.say("%s: %s", s.name, r.Summary)
		if err := s.run(ctx, e, r); err != nil {
			r.Error = err.Error()
			e.prog.say("%s: failed: %v", s.name, err)
		}
		r.Seconds = time.Since(start).Seconds()
		rep.Scenarios = append(rep.Scenarios, r)
		if ctx.Err() != nil {
			break
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

// DefaultNames lists the scenarios a run that names none runs: all but the long ones.
func DefaultNames() []string {
	var out []string
	for _, s := range scenarios {
		if !s.onlyByName {
			out = append(out, s.name)
		}
	}
	return out
}

func choose(names []string) ([]scenario, error) {
	if len(names) == 0 {
		names = DefaultNames()
	}
	var out []scenario
	for _, n := range names {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == n })
		if i < 0 {
			return nil, fmt.Errorf("bench: no scenario %q (there are %s)", n, strings.Join(Names(), ", "))
		}
		if !slices.ContainsFunc(out, func(s scenario) bool { return s.name == n }) {
			out = append(out, scenarios[i])
		}
	}
	return out, nil
}

// probe opens one terminal to learn how the host runs them: under a pseudoterminal
// or not (the snapshot's isPty), and with which shell (a default title is the
// shell's base name).
func (e *env) probe(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.WaitTimeout)
	defer cancel()
	k, err := wsclient.DialControl(ctx, e.target, "bench-probe-"+e.run)
	if err != nil {
		return "", err
	}
	defer k.Close()
	uri := e.uri("probe", 0)
	w := k.Watch(uri)
	if err := k.Create(ctx, uri, "echo probe"); err != nil {
		return "", fmt.Errorf("bench: the host would not open a terminal: %w", err)
	}
	st, err := k.SubscribeTerminal(ctx, uri)
	if err != nil {
		return "", err
	}
	e.pty = st.IsPty != nil && *st.IsPty
	if err := k.WaitExited(ctx, w, st); err != nil {
		return "", err
	}
	return st.Title, k.Dispose(ctx, uri)
}

// pickShell is the local shell named like the host's, else the default a host
// would pick: $SHELL, else /bin/sh.
func pickShell(hostShell string) string {
	for _, dir := range []string{"/bin", "/usr/bin", "/usr/local/bin"} {
		if hostShell == "" {
			break
		}
		p := filepath.Join(dir, hostShell)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if s := os.Getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/sh"
}

// uri names a terminal of this run.
func (e *env) uri(what string, i int) string {
	return fmt.Sprintf("ahp-terminal:/bench-%s-%s-%d", e.run, what, i)
}

// waitCtx bounds one wait.
func (e *env) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.WaitTimeout)
}

// hostRSS is the host's resident set, when it can be read.
func (e *env) hostRSS() (int64, bool) {
	if e.pid == 0 {
		return 0, false
	}
	return procstat.RSSBytes(e.pid)
}

func machineInfo() report.MachineInfo {
	m := report.MachineInfo{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	return m
}

// progress writes occasional lines about long work to stderr.
type progress struct {
	w  io.Writer
	mu sync.Mutex // serializes lines
}

func (p *progress) say(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "bench: "+format+"\n", args...)
}

// every says what status returns every two seconds until the returned stop is called.
func (p *progress) every(status func() string) (stop func()) {
	if p.w == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.say("%s", status())
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// dialCtl opens a control connection for a scenario.
func (e *env) dialCtl(ctx context.Context, label string) (*wsclient.Control, error) {
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	return wsclient.DialControl(wctx, e.target, fmt.Sprintf("bench-%s-%s", label, e.run))
}

func (e *env) machineCPUs() int { return runtime.NumCPU() }

// dialCtls opens n control connections labelled prefix-0…; closeAll closes those that
// opened, and is safe to defer even when an error is returned.
func (e *env) dialCtls(ctx context.Context, prefix string, n int) (ctls []*wsclient.Control, closeAll func(), err error) {
	ctls = make([]*wsclient.Control, 0, n)
	closeAll = func() {
		for _, k := range ctls {
			k.Close()
		}
	}
	for i := 0; i < n; i++ {
		k, err := e.dialCtl(ctx, fmt.Sprintf("%s-%d", prefix, i))
		if err != nil {
			return ctls, closeAll, err
		}
		ctls = append(ctls, k)
	}
	return ctls, closeAll, nil
}
