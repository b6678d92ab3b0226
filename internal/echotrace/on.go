//go:build echotrace

package echotrace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// On says whether marks are kept: true with the echotrace tag.
const On = true

type event struct {
	name string
	at   time.Time
}

// The trace is process-wide on purpose: it is a debugging build's instrument, and
// its marks come from every node and goroutine of one bench process.
var (
	mu     sync.Mutex
	active bool
	start  time.Time
	events []event
	kept   = map[string][][]event{}
)

// Mark notes that the keystroke being traced passed the named step.
func Mark(name string) {
	now := time.Now()
	mu.Lock()
	if active {
		events = append(events, event{name, now})
	}
	mu.Unlock()
}

// Begin starts a keystroke's trace: its time is the client's send.
func Begin() {
	mu.Lock()
	active, start, events = true, time.Now(), events[:0]
	mu.Unlock()
}

// End ends the keystroke's trace and keeps it under label.
func End(label string) {
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	active = false
	evs := []event{{"0 client send", start}}
	seen := map[string]int{}
	for _, e := range events {
		seen[e.name]++
		name := e.name
		if n := seen[e.name]; n > 1 {
			name = fmt.Sprintf("%s #%d", e.name, n)
		}
		evs = append(evs, event{name, e.at})
	}
	evs = append(evs, event{"z client got echo", now})
	kept[label] = append(kept[label], evs)
}

// Report is, per label, each step's median time after the client's send and the
// share of keystrokes that passed it, in the order of those medians.
func Report() string {
	mu.Lock()
	defer mu.Unlock()
	var b strings.Builder
	labels := make([]string, 0, len(kept))
	for l := range kept {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		traces := kept[l]
		offs := map[string][]time.Duration{}
		for _, evs := range traces {
			t0 := evs[0].at
			for _, e := range evs {
				offs[e.name] = append(offs[e.name], e.at.Sub(t0))
			}
		}
		type step struct {
			name     string
			med, p25 time.Duration
			p75      time.Duration
			n        int
		}
		var steps []step
		for name, d := range offs {
			slices.Sort(d)
			steps = append(steps, step{name, d[len(d)/2], d[len(d)/4], d[len(d)*3/4], len(d)})
		}
		sort.Slice(steps, func(i, j int) bool {
			if steps[i].med != steps[j].med {
				return steps[i].med < steps[j].med
			}
			return steps[i].name < steps[j].name
		})
		fmt.Fprintf(&b, "echo trace %s: %d keystrokes (median after the send; 25th, 75th percentile)\n", l, len(traces))
		for _, s := range steps {
			if s.n*5 < len(traces) {
				continue // background traffic, not this keystroke's
			}
			fmt.Fprintf(&b, "  %-34s %7.1f µs  (%6.1f, %6.1f)  %3d%%\n", s.name, us(s.med), us(s.p25), us(s.p75), 100*s.n/len(traces))
		}
	}
	return b.String()
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
