package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/bench/benchproc"
	"github.com/termhost/termhost/internal/bench/hoststart"
)

// TestMain lets the test binary be the bench agent: `TEST_BINARY bench-agent` serves
// ACP on stdin and stdout, as `termhost bench-agent` does. The termhost a test built
// (buildTermhost) is removed at the end.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-agent" {
		benchproc.ServeAgent(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	code := m.Run()
	if termhostBuild.exe != "" {
		_ = os.RemoveAll(filepath.Dir(termhostBuild.exe))
	}
	os.Exit(code)
}

// TestAgentsRaw runs the agents scenario against an in-process host, which has no
// bench agent: the raw side (agents driven over ACP directly) is measured, and the
// host side is left out with a note saying why.
func TestAgentsRaw(t *testing.T) {
	h, err := hoststart.StartLocal(hoststart.LocalOptions{EmptyHome: true})
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
	sizes := tinySizes
	sizes.AgentSessionCounts = []int{1, 3}
	sizes.AgentsDuration = 300 * time.Millisecond
	rep, err := Run(ctx, Config{
		URL: h.URL, Token: h.Token, InProcess: true,
		Scenarios: []string{"agents"}, Sizes: sizes, WaitTimeout: 20 * time.Second,
		AgentCommand: []string{os.Args[0], "bench-agent"},
		Progress:     testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Scenarios[0]; s.Error != "" {
		t.Fatalf("agents failed: %s\n%s", s.Error, text(rep))
	}
	for _, name := range []string{"raw agent turns per second, 3 session(s), 300ms", "raw agent turn p50, 1 session(s), 300ms", "raw agent turn p99, 3 session(s), 300ms"} {
		found := false
		for _, f := range rep.Scenarios[0].Figures {
			if strings.HasPrefix(f.Name, name) {
				positive(t, rep, f)
				found = true
			}
		}
		if !found {
			t.Fatalf("no figure %q\n%s", name, text(rep))
		}
	}
	if !strings.Contains(text(rep), `has no agent "bench"`) {
		t.Fatalf("no note on the host side left out\n%s", text(rep))
	}
}
