package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/termhost/termhost/internal/bench/report"
)

// The busy scenario: the throughput flood, host and raw, with a CPU-bound neighbour on
// the machine (issue 13). The neighbour is another process (`termhost bench-busy N`,
// which package benchproc serves) so that it competes for the CPUs as any other
// program would, not inside the bench's or the host's Go scheduler.

// neighbour is a running bench-busy process.
type neighbour struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startNeighbour starts the busy neighbour with n spinning goroutines.
func (e *env) startNeighbour(n int) (*neighbour, error) {
	if len(e.cfg.BusyCommand) == 0 {
		return nil, fmt.Errorf("no busy neighbour to start: Config.BusyCommand is empty")
	}
	argv := append(append([]string(nil), e.cfg.BusyCommand...), strconv.Itoa(n))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the busy neighbour: %w", err)
	}
	return &neighbour{cmd: cmd, stdin: in}, nil
}

// stop ends the neighbour: its stdin closes (bench-busy's way out) and it is killed,
// for any stand-in that does not read its stdin.
func (b *neighbour) stop() {
	_ = b.stdin.Close()
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

func busySummary(s Sizes) string {
	return fmt.Sprintf("the throughput flood (%s) and its raw side with %d goroutines spinning in another process (termhost bench-busy)", mb(s.ThroughputBytes), s.BusySpinners)
}

func runBusy(ctx context.Context, e *env, r *report.Result) error {
	n, spinners := e.sizes.ThroughputBytes, e.sizes.BusySpinners
	r.Params["bytes"] = n
	r.Params["spinners"] = spinners
	k, err := e.dialCtl(ctx, "busy")
	if err != nil {
		return err
	}
	defer k.Close()
	nb, err := e.startNeighbour(spinners)
	if err != nil {
		return err
	}
	defer nb.stop()
	m, err := e.meteredFlood(ctx, k, "busy", n)
	if err != nil {
		return err
	}
	raw, rawCPU, hostCPU, run := &m.raw, m.rawCPU, m.hostCPU, m.run
	s := run.subs[0]
	f := r.Add(report.Figure{Name: "throughput beside a busy neighbour", Value: s.rate(), Unit: report.UnitBytesPerSecond}).WithRaw(raw.rate())
	f.Judge("≥ 0.85 × raw under the same load", f.Ratio != nil && *f.Ratio >= 0.85)
	if mb := float64(s.end.Bytes) / 1e6; mb > 0 && hostCPU.ok && rawCPU.ok {
		who := "host"
		if e.cfg.InProcess {
			who = "host and subscriber"
		}
		f := r.Add(report.Figure{Name: "CPU per MB, " + who, Value: hostCPU.process / mb, Unit: report.UnitSeconds}).WithRaw(rawCPU.process / (float64(raw.total) / 1e6))
		f.Judge("≤ 1.1 × the raw reader's", f.Ratio != nil && *f.Ratio <= 1.1)
		r.Add(report.Figure{Name: "machine CPUs busy", Value: hostCPU.busy, Unit: report.UnitRatio}).WithRaw(rawCPU.busy)
	}
	if !s.complete(run.expected) {
		r.Note("the subscriber did not see the whole flood: %s", describeEnd(s.end))
	}
	e.noteShared(r)
	return nil
}
