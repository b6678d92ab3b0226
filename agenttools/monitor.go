package agenttools

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Policy is a monitor's delivery rules, after the agent PTY tools spec: matching lines
// and exactly one exit summary per monitor; lines coalesced, deliveries spaced and
// capped, repeats dropped, and a budget of wakes the agent did not answer.
//
// A zero field takes its default. A negative duration means no wait; a negative count
// means no limit.
type Policy struct {
	// Coalesce is how long the first line of a batch waits for company before the
	// batch is delivered. Default 2 s.
	Coalesce time.Duration
	// MinGap is the least time between two deliveries of lines. Default 5 s.
	MinGap time.Duration
	// MaxLines is the most lines one delivery carries; the rest of its batch is
	// counted as omitted, not delivered later. Default 50.
	MaxLines int
	// MaxChars is the most characters (runes, newlines not counted) the lines of one
	// delivery carry; a first line longer than that is cut to fit. Default 4096.
	MaxChars int
	// Budget is how many deliveries in a row may wake the agent with no tool call of
	// its own between them; after that many the monitor pauses until Rearm. Default 5.
	Budget int
}

// DefaultPolicy is the spec's policy: coalesce 2 s, at most one delivery per 5 s, 50
// lines / 4,096 characters per delivery, 5 unanswered wakes.
func DefaultPolicy() Policy {
	return Policy{
		Coalesce: 2 * time.Second,
		MinGap:   5 * time.Second,
		MaxLines: 50,
		MaxChars: 4096,
		Budget:   5,
	}
}

// withDefaults fills the zero fields and turns negative durations into zero.
func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	dur := func(v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	count := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	dur(&p.Coalesce, d.Coalesce)
	dur(&p.MinGap, d.MinGap)
	count(&p.MaxLines, d.MaxLines)
	count(&p.MaxChars, d.MaxChars)
	count(&p.Budget, d.Budget)
	return p
}

// Delivery is one wake of the agent by a monitor.
type Delivery struct {
	Lines   []string // the matching lines delivered
	Omitted int      // lines over the caps in this delivery
	Paused  int      // lines dropped while paused since the last delivery (reported on the next one that goes)
	Exit    bool     // this is the exit summary
	Summary string   // for Exit: the summary text given to Exit
	// Text is the whole delivery as text for a model: the lines, then
	// "[N more lines omitted]", "[N lines not delivered while the monitor was
	// paused]", then the summary for an exit, or a note when this delivery used up
	// the budget and paused the monitor.
	Text string
}

// Gate is one monitor's delivery state. Its owner feeds it matching lines and the
// monitor's end, asks Next when to come back, and calls Take then; the Gate keeps no
// clock of its own, so every time comes from the caller.
//
// A Gate is not safe for concurrent use: it belongs to the actor that runs the monitor.
type Gate struct {
	p Policy

	// The batch waiting to go: its lines within the caps, how many characters they
	// hold, how many lines it had past the caps, and when its first line came.
	pending []string
	chars   int
	omitted int
	since   time.Time

	// paused is set when the budget runs out; pausedLines counts the lines it kept
	// back since the last delivery.
	paused      bool
	pausedLines int

	// The last delivery of lines: whether there was one, when, and its text
	// (without the pause note) for the identical-repeat rule.
	delivered bool
	last      time.Time
	lastText  string
	// wakes counts deliveries since the agent last acted or the gate was rearmed.
	wakes int

	exited  bool // Exit was called: no line is taken any more
	summary string
	exitAt  time.Time
	done    bool // the exit summary was taken
}

// NewGate makes a monitor's gate; zero fields of p take the defaults.
func NewGate(p Policy) *Gate {
	return &Gate{p: p.withDefaults()}
}

// Line records that a matching line arrived at now. A line after Exit is ignored: the
// monitor has ended, and its summary is the last word. While paused the line is only
// counted.
func (g *Gate) Line(now time.Time, line string) {
	if g.exited {
		return
	}
	if g.paused {
		g.pausedLines++
		return
	}
	if len(g.pending) == 0 && g.omitted == 0 {
		g.since = now
	}
	if g.omitted > 0 || (g.p.MaxLines > 0 && len(g.pending) >= g.p.MaxLines) {
		// Once one line is over the caps the rest of the batch is too, so a
		// delivery is always a run of lines with no gap the model cannot see.
		g.omitted++
		return
	}
	n := utf8.RuneCountInString(line)
	if g.p.MaxChars > 0 && g.chars+n > g.p.MaxChars {
		if len(g.pending) > 0 {
			g.omitted++
			return
		}
		// A first line longer than a whole delivery is cut rather than omitted,
		// or the delivery would say only that it omitted something.
		line, n = firstChars(line, g.p.MaxChars), g.p.MaxChars
	}
	g.pending = append(g.pending, line)
	g.chars += n
}

// firstChars keeps the first n characters of s, the last of them an ellipsis to say
// the line goes on.
func firstChars(s string, n int) string {
	i := 0
	for k := 0; k < n-1 && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}

// Exit records that the monitor ended at now (its command exited, it timed out, it was
// killed), with the summary the agent is told. The exit summary is due at once: no
// line can join it any more, so waiting for company would only delay it. Lines pending
// go with it, within the caps; it is never paused, never held back by MinGap and never
// dropped as a repeat. A second Exit is ignored.
func (g *Gate) Exit(now time.Time, summary string) {
	if g.exited {
		return
	}
	g.exited, g.summary, g.exitAt = true, summary, now
}

// Next reports when Take should next be called: the time the pending delivery is due,
// and false when nothing is pending (no lines, or paused, or done).
func (g *Gate) Next() (time.Time, bool) {
	switch {
	case g.done:
		return time.Time{}, false
	case g.exited:
		return g.exitAt, true
	case len(g.pending) == 0 && g.omitted == 0:
		return time.Time{}, false
	}
	due := g.since.Add(g.p.Coalesce)
	if g.delivered {
		if gap := g.last.Add(g.p.MinGap); gap.After(due) {
			due = gap
		}
	}
	return due, true
}

// Take returns the delivery due at now, if any. A batch identical in text to the last
// delivery is dropped (false) rather than waking the agent to read it again.
func (g *Gate) Take(now time.Time) (Delivery, bool) {
	due, ok := g.Next()
	if !ok || now.Before(due) {
		return Delivery{}, false
	}
	d := Delivery{
		Lines:   g.pending,
		Omitted: g.omitted,
		Paused:  g.pausedLines,
		Exit:    g.exited,
	}
	g.pending, g.chars, g.omitted, g.pausedLines = nil, 0, 0, 0
	if d.Exit {
		d.Summary = g.summary
		d.Text = d.text()
		g.done = true
		return d, true
	}
	d.Text = d.text()
	if g.delivered && d.Text == g.lastText {
		return Delivery{}, false
	}
	g.delivered, g.last, g.lastText = true, now, d.Text
	g.wakes++
	if g.p.Budget > 0 && g.wakes >= g.p.Budget {
		g.paused = true
		d.Text += "\n[monitor paused: " + strconv.Itoa(g.wakes) +
			" deliveries in a row with no tool call between them; later lines are counted, not delivered, until it is re-armed]"
	}
	return d, true
}

// text renders the delivery for a model, without the pause note.
func (d *Delivery) text() string {
	var b strings.Builder
	line := func(s string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	for _, l := range d.Lines {
		line(l)
	}
	if d.Omitted > 0 {
		line("[" + strconv.Itoa(d.Omitted) + " more " + plural(d.Omitted, "line") + " omitted]")
	}
	if d.Paused > 0 {
		line("[" + strconv.Itoa(d.Paused) + " " + plural(d.Paused, "line") + " not delivered while the monitor was paused]")
	}
	if d.Exit {
		s := d.Summary
		if s == "" {
			s = "[monitor ended]"
		}
		line(s)
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// AgentActed records that the agent made a tool call: the count of deliveries in a
// row restarts. It does not lift a pause; Rearm does.
func (g *Gate) AgentActed() { g.wakes = 0 }

// Rearm lifts a pause and restarts the budget. Lines counted while paused are reported
// on the next delivery.
func (g *Gate) Rearm() { g.paused, g.wakes = false, 0 }

// Paused reports whether the budget ran out and lines are only being counted.
func (g *Gate) Paused() bool { return g.paused }

// Done reports whether the exit summary has been taken: the gate will deliver nothing
// more.
func (g *Gate) Done() bool { return g.done }
