package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Runs is several runs of the bench against the same host, and each figure's median
// and spread over them: one run on a shared 2-core machine says little, five say how
// far a figure moves with nothing changed.
type Runs struct {
	Runs    []*Report    `json:"runs"`
	Figures []FigureRuns `json:"figures"`
}

// FigureRuns is one figure over several runs, in the order the runs were made.
type FigureRuns struct {
	Scenario string    `json:"scenario"`
	Name     string    `json:"name"`
	Unit     string    `json:"unit"`
	Values   []float64 `json:"values"`
	Median   float64   `json:"median"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
	// Raws, Ratios and their medians are there when the figure has them in every run.
	Raws        []float64 `json:"raws,omitempty"`
	RawMedian   *float64  `json:"rawMedian,omitempty"`
	Ratios      []float64 `json:"ratios,omitempty"`
	RatioMedian *float64  `json:"ratioMedian,omitempty"`
	RatioMin    *float64  `json:"ratioMin,omitempty"`
	RatioMax    *float64  `json:"ratioMax,omitempty"`
	Target      string    `json:"target,omitempty"`
	// Passes is in how many of the runs the target was met.
	Passes int `json:"passes,omitempty"`
}

// Summarize gathers each figure over the reports, in the order of the first report's
// scenarios and figures; a figure missing from a run has fewer values.
func Summarize(reps []*Report) *Runs {
	out := &Runs{Runs: reps}
	index := map[string]int{}
	for _, rep := range reps {
		for _, s := range rep.Scenarios {
			for _, f := range s.Figures {
				key := s.Name + "\x00" + f.Name
				i, ok := index[key]
				if !ok {
					i = len(out.Figures)
					index[key] = i
					out.Figures = append(out.Figures, FigureRuns{Scenario: s.Name, Name: f.Name, Unit: f.Unit, Target: f.Target})
				}
				fr := &out.Figures[i]
				fr.Values = append(fr.Values, f.Value)
				if f.Raw != nil {
					fr.Raws = append(fr.Raws, *f.Raw)
				}
				if f.Ratio != nil {
					fr.Ratios = append(fr.Ratios, *f.Ratio)
				}
				if f.Pass != nil && *f.Pass {
					fr.Passes++
				}
			}
		}
	}
	for i := range out.Figures {
		fr := &out.Figures[i]
		fr.Median, fr.Min, fr.Max = Median(fr.Values), slices.Min(fr.Values), slices.Max(fr.Values)
		if len(fr.Raws) == len(fr.Values) {
			m := Median(fr.Raws)
			fr.RawMedian = &m
		} else {
			fr.Raws = nil
		}
		if len(fr.Ratios) == len(fr.Values) {
			m, lo, hi := Median(fr.Ratios), slices.Min(fr.Ratios), slices.Max(fr.Ratios)
			fr.RatioMedian, fr.RatioMin, fr.RatioMax = &m, &lo, &hi
		} else {
			fr.Ratios = nil
		}
	}
	return out
}

// Median is the middle of v, or the mean of its two middle values; 0 for none.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteJSON writes every run's report and the figures over them as one document.
func (r *Runs) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes each figure's median and spread over the runs, its raw figure's
// median, its ratios and in how many runs it met its target.
func (r *Runs) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(r.Runs) > 0 {
		first := r.Runs[0]
		fmt.Fprintf(&b, "termhost bench: %d runs against %s (shell %s), %d CPUs, GOMAXPROCS %d; load average at each start:", len(r.Runs), first.Host.URL, first.Host.Shell, first.Machine.CPUs, first.Machine.GOMAXPROCS)
		for _, rep := range r.Runs {
			fmt.Fprintf(&b, " [%s]", rep.Machine.LoadAverage)
		}
		b.WriteByte('\n')
	}
	scenario := ""
	for _, f := range r.Figures {
		if f.Scenario != scenario {
			scenario = f.Scenario
			fmt.Fprintf(&b, "\n%s (median, min–max over %d runs):\n", scenario, len(r.Runs))
		}
		fmt.Fprintf(&b, "  %s: %s (%s–%s)", f.Name, formatValue(f.Median, f.Unit), formatValue(f.Min, f.Unit), formatValue(f.Max, f.Unit))
		if f.RawMedian != nil {
			fmt.Fprintf(&b, "; raw %s", formatValue(*f.RawMedian, f.Unit))
		}
		if f.RatioMedian != nil {
			fmt.Fprintf(&b, "; ratio %.3f (%.3f–%.3f):", *f.RatioMedian, *f.RatioMin, *f.RatioMax)
			for _, x := range f.Ratios {
				fmt.Fprintf(&b, " %.3f", x)
			}
		}
		if f.Target != "" {
			fmt.Fprintf(&b, "; %s met in %d of %d", f.Target, f.Passes, len(f.Values))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
