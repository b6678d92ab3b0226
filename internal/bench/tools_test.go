package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/bench/hoststart"
	"github.com/termhost/termhost/internal/bench/report"
)

// toolsSizes are tinySizes with the tools scenarios' own kept to a moment.
func toolsSizes() Sizes {
	s := tinySizes
	s.ToolCalls = 20
	s.ToolsLoadSessions = 5
	s.ToolsLoadDuration = 3 * time.Second
	return s
}

// runSized runs scenarios with sizes against a pty host started in this process.
func runSized(t *testing.T, sizes Sizes, names ...string) *report.Report {
	t.Helper()
	ptyOrSkip(t)
	h, err := hoststart.StartLocal(hoststart.LocalOptions{UsePty: true, EmptyHome: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := Run(ctx, Config{
		URL: h.URL, Token: h.Token, InProcess: true,
		Scenarios: names, Sizes: sizes, WaitTimeout: 30 * time.Second,
		Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Scenarios {
		if s.Error != "" {
			t.Fatalf("%s failed: %s\n%s", s.Name, s.Error, text(rep))
		}
	}
	return rep
}

func TestTools(t *testing.T) {
	rep := runSized(t, toolsSizes(), "tools")
	for _, name := range []string{"bash call, median", "bash call, p90", "bash call, p99", "bash call, max",
		"bash call vs `bash -c true` spawned, median", "bash call vs the host's shell"} {
		f := figure(t, rep, "tools", name)
		positive(t, rep, f)
		if f.Raw == nil {
			t.Fatalf("%q has no raw figure\n%s", name, text(rep))
		}
	}
	// Differences may be of either sign; they must be there.
	figure(t, rep, "tools", "bash call − raw persistent bash, median")
	figure(t, rep, "tools", "bash call − raw persistent bash, p99")
	positive(t, rep, figure(t, rep, "tools", "MCP call that types into no shell"))
	positive(t, rep, figure(t, rep, "tools", "machine CPU per call"))
	t.Log(text(rep))
	if strings.Contains(text(rep), "did not answer exit code 0") {
		t.Fatalf("calls failed\n%s", text(rep))
	}
	if got := rep.Scenarios[0].Params["calls"]; got != 20 {
		t.Fatalf("params: calls = %v", got)
	}
}

func TestToolsLoad(t *testing.T) {
	sizes := toolsSizes()
	rep := runSized(t, sizes, "tools-load")
	// 5 agents every 2 s for 3 s, starting at 0, 0.4, 0.8, 1.2 and 1.6 s: the first
	// three call twice, the others once, host and raw alike.
	calls := figure(t, rep, "tools-load", "calls answered, 5 sessions")
	if calls.Value != 8 || calls.Raw == nil || *calls.Raw != 8 {
		t.Fatalf("calls answered: %+v, want 8 host and raw\n%s", calls, text(rep))
	}
	for _, name := range []string{"lateness p50", "lateness p99", "lateness max",
		"lateness p50, vs the host's shells", "calls late by more than 100ms, vs the host's shells", "machine CPU per call"} {
		f := figure(t, rep, "tools-load", name)
		if f.Raw == nil {
			t.Fatalf("%q has no raw figure\n%s", name, text(rep))
		}
	}
	hasTarget(t, rep, figure(t, rep, "tools-load", "calls late by more than 100ms"))
	positive(t, rep, figure(t, rep, "tools-load", "host process (and the agents' clients) CPU"))
	positive(t, rep, figure(t, rep, "tools-load", "machine CPUs busy"))
	positive(t, rep, figure(t, rep, "tools-load", "host RSS peak during the run"))
	figure(t, rep, "tools-load", "host RSS per session")
	if strings.Contains(text(rep), "did not end with exit code 0") {
		t.Fatalf("calls failed\n%s", text(rep))
	}
}

// tools runs by default; tools-load, which takes minutes, only when named.
func TestToolsScenarioSets(t *testing.T) {
	if !slices.Contains(DefaultNames(), "tools") || slices.Contains(DefaultNames(), "tools-load") || !slices.Contains(Names(), "tools-load") {
		t.Fatalf("default %v, all %v", DefaultNames(), Names())
	}
}
