package bench

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/bench/hoststart"
)

// TestOpen: every open figure is measured, the pipelined ones held to their target,
// and the host's and the raw side's opens all saw the shell's first output. The host's
// shell is bash, whatever $SHELL is where the test runs (CI's is /bin/sh).
func TestOpen(t *testing.T) {
	ptyOrSkip(t)
	bash := bashOrSkip(t)
	rep := runOnHost(t, hoststart.LocalOptions{UsePty: true, EmptyHome: true, Shell: bash},
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
	rep := runOnHost(t, hoststart.LocalOptions{UsePty: true, EmptyHome: true, Shell: dash},
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
