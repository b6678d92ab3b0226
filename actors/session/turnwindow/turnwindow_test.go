package turnwindow

import (
	"fmt"
	"slices"
	"testing"
)

func ids(from, to int) []string {
	var out []string
	for n := from; n < to; n++ {
		out = append(out, fmt.Sprintf("t%d", n))
	}
	return out
}

// A restarted chat holds its newest Held turns and pages the rest in, Page at a time,
// each page the turns just before those held; its cursor goes when nothing is left.
func TestRestoreThenPageBack(t *testing.T) {
	w := New()
	hold := w.Restore(ids(0, 130))
	if !slices.Equal(hold, ids(80, 130)) || w.Older() != 80 || w.Cursor() == "" {
		t.Fatalf("Restore holds %v with %d older, cursor %q", hold, w.Older(), w.Cursor())
	}
	if !w.Had("t0") || !w.Had("t129") || w.Had("t130") {
		t.Fatal("Had does not know the restored turns")
	}
	first := w.Cursor()
	page := w.Before(Page)
	if !slices.Equal(page, ids(30, 80)) {
		t.Fatalf("the first page is %v", page)
	}
	w.BroughtIn(len(page), page)
	if w.Older() != 30 || w.Cursor() == first || !w.ValidCursor(first) {
		t.Fatalf("after a page: %d older, cursor %q (was %q)", w.Older(), w.Cursor(), first)
	}
	page = w.Before(Page)
	if !slices.Equal(page, ids(0, 30)) {
		t.Fatalf("the last page is %v", page)
	}
	w.BroughtIn(len(page), page)
	if w.Older() != 0 || w.Cursor() != "" || len(w.Before(Page)) != 0 {
		t.Fatalf("with every turn held: %d older, cursor %q", w.Older(), w.Cursor())
	}
}

// Only turns the store keeps whole are let go of, oldest first, up to the first one it
// does not keep and down to Held; a turn brought back in may be let go of again.
func TestLetGoOnlyKeptTurnsDownToHeld(t *testing.T) {
	w := New()
	held := ids(0, 60)
	for _, id := range held {
		w.Started(id)
	}
	if n := w.LetGo(held); n != 0 {
		t.Fatalf("let go of %d turns the store does not keep", n)
	}
	for _, id := range held {
		if id != "t5" { // an agent's turn, say: its transcript keeps it
			w.Kept(id)
		}
	}
	if n := w.LetGo(held); n != 5 || !slices.Equal(w.Before(10), ids(0, 5)) {
		t.Fatalf("let go of %d (%v); want the 5 before the turn not kept", n, w.Before(10))
	}
	rest := held[5:]
	if n := w.LetGo(rest); n != 0 {
		t.Fatalf("let go past a turn not kept: %d", n)
	}
	w.BroughtIn(5, ids(0, 5))
	w.Kept("t5")
	if n := w.LetGo(held); n != 10 || w.Older() != 10 {
		t.Fatalf("let go of %d, %d older; want 10 down to %d held", n, w.Older(), Held)
	}
}

// A cursor the chat gave, in this epoch or an earlier one, is valid; one that does
// not parse, or names an epoch yet to come, is not.
func TestValidCursor(t *testing.T) {
	w := New()
	held := ids(0, 60)
	for _, id := range held {
		w.Kept(id)
	}
	w.LetGo(held)
	given := w.Cursor()
	if !w.ValidCursor(given) || !w.ValidCursor("0.3") {
		t.Fatalf("cursor %q (or an earlier epoch's) refused", given)
	}
	for _, bad := range []string{"", "x", "1", "1.", ".1", "2.1", "-1.1", "1.0", "1.x"} {
		if w.ValidCursor(bad) {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}
