package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termhost/termhost/internal/bench"
	"github.com/termhost/termhost/internal/bench/hoststart"
	"github.com/termhost/termhost/internal/bench/report"
)

// benchCmd is `termhost bench`: the scenarios of package bench against a running host
// (--url, --token) or, without --url, against a host it starts in this process.
func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := bench.DefaultSizes()
	url := fs.String("url", "", "a running host's address, ws://HOST:PORT/; without it the bench starts a host (see --host)")
	hostMode := fs.String("host", "process", "without --url: process (this binary's serve, in a process of its own; so are the cluster scenario's nodes) or inprocess (in the bench's process, the cluster scenario's nodes too: goroutines counted, the host in --cpuprofile)")
	token := fs.String("token", "", "the token to sign in with (an owner's); with --url")
	hostPID := fs.Int("host-pid", 0, "with --url: the host's pid, so its memory, descriptors and children can be read from /proc")
	ptyMode := fs.String("pty", "auto", "auto|always|never: how the started host runs terminals")
	shell := fs.String("shell", "", "the host's shell, which the raw baselines run too (default: the host's own, as its terminals' title says)")
	scenarioList := fs.String("scenario", "", "scenarios to run, comma-separated: "+strings.Join(bench.Names(), ",")+" (default "+strings.Join(bench.DefaultNames(), ",")+")")
	asJSON := fs.Bool("json", false, "print the report as JSON on stdout")
	throughput := byteSize(d.ThroughputBytes)
	fs.Var(&throughput, "throughput-bytes", "N in head -c N /dev/zero | base64 -w 100 (suffixes kB, MB, GB, KiB, MiB, GiB)")
	echoKeys := fs.Int("echo-keys", d.EchoKeys, "keystrokes timed by the echo scenario")
	fanout := byteSize(d.FanoutBytes)
	fs.Var(&fanout, "fanout-bytes", "N for each fan-out flood")
	fanoutSubs := intList(d.FanoutSubscribers)
	fs.Var(&fanoutSubs, "fanout-subscribers", "subscriber counts, one fan-out run each")
	churnCycles := fs.Int("churn-cycles", d.ChurnCycles, "create/run/exit/dispose cycles of the churn run with the most clients (the other runs and the raw spawns do a quarter)")
	churnClients := intList(d.ChurnClients)
	fs.Var(&churnClients, "churn-clients", "concurrent clients, one churn run each")
	idle := fs.Int("idle-terminals", d.IdleTerminals, "idle shells the idle scenario opens")
	slow := byteSize(d.SlowBytes)
	fs.Var(&slow, "slow-bytes", "N for the slow-reader flood")
	sessionCounts := intList(d.SessionCounts)
	fs.Var(&sessionCounts, "session-counts", "sessions at once, one sessions run each")
	sessionsShort := fs.Duration("sessions-run", d.SessionsShort, "how long each sessions run lasts")
	sessionsLong := fs.Duration("sessions-long-run", d.SessionsLong, "how long the one-session run of a long-lived chat lasts (negative: none)")
	toolCalls := fs.Int("tool-calls", d.ToolCalls, "bash calls of true the tools scenario times (and as many raw commands)")
	toolsLoadSessions := fs.Int("tools-load-sessions", d.ToolsLoadSessions, "agents tools-load runs at once, each a session and an MCP connection of its own")
	toolsLoadRun := fs.Duration("tools-load-run", d.ToolsLoadDuration, "how long tools-load's host run and each raw run last")
	agentCounts := intList(d.AgentSessionCounts)
	fs.Var(&agentCounts, "agent-session-counts", "sessions at once, each with an agent process of its own, one agents run each")
	agentsRun := fs.Duration("agents-run", d.AgentsDuration, "how long each agents run lasts, host and raw")
	clusterTerminals := fs.Int("cluster-terminals", d.ClusterTerminals, "terminals the cluster scenario opens across its three nodes")
	openRounds := fs.Int("open-rounds", d.OpenRounds, "rounds the open scenario times, each a plain and an integrated terminal and both raw")
	busy := fs.Int("busy", d.BusySpinners, "goroutines the busy scenario's neighbour process keeps spinning")
	var hostEnv stringList
	fs.Var(&hostEnv, "host-env", "with --host process: KEY=VALUE added to the host's environment, and to the cluster scenario's nodes' (GOMAXPROCS=1, GODEBUG=…); may be repeated")
	runs := fs.Int("runs", 1, "run the scenarios this many times against the same host and report each figure's median and spread")
	timeout := fs.Duration("wait-timeout", 120*time.Second, "bound on each single wait for the host")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench's process (the host too with --host inprocess) to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the run to this file")
	userRC := fs.Bool("user-rc", false, "let the started host's shells read your rc files; by default they run with HOME set to an empty folder, so what ~/.bashrc does is not in the figures")
	logLevel := fs.String("log-level", "warn", "the started host's log level on stderr: debug|info|warn|error")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("bench takes no arguments, got %q", fs.Args())}
	}
	if *runs < 1 {
		return usageError{fmt.Errorf("--runs: want 1 or more, got %d", *runs)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level: %v", err)}
	}

	cfg := bench.Config{
		URL:     *url,
		Token:   *token,
		HostPID: *hostPID,
		Shell:   *shell,
		Sizes: bench.Sizes{
			ThroughputBytes:    int64(throughput),
			EchoKeys:           *echoKeys,
			FanoutBytes:        int64(fanout),
			FanoutSubscribers:  fanoutSubs,
			ChurnCycles:        *churnCycles,
			ChurnClients:       churnClients,
			IdleTerminals:      *idle,
			SlowBytes:          int64(slow),
			SessionCounts:      sessionCounts,
			SessionsShort:      *sessionsShort,
			SessionsLong:       *sessionsLong,
			ToolCalls:          *toolCalls,
			ToolsLoadSessions:  *toolsLoadSessions,
			ToolsLoadDuration:  *toolsLoadRun,
			AgentSessionCounts: agentCounts,
			AgentsDuration:     *agentsRun,
			ClusterTerminals:   *clusterTerminals,
			OpenRounds:         *openRounds,
			BusySpinners:       *busy,
		},
		Progress:    stderr,
		WaitTimeout: *timeout,
	}
	if *scenarioList != "" {
		cfg.Scenarios = strings.Split(*scenarioList, ",")
		for _, name := range cfg.Scenarios {
			if !slices.Contains(bench.Names(), strings.TrimSpace(name)) {
				return usageError{fmt.Errorf("--scenario: no scenario %q (there are %s)", name, strings.Join(bench.Names(), ", "))}
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The agents scenario runs this binary's bench-agent, raw and (on a host the
	// bench starts) behind its sessions.
	if exe, err := os.Executable(); err == nil {
		cfg.AgentCommand = []string{exe, "bench-agent"}
		cfg.BusyCommand = []string{exe, "bench-busy"}
	}

	if cfg.URL == "" {
		closeHost, err := startBenchHost(&cfg, *hostMode, *ptyMode, *shell, !*userRC, *logLevel, level, hostEnv, stderr)
		if err != nil {
			return err
		}
		defer func() {
			if err := closeHost(); err != nil {
				fmt.Fprintln(stderr, "termhost bench:", err)
			}
		}()
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var reps []*report.Report
	for i := range *runs {
		if *runs > 1 {
			fmt.Fprintf(stderr, "bench: run %d of %d\n", i+1, *runs)
		}
		rep, err := bench.Run(ctx, cfg)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		if ctx.Err() != nil {
			break
		}
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		runtime.GC()
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	var err error
	switch {
	case len(reps) > 1 && *asJSON:
		err = report.Summarize(reps).WriteJSON(stdout)
	case len(reps) > 1:
		for _, rep := range reps {
			if err = rep.WriteText(stdout); err != nil {
				return err
			}
		}
		fmt.Fprintln(stdout)
		err = report.Summarize(reps).WriteText(stdout)
	case *asJSON:
		err = reps[0].WriteJSON(stdout)
	default:
		err = reps[0].WriteText(stdout)
	}
	if err != nil {
		return err
	}
	// A missed target is information; a scenario that could not run is a failure.
	var failed []string
	for _, rep := range reps {
		for _, s := range rep.Scenarios {
			if s.Error != "" && !slices.Contains(failed, s.Name) {
				failed = append(failed, s.Name)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: scenario(s) %s could not run", strings.Join(failed, ", "))
	}
	return nil
}

// startBenchHost starts the host the bench measures when no --url names one, and
// points cfg at it; the returned function stops it.
func startBenchHost(cfg *bench.Config, mode, ptyMode, shell string, emptyHome bool, logLevel string, level slog.Level, env []string, stderr io.Writer) (func() error, error) {
	usePty, err := choosePty(ptyMode)
	if err != nil {
		return nil, usageError{err}
	}
	switch mode {
	case "process":
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: finding this binary to run its serve: %w", err)
		}
		servePty := "never"
		if usePty {
			servePty = "always"
		}
		host, err := hoststart.StartProcess(hoststart.ProcessOptions{
			Exe: exe, Pty: servePty, Shell: shell, EmptyHome: emptyHome, LogLevel: logLevel, Logs: stderr,
			Agents: []string{bench.AgentProvider + "=" + shellQuote(exe) + " bench-agent"},
			Env:    env,
		})
		if err != nil {
			return nil, err
		}
		cfg.URL, cfg.Token, cfg.HostPID, cfg.Started = host.URL, host.Token, host.PID, true
		// The cluster scenario's nodes are then processes of their own too, with
		// the same environment added.
		cfg.ClusterExe, cfg.ClusterEnv = exe, env
		return host.Close, nil
	case "inprocess":
		if len(env) > 0 {
			return nil, usageError{errors.New("--host-env needs --host process: an in-process host shares the bench's environment")}
		}
		host, err := hoststart.StartLocal(hoststart.LocalOptions{
			UsePty:    usePty,
			Shell:     shell,
			EmptyHome: emptyHome,
			Logger:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
		})
		if err != nil {
			return nil, err
		}
		cfg.URL, cfg.Token, cfg.InProcess = host.URL, host.Token, true
		return host.Close, nil
	default:
		return nil, usageError{fmt.Errorf("--host: want process or inprocess, got %q", mode)}
	}
}

// byteSize is a flag holding a byte count, with decimal (kB, MB, GB) or binary (KiB,
// MiB, GiB) suffixes.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, errors.New("want a size such as 50MB, 200kB or 1048576")
	}
	return int64(v * float64(mult)), nil
}

// intList is a flag holding comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return fmt.Errorf("want positive whole numbers separated by commas, got %q", s)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

// shellQuote quotes a word for a command line --agent splits (agents.ParseCommand).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stringList is a flag that may be repeated, each value kept.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(s string) error {
	if !strings.Contains(s, "=") {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	*l = append(*l, s)
	return nil
}
