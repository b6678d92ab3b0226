package agenttools

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// t0 is the fake clock's start; tests add durations to it and never sleep.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const s = time.Second

// take calls Take at now and fails unless a delivery comes.
func take(t *testing.T, g *Gate, now time.Time) Delivery {
	t.Helper()
	d, ok := g.Take(now)
	if !ok {
		next, pending := g.Next()
		t.Fatalf("Take(%v) delivered nothing; Next = %v, %v", now.Sub(t0), next.Sub(t0), pending)
	}
	return d
}

// none fails if Take at now delivers.
func none(t *testing.T, g *Gate, now time.Time) {
	t.Helper()
	if d, ok := g.Take(now); ok {
		t.Fatalf("Take(%v) delivered %+v, want nothing", now.Sub(t0), d)
	}
}

// due fails unless Next says want.
func due(t *testing.T, g *Gate, want time.Time) {
	t.Helper()
	next, ok := g.Next()
	if !ok || !next.Equal(want) {
		t.Fatalf("Next = %v, %v; want %v, true", next.Sub(t0), ok, want.Sub(t0))
	}
}

// idle fails unless nothing is pending.
func idle(t *testing.T, g *Gate) {
	t.Helper()
	if next, ok := g.Next(); ok {
		t.Fatalf("Next = %v, true; want nothing pending", next.Sub(t0))
	}
}

// deliver makes one line delivery: a line at now, taken when it is due.
func deliver(t *testing.T, g *Gate, now time.Time, line string) (Delivery, time.Time) {
	t.Helper()
	g.Line(now, line)
	next, ok := g.Next()
	if !ok {
		t.Fatalf("line %q at %v: nothing pending", line, now.Sub(t0))
	}
	return take(t, g, next), next
}

func TestDefaultPolicy(t *testing.T) {
	want := Policy{Coalesce: 2 * s, MinGap: 5 * s, MaxLines: 50, MaxChars: 4096, Budget: 5}
	if got := DefaultPolicy(); got != want {
		t.Errorf("DefaultPolicy() = %+v, want %+v", got, want)
	}
	if got := NewGate(Policy{}).p; got != want {
		t.Errorf("NewGate(Policy{}) uses %+v, want the defaults %+v", got, want)
	}
	got := NewGate(Policy{Coalesce: -1, MinGap: -1, MaxLines: -1, Budget: 2}).p
	if got.Coalesce != 0 || got.MinGap != 0 || got.MaxLines != -1 || got.MaxChars != 4096 || got.Budget != 2 {
		t.Errorf("NewGate(negative and set fields) uses %+v", got)
	}
}

func TestGateNothingPending(t *testing.T) {
	g := NewGate(Policy{})
	idle(t, g)
	none(t, g, at(time.Hour))
	if g.Done() || g.Paused() {
		t.Errorf("new gate: Done %v, Paused %v", g.Done(), g.Paused())
	}
}

func TestGateCoalesces(t *testing.T) {
	g := NewGate(Policy{})
	g.Line(at(0), "a")
	due(t, g, at(2*s)) // the first line waits Coalesce for company
	g.Line(at(1*s), "b")
	due(t, g, at(2*s)) // company does not push the batch back
	none(t, g, at(1999*time.Millisecond))

	d := take(t, g, at(2*s))
	if !slices.Equal(d.Lines, []string{"a", "b"}) || d.Text != "a\nb" || d.Exit || d.Omitted != 0 || d.Paused != 0 {
		t.Errorf("delivery %+v, want a and b together", d)
	}
	idle(t, g)
}

func TestGateMinGap(t *testing.T) {
	g := NewGate(Policy{})
	_, first := deliver(t, g, at(0), "a") // goes at 2 s
	if !first.Equal(at(2 * s)) {
		t.Fatalf("first delivery at %v, want 2s", first.Sub(t0))
	}

	// A line half a second later would be due at 4.5 s by Coalesce, but the
	// previous delivery went at 2 s, so not before 7 s.
	g.Line(at(2500*time.Millisecond), "b")
	due(t, g, at(7*s))
	none(t, g, at(4500*time.Millisecond))
	none(t, g, at(6999*time.Millisecond))
	g.Line(at(6*s), "c") // joins the waiting batch
	d := take(t, g, at(7*s))
	if !slices.Equal(d.Lines, []string{"b", "c"}) {
		t.Errorf("lines %q, want b and c", d.Lines)
	}

	// Long after the gap, Coalesce alone decides again.
	g.Line(at(60*s), "d")
	due(t, g, at(62*s))
}

func TestGateLateTake(t *testing.T) {
	// A Take called late delivers, and the gap is measured from when it really went.
	g := NewGate(Policy{})
	g.Line(at(0), "a")
	take(t, g, at(10*s))
	g.Line(at(10*s), "b")
	due(t, g, at(15*s))
}

func TestGateCapsLines(t *testing.T) {
	g := NewGate(Policy{})
	for i := range 60 {
		g.Line(at(0), fmt.Sprintf("line %d", i))
	}
	d := take(t, g, at(2*s))
	if len(d.Lines) != 50 || d.Lines[0] != "line 0" || d.Lines[49] != "line 49" {
		t.Fatalf("delivered %d lines %q..., want line 0..line 49", len(d.Lines), d.Lines[:1])
	}
	if d.Omitted != 10 {
		t.Errorf("Omitted = %d, want 10", d.Omitted)
	}
	if !strings.HasSuffix(d.Text, "\nline 49\n[10 more lines omitted]") {
		t.Errorf("Text ends %q", d.Text[len(d.Text)-40:])
	}
	// The omitted lines are counted, not delivered later.
	idle(t, g)
}

func TestGateCapsChars(t *testing.T) {
	g := NewGate(Policy{})
	line := strings.Repeat("é", 1000) // 1,000 characters, 2,000 bytes
	for range 5 {
		g.Line(at(0), line)
	}
	g.Line(at(0), "short") // after an omitted line, the rest of the batch is omitted too
	d := take(t, g, at(2*s))
	if len(d.Lines) != 4 || d.Omitted != 2 {
		t.Errorf("delivered %d lines, omitted %d; want 4 and 2", len(d.Lines), d.Omitted)
	}
	if !strings.HasSuffix(d.Text, "\n[2 more lines omitted]") {
		t.Errorf("Text ends %q", d.Text[len(d.Text)-30:])
	}

	// One omitted line is singular.
	g2 := NewGate(Policy{MaxLines: 1})
	g2.Line(at(0), "a")
	g2.Line(at(0), "b")
	if d := take(t, g2, at(2*s)); d.Text != "a\n[1 more line omitted]" {
		t.Errorf("Text %q", d.Text)
	}
}

func TestGateCutsAFirstLineTooLong(t *testing.T) {
	g := NewGate(Policy{})
	g.Line(at(0), strings.Repeat("x", 10_000))
	g.Line(at(0), "next")
	d := take(t, g, at(2*s))
	if len(d.Lines) != 1 || d.Omitted != 1 {
		t.Fatalf("delivered %d lines, omitted %d; want 1 and 1", len(d.Lines), d.Omitted)
	}
	if n := utf8.RuneCountInString(d.Lines[0]); n != 4096 || !strings.HasSuffix(d.Lines[0], "x…") {
		t.Errorf("first line has %d characters ending %q, want 4096 ending in an ellipsis", n, d.Lines[0][len(d.Lines[0])-8:])
	}
}

func TestGateDropsAnIdenticalRepeat(t *testing.T) {
	g := NewGate(Policy{})
	d, _ := deliver(t, g, at(0), "waiting for server")
	if d.Text != "waiting for server" {
		t.Fatalf("Text %q", d.Text)
	}
	g.Line(at(10*s), "waiting for server")
	due(t, g, at(12*s))
	none(t, g, at(12*s)) // the same text again: dropped
	idle(t, g)

	// A dropped repeat is not a delivery: the gap still runs from the one before,
	// and it used no budget.
	d, when := deliver(t, g, at(20*s), "server up")
	if d.Text != "server up" || !when.Equal(at(22*s)) {
		t.Errorf("delivery %q at %v, want %q at 22s", d.Text, when.Sub(t0), "server up")
	}
	if g.wakes != 2 {
		t.Errorf("wakes = %d, want 2", g.wakes)
	}

	// Only the previous delivery counts: an older text may come again.
	d, _ = deliver(t, g, at(40*s), "waiting for server")
	if d.Text != "waiting for server" {
		t.Errorf("Text %q", d.Text)
	}
}

func TestGateBudgetPausesAndRearmResumes(t *testing.T) {
	g := NewGate(Policy{})
	now := at(0)
	for i := range 5 {
		d, when := deliver(t, g, now, fmt.Sprintf("tick %d", i))
		if paused := i == 4; g.Paused() != paused {
			t.Fatalf("after delivery %d: Paused = %v", i+1, g.Paused())
		}
		if note := strings.Contains(d.Text, "[monitor paused: 5 deliveries in a row"); note != (i == 4) {
			t.Errorf("delivery %d Text %q: pause note %v", i+1, d.Text, note)
		}
		now = when.Add(10 * s)
	}

	// Paused: lines are counted, nothing is due.
	for i := range 7 {
		g.Line(now.Add(time.Duration(i)*s), "while paused")
	}
	idle(t, g)
	none(t, g, now.Add(time.Hour))

	// AgentActed alone does not lift the pause.
	g.AgentActed()
	g.Line(now, "still paused")
	idle(t, g)

	g.Rearm()
	if g.Paused() {
		t.Fatal("Paused after Rearm")
	}
	now = now.Add(time.Hour)
	d, _ := deliver(t, g, now, "after rearm")
	if d.Paused != 8 || !slices.Equal(d.Lines, []string{"after rearm"}) {
		t.Errorf("delivery %+v, want one line and 8 paused", d)
	}
	if d.Text != "after rearm\n[8 lines not delivered while the monitor was paused]" {
		t.Errorf("Text %q", d.Text)
	}
	if g.Paused() {
		t.Error("one delivery after Rearm paused again: the budget did not restart")
	}
}

func TestGateAgentActedRestartsTheCount(t *testing.T) {
	g := NewGate(Policy{})
	now := at(0)
	for i := range 12 {
		if i%4 == 0 {
			g.AgentActed()
		}
		_, when := deliver(t, g, now, fmt.Sprintf("tick %d", i))
		if g.Paused() {
			t.Fatalf("paused after delivery %d though the agent acted every 4", i+1)
		}
		now = when.Add(10 * s)
	}
	// Four deliveries since the agent last acted: the fifth uses up the budget.
	deliver(t, g, now, "fifth")
	if !g.Paused() {
		t.Error("not paused after 5 deliveries with no AgentActed between them")
	}
}

func TestGateNoBudget(t *testing.T) {
	g := NewGate(Policy{Budget: -1})
	now := at(0)
	for i := range 20 {
		_, when := deliver(t, g, now, fmt.Sprintf("tick %d", i))
		now = when.Add(10 * s)
	}
	if g.Paused() {
		t.Error("paused with no budget")
	}
}

func TestGateExitAlone(t *testing.T) {
	g := NewGate(Policy{})
	g.Exit(at(3*s), "command exited with code 0")
	due(t, g, at(3*s))
	d := take(t, g, at(3*s))
	want := Delivery{Exit: true, Summary: "command exited with code 0", Text: "command exited with code 0"}
	if d.Exit != want.Exit || d.Summary != want.Summary || d.Text != want.Text || len(d.Lines) != 0 {
		t.Errorf("delivery %+v, want %+v", d, want)
	}
	if !g.Done() {
		t.Error("not Done after the exit summary was taken")
	}
	idle(t, g)
	none(t, g, at(time.Hour))
}

func TestGateExitInsideMinGap(t *testing.T) {
	g := NewGate(Policy{})
	_, first := deliver(t, g, at(0), "a") // at 2 s; the next lines not before 7 s
	g.Line(at(3*s), "b")
	due(t, g, at(7*s))
	g.Exit(at(4*s), "command exited with code 1")
	due(t, g, at(4*s)) // the exit does not wait for the gap
	d := take(t, g, at(4*s))
	if !d.Exit || !slices.Equal(d.Lines, []string{"b"}) || d.Text != "b\ncommand exited with code 1" {
		t.Errorf("delivery %+v, want b with the exit summary", d)
	}
	if first.After(at(4 * s)) {
		t.Fatal("test set-up: the first delivery must precede the exit")
	}
}

func TestGateExitIsNotARepeat(t *testing.T) {
	g := NewGate(Policy{})
	deliver(t, g, at(0), "done")
	g.Exit(at(3*s), "done")
	if d := take(t, g, at(3*s)); d.Text != "done" || !d.Exit {
		t.Errorf("delivery %+v, want the exit summary though its text repeats", d)
	}
}

func TestGateExitWhilePaused(t *testing.T) {
	g := NewGate(Policy{Budget: 1})
	deliver(t, g, at(0), "a")
	if !g.Paused() {
		t.Fatal("not paused after the budget of 1")
	}
	g.Line(at(3*s), "b")
	g.Line(at(4*s), "c")
	g.Exit(at(5*s), "killed")
	d := take(t, g, at(5*s))
	if !d.Exit || d.Paused != 2 || len(d.Lines) != 0 {
		t.Errorf("delivery %+v, want the exit with 2 paused", d)
	}
	if d.Text != "[2 lines not delivered while the monitor was paused]\nkilled" {
		t.Errorf("Text %q", d.Text)
	}
}

func TestGateExitReportsOmitted(t *testing.T) {
	g := NewGate(Policy{MaxLines: 2})
	g.Line(at(0), "a")
	g.Line(at(0), "b")
	g.Line(at(0), "c")
	g.Exit(at(1*s), "timed out after 1s")
	d := take(t, g, at(1*s))
	if d.Text != "a\nb\n[1 more line omitted]\ntimed out after 1s" || d.Omitted != 1 {
		t.Errorf("delivery %+v", d)
	}
}

func TestGateExitOnce(t *testing.T) {
	g := NewGate(Policy{})
	g.Line(at(0), "a")
	g.Exit(at(1*s), "first")
	g.Exit(at(2*s), "second")   // ignored
	g.Line(at(2*s), "too late") // ignored
	none(t, g, at(500*time.Millisecond))
	d := take(t, g, at(2*s))
	if d.Summary != "first" || !slices.Equal(d.Lines, []string{"a"}) {
		t.Errorf("delivery %+v, want line a and the first summary", d)
	}
	g.Exit(at(3*s), "third")
	g.Line(at(3*s), "later still")
	idle(t, g)
	none(t, g, at(time.Hour))
	if !g.Done() {
		t.Error("not Done")
	}
}

func TestGateExitEmptySummary(t *testing.T) {
	g := NewGate(Policy{})
	g.Exit(at(0), "")
	if d := take(t, g, at(0)); d.Text != "[monitor ended]" || d.Summary != "" {
		t.Errorf("delivery %+v", d)
	}
}

// TestGateScenario runs a monitor over a noisy command the way the service would: it
// calls Take whenever Next says, and checks the spec's promises over the whole run
// rather than one rule at a time.
func TestGateScenario(t *testing.T) {
	g := NewGate(Policy{})
	var got []Delivery
	var times []time.Time
	drain := func(until time.Time) {
		for {
			next, ok := g.Next()
			if !ok || next.After(until) {
				return
			}
			if d, ok := g.Take(next); ok {
				got = append(got, d)
				times = append(times, next)
			}
		}
	}
	// A line every 300 ms for two minutes; the agent acts once a minute.
	end := at(2 * time.Minute)
	for now := at(0); now.Before(end); now = now.Add(300 * time.Millisecond) {
		drain(now)
		if now.Sub(t0)%time.Minute == 0 {
			g.AgentActed()
		}
		g.Line(now, fmt.Sprintf("t=%v", now.Sub(t0)))
	}
	g.Exit(end, "exited 0")
	drain(end.Add(time.Hour))

	if len(got) == 0 || !got[len(got)-1].Exit {
		t.Fatalf("last delivery is not the exit: %d deliveries", len(got))
	}
	exits, lines, omitted, paused := 0, 0, 0, 0
	for i, d := range got {
		if d.Exit {
			exits++
		}
		lines += len(d.Lines)
		omitted += d.Omitted
		paused += d.Paused
		if i > 0 && !d.Exit && times[i].Sub(times[i-1]) < 5*s {
			t.Errorf("deliveries %d and %d only %v apart", i-1, i, times[i].Sub(times[i-1]))
		}
		if len(d.Lines) > 50 {
			t.Errorf("delivery %d has %d lines", i, len(d.Lines))
		}
	}
	if exits != 1 {
		t.Errorf("%d exit deliveries, want 1", exits)
	}
	// Every line is accounted for: delivered, omitted or counted while paused.
	if sent := int(2 * time.Minute / (300 * time.Millisecond)); lines+omitted+paused != sent {
		t.Errorf("delivered %d + omitted %d + paused %d = %d, want %d", lines, omitted, paused, lines+omitted+paused, sent)
	}
	if paused == 0 {
		t.Error("the budget never paused the monitor")
	}
}
