package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummarize: figures over several runs keep each run's value, in order, with the
// median and spread, and count the runs that met a target.
func TestSummarize(t *testing.T) {
	mk := func(v, raw float64, pass bool) *Report {
		r := &Result{Name: "echo"}
		r.Add(Figure{Name: "round trip, median", Value: v, Unit: UnitSeconds}).WithRaw(raw).Judge("≤ 1.15 × floor", pass)
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
