package shellpool

import (
	"slices"
	"testing"
	"time"
)

// spare stands in for a started shell: the pool only ever hands it back.
type spare struct{ name string }

func (*spare) Release() {}

// TestSparesAreStartedUpToTheNumberAndHandedOutOldestFirst: the pool asks for as
// many spares as it lacks, counting those being started; a spare that failed to
// start is asked for again; one beyond the number is given back; commands get the
// oldest first.
func TestSparesAreStartedUpToTheNumberAndHandedOutOldestFirst(t *testing.T) {
	p := New[*spare](2, 4, time.Minute, nil)
	if n := p.ToStart(); n != 2 {
		t.Fatalf("a new pool starts %d spares, want 2", n)
	}
	if n := p.ToStart(); n != 0 || !p.Starting() {
		t.Fatalf("with two being started: %d more to start, starting %v", n, p.Starting())
	}
	a, b := &spare{"a"}, &spare{"b"}
	if !p.Started(a, true) {
		t.Fatal("the first spare was not kept")
	}
	if p.Started(nil, false) {
		t.Fatal("a failed start was kept")
	}
	if n := p.ToStart(); n != 1 {
		t.Fatalf("after one failed start: %d to start, want 1", n)
	}
	if !p.Started(b, true) {
		t.Fatal("the second spare was not kept")
	}
	if p.Starting() || p.ToStart() != 0 {
		t.Fatal("a full pool still starts spares")
	}
	if got, ok := p.Take(); !ok || got != a {
		t.Fatalf("took %v, want the oldest (a)", got)
	}
	if got, ok := p.Take(); !ok || got != b {
		t.Fatalf("took %v, want b", got)
	}
	if _, ok := p.Take(); ok {
		t.Fatal("an empty pool handed out a spare")
	}
	p.ToStart()
	p.Started(&spare{"c"}, true)
	p.Started(&spare{"d"}, true)
	p.starting++ // a third start, as after a failed one raced with a take
	if p.Started(&spare{"e"}, true) {
		t.Fatal("a spare beyond the number was kept")
	}
	if got := p.DropSpares(); len(got) != 2 || p.Holding() {
		t.Fatalf("dropped %d spares, holding %v", len(got), p.Holding())
	}
}

// TestIdleShellsBeyondTheNumberAreRetiredOldestFirst: shells at their prompt are
// kept up to the number, the oldest retired beyond it; a used one or a chat's going
// takes shells off the list, so they are never retired.
func TestIdleShellsBeyondTheNumberAreRetiredOldestFirst(t *testing.T) {
	p := New[*spare](0, 2, time.Minute, nil)
	sh := func(chat, uri string) Shell { return Shell{Chat: chat, URI: uri} }
	if r := p.AtPrompt(sh("c1", "t1")); len(r) != 0 {
		t.Fatalf("retired %v with one idle shell", r)
	}
	p.AtPrompt(sh("c1", "t2"))
	if r := p.AtPrompt(sh("c2", "t3")); !slices.Equal(r, []Shell{sh("c1", "t1")}) {
		t.Fatalf("retired %v, want t1", r)
	}
	p.Used("t2") // typed into: it stays, off the list
	p.AtPrompt(sh("c1", "t4"))
	if r := p.AtPrompt(sh("c2", "t5")); !slices.Equal(r, []Shell{sh("c2", "t3")}) {
		t.Fatalf("retired %v, want t3 (t2 was used)", r)
	}
	p.ForgetChat("c1")
	if _, idle := p.Expire(); !slices.Equal(idle, []Shell{sh("c2", "t5")}) {
		t.Fatalf("idle after chat c1 went: %v, want t5 alone", idle)
	}
	if p.Holding() {
		t.Fatal("an expired pool still holds shells")
	}
}

// TestIdleTimeCountsFromTheLastCommand: the idle time left runs from the last
// command's start.
func TestIdleTimeCountsFromTheLastCommand(t *testing.T) {
	p := New[*spare](1, 1, 10*time.Minute, nil)
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	p.Commanded(at)
	if left := p.IdleLeft(at.Add(4 * time.Minute)); left != 6*time.Minute {
		t.Fatalf("4 minutes after a command: %v left, want 6m", left)
	}
	p.Commanded(at.Add(5 * time.Minute))
	if left := p.IdleLeft(at.Add(16 * time.Minute)); left != -time.Minute {
		t.Fatalf("11 minutes after the last command: %v left, want -1m", left)
	}
}

// TestBudgetBoundsTheSparesOfAllPools: pools sharing a budget start no more spares
// together than it allows; a spare taken by a command, dropped, expired, failed or
// given back frees its place, and a stopped pool gives back the spares it was
// still starting.
func TestBudgetBoundsTheSparesOfAllPools(t *testing.T) {
	b := NewBudget(3)
	p := New[*spare](2, 4, time.Minute, b)
	q := New[*spare](2, 4, time.Minute, b)
	if n := p.ToStart(); n != 2 {
		t.Fatalf("the first pool starts %d spares, want 2", n)
	}
	if n := q.ToStart(); n != 1 {
		t.Fatalf("the second pool starts %d spares, want the 1 left", n)
	}
	if n := q.ToStart(); n != 0 || b.Held() != 3 {
		t.Fatalf("a spent budget granted %d more (held %d)", n, b.Held())
	}
	if !p.Started(&spare{"a"}, true) || p.Started(nil, false) {
		t.Fatal("the first pool's starts were not taken as they ended")
	}
	if b.Held() != 2 {
		t.Fatalf("after a failed start the budget holds %d, want 2", b.Held())
	}
	if _, ok := p.Take(); !ok || b.Held() != 1 {
		t.Fatalf("after a command took a spare the budget holds %d, want 1", b.Held())
	}
	if n := q.ToStart(); n != 1 {
		t.Fatalf("the second pool now starts %d, want 1", n)
	}
	q.Started(&spare{"b"}, true)
	q.Started(&spare{"c"}, true)
	if got := q.DropSpares(); len(got) != 2 || b.Held() != 0 {
		t.Fatalf("dropped %d spares, the budget holds %d", len(got), b.Held())
	}
	p.ToStart()
	p.Started(&spare{"d"}, true)
	if spares, _ := p.Expire(); len(spares) != 1 || b.Held() != 1 {
		t.Fatalf("expired %d spares, the budget holds %d, want 1 (one still starting)", len(spares), b.Held())
	}
	if got := p.Stop(); len(got) != 0 || b.Held() != 0 {
		t.Fatalf("a stopped pool handed back %d spares, the budget holds %d", len(got), b.Held())
	}
	p.Started(&spare{"e"}, true) // the start that was under way, heard after the stop
	if b.Held() != 0 {
		t.Fatalf("a start ending after the stop moved the budget to %d", b.Held())
	}
}
