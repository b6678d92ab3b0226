package bench

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestOpen: every open figure is measured, the pipelined ones held to their target,
// and the host's and the raw side's opens all saw the shell's first output. The host's
// shell is bash, whatever $SHELL is where the test runs (CI's is /bin/sh).
func TestOpen(t *testing.T) {
	ptyOrSkip(t)
	bash := bashOrSkip(t)
	rep := runOnHost(t, LocalHostOptions{UsePty: true, EmptyHome: true, Shell: bash},
		func(c *Config) { c.Sizes.OpenRounds = 2 }, "open")
	for _, name := range []string{"open, plain bash, pipelined, median", "open, with integration, pipelined, median"} {
		f := figure(t, rep, "open", name)
		positive(t, rep, f)
		hasTarget(t, rep, f)
	}
	positive(t, rep, figure(t, rep, "open", "open, with integration, answer then subscribe, median"))
	positive(t, rep, figure(t, rep, "open", "raw `bash --norc --noprofile -i`, median"))
}

// TestOpenShellWithoutIntegration: a host whose shell has no integration script (dash)
// still times plain bash, and says why the integrated half is missing rather than
// failing the scenario.
func TestOpenShellWithoutIntegration(t *testing.T) {
	ptyOrSkip(t)
	bashOrSkip(t)
	dash, err := exec.LookPath("dash")
	if err != nil {
		t.Skip("no dash on this machine")
	}
	rep := runOnHost(t, LocalHostOptions{UsePty: true, EmptyHome: true, Shell: dash},
		func(c *Config) { c.Sizes.OpenRounds = 1 }, "open")
	positive(t, rep, figure(t, rep, "open", "open, plain bash, pipelined, median"))
	if !strings.Contains(text(rep), "has no integration script") {
		t.Fatalf("the report does not say why the integrated figures are missing:\n%s", text(rep))
	}
}

func bashOrSkip(t *testing.T) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	return bash
}

// TestBusy: the flood runs, host and raw, beside a neighbour that spins (here a shell
// loop standing in for `termhost bench-busy`), and its figures carry their targets.
func TestBusy(t *testing.T) {
	ptyOrSkip(t)
	rep := runWith(t, true, func(c *Config) {
		c.BusyCommand = []string{"sh", "-c", "while :; do :; done", "busy"}
		c.Sizes.BusySpinners = 1
	}, "busy")
	f := figure(t, rep, "busy", "throughput beside a busy neighbour")
	positive(t, rep, f)
	hasTarget(t, rep, f)
}

// TestSummarize: figures over several runs keep each run's value, in order, with the
// median and spread, and count the runs that met a target.
func TestSummarize(t *testing.T) {
	mk := func(v, raw float64, pass bool) *Report {
		r := &Result{Name: "echo"}
		r.add(Figure{Name: "round trip, median", Value: v, Unit: UnitSeconds}).withRaw(raw).target("≤ 1.15 × floor", pass)
		return &Report{Scenarios: []*Result{r}}
	}
	runs := Summarize([]*Report{mk(3, 2, false), mk(1, 1, true), mk(2, 2, true)})
	if len(runs.Figures) != 1 {
		t.Fatalf("%d figures, want 1", len(runs.Figures))
	}
	f := runs.Figures[0]
	if f.Median != 2 || f.Min != 1 || f.Max != 3 || f.Passes != 2 || len(f.Values) != 3 || f.Values[0] != 3 {
		t.Fatalf("summary %+v", f)
	}
	if f.RatioMedian == nil || *f.RatioMedian != 1 || *f.RatioMin != 1 || *f.RatioMax != 1.5 {
		t.Fatalf("ratios %+v", f)
	}
	var b bytes.Buffer
	if err := runs.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "met in 2 of 3") {
		t.Fatalf("text:\n%s", b.String())
	}
}
