// Package report holds what `termhost bench` reports: a run's scenarios and their
// figures, each with its raw side, ratio and target, written as JSON or text, and
// several runs summarized into each figure's median and spread.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Report is one run of the bench: what it ran against, and each scenario's figures.
type Report struct {
	Started time.Time `json:"started"`
	// Seconds is the whole run's wall time.
	Seconds   float64     `json:"seconds"`
	Host      HostInfo    `json:"host"`
	Machine   MachineInfo `json:"machine"`
	Scenarios []*Result   `json:"scenarios"`
}

// HostInfo says which host was measured.
type HostInfo struct {
	URL string `json:"url"`
	// InProcess is true when the bench started the host itself, in this process:
	// then the host's RSS, descriptors and goroutines are this process's, and the
	// bench's own clients share its two cores.
	InProcess bool `json:"inProcess"`
	// Started is true when the bench started the host as a process of its own.
	Started bool `json:"started,omitempty"`
	// PID is the host's process id, 0 when not known (a remote host without --host-pid).
	PID int `json:"pid,omitempty"`
	// Pty says whether the host runs terminals under a pseudoterminal, as its
	// snapshots say; the raw baselines use the same.
	Pty bool `json:"pty"`
	// Shell is the shell the raw baselines run, the host's own where it is known.
	Shell string `json:"shell"`
	// HostShell is the base name of the shell the host's terminals run, from a
	// terminal's default title.
	HostShell string `json:"hostShell,omitempty"`
}

// MachineInfo is where the bench ran.
type MachineInfo struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"goVersion"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Kernel     string `json:"kernel,omitempty"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute figures when the run began:
	// other work on the machine moves every figure, raw ones included.
	LoadAverage string `json:"loadAverage,omitempty"`
}

// Result is one scenario's outcome.
type Result struct {
	Name string `json:"name"`
	// Summary says in one line what was run.
	Summary string `json:"summary"`
	// Params are the sizes the scenario ran with.
	Params  map[string]any `json:"params"`
	Figures []Figure       `json:"figures"`
	Notes   []string       `json:"notes,omitempty"`
	// Error is set when the scenario could not finish; the figures it had are kept.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Units of a Figure's Value and Raw. Values are kept in base units; the text output
// scales them for reading.
const (
	UnitBytesPerSecond = "B/s"
	UnitSeconds        = "s"
	UnitPerSecond      = "/s"
	UnitBytes          = "B"
	UnitCount          = "count"
	UnitRatio          = "ratio"
)

// Figure is one measured number, with the same work done raw beside it where there is
// such a thing, and the target it is held to where there is one.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Raw is the same work done without the host, in the same run and unit.
	Raw *float64 `json:"raw,omitempty"`
	// Ratio is Value/Raw, or for a figure compared with another of the host's own
	// (fan-out, slow reader) that quotient.
	Ratio *float64 `json:"ratio,omitempty"`
	// Target is the goal in words; Pass says whether this run met it. A miss never
	// fails the bench: the figures guide work, they do not gate it.
	Target string `json:"target,omitempty"`
	Pass   *bool  `json:"pass,omitempty"`
}

// Add appends a figure to the scenario's and returns it, to be given its raw side
// and its target.
func (r *Result) Add(f Figure) *Figure {
	r.Figures = append(r.Figures, f)
	return &r.Figures[len(r.Figures)-1]
}

// Note adds a line to the scenario's notes.
func (r *Result) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// WithRaw sets the raw figure and the ratio Value/Raw.
func (f *Figure) WithRaw(raw float64) *Figure {
	f.Raw = &raw
	if raw != 0 {
		ratio := f.Value / raw
		f.Ratio = &ratio
	}
	return f
}

// WithRatio sets a ratio against something other than raw.
func (f *Figure) WithRatio(ratio float64) *Figure {
	if !math.IsNaN(ratio) && !math.IsInf(ratio, 0) {
		f.Ratio = &ratio
	}
	return f
}

// Judge records the figure's target, in words, and whether this run met it.
func (f *Figure) Judge(text string, pass bool) *Figure {
	f.Target = text
	f.Pass = &pass
	return f
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: each scenario, its figures with the raw
// figure, ratio and target beside them.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	where := "remote host"
	switch {
	case r.Host.InProcess:
		where = "in-process host"
	case r.Host.Started:
		where = "host process"
	}
	mode := "pipes"
	if r.Host.Pty {
		mode = "pty"
	}
	fmt.Fprintf(&b, "termhost bench: %s %s (%s, shell %s), %d CPUs, GOMAXPROCS %d, %s %s/%s, load average %s\n",
		where, r.Host.URL, mode, r.Host.Shell, r.Machine.CPUs, r.Machine.GOMAXPROCS, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.LoadAverage)
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "\n%s: %s (%.1f s)\n", s.Name, s.Summary, s.Seconds)
		width := 0
		for _, f := range s.Figures {
			width = max(width, len(f.Name))
		}
		for _, f := range s.Figures {
			fmt.Fprintf(&b, "  %-*s  %12s", width, f.Name, formatValue(f.Value, f.Unit))
			if f.Raw != nil {
				fmt.Fprintf(&b, "   raw %12s", formatValue(*f.Raw, f.Unit))
			}
			if f.Ratio != nil {
				fmt.Fprintf(&b, "   ratio %6.3f", *f.Ratio)
			}
			if f.Pass != nil {
				verdict := "MISS"
				if *f.Pass {
					verdict = "PASS"
				}
				fmt.Fprintf(&b, "   %s (target %s)", verdict, f.Target)
			}
			b.WriteByte('\n')
		}
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "  ERROR: %s\n", s.Error)
		}
	}
	fmt.Fprintf(&b, "\ntotal %.1f s\n", r.Seconds)
	_, err := io.WriteString(w, b.String())
	return err
}

// formatValue scales a value for reading: MB/s are 10^6 bytes a second, MiB are 2^20.
func formatValue(v float64, unit string) string {
	switch unit {
	case UnitBytesPerSecond:
		return fmt.Sprintf("%.1f MB/s", v/1e6)
	case UnitSeconds:
		switch {
		case v < 1e-3:
			return fmt.Sprintf("%.1f µs", v*1e6)
		case v < 1:
			return fmt.Sprintf("%.2f ms", v*1e3)
		default:
			return fmt.Sprintf("%.2f s", v)
		}
	case UnitPerSecond:
		return fmt.Sprintf("%.1f /s", v)
	case UnitBytes:
		switch {
		case math.Abs(v) >= 1<<20:
			return fmt.Sprintf("%.1f MiB", v/(1<<20))
		case math.Abs(v) >= 1<<10:
			return fmt.Sprintf("%.1f KiB", v/(1<<10))
		default:
			return fmt.Sprintf("%.0f B", v)
		}
	case UnitRatio:
		return fmt.Sprintf("%.3f", v)
	case UnitCount:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%g", v)
	}
}
