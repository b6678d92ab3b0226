package turnorder_test

import (
	"slices"
	"testing"

	"github.com/termhost/termhost/persistence"
)

// The merge is tested through persistence's MergeTurns and MergeTurnRefs, the way the
// host calls it: with the turns it keeps, and with their refs alone.

func TestMergeTurns(t *testing.T) {
	lt := func(id, anchor string) persistence.LocalTurn {
		return persistence.LocalTurn{ID: id, AnchorTurnID: anchor}
	}
	ids := func(ts []persistence.LocalTurn) []string {
		out := []string{}
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		transcript []string
		local      []persistence.LocalTurn
		order      []string
		kept       []string
	}{
		{
			name:       "no local turns",
			transcript: []string{"a", "b"},
			order:      []string{"a", "b"},
			kept:       []string{},
		},
		{
			name:       "after their anchors",
			transcript: []string{"a", "b", "c"},
			local:      []persistence.LocalTurn{lt("l1", "a"), lt("l2", "c")},
			order:      []string{"a", "l1", "b", "c", "l2"},
			kept:       []string{"l1", "l2"},
		},
		{
			name:       "several after one anchor, in the order they ran",
			transcript: []string{"a", "b"},
			local:      []persistence.LocalTurn{lt("l1", "a"), lt("l2", "a"), lt("l3", "a")},
			order:      []string{"a", "l1", "l2", "l3", "b"},
			kept:       []string{"l1", "l2", "l3"},
		},
		{
			name:       "a chain anchored to local turns",
			transcript: []string{"a", "b"},
			local:      []persistence.LocalTurn{lt("l1", "a"), lt("l2", "l1"), lt("l3", "l2"), lt("l4", "a")},
			order:      []string{"a", "l1", "l2", "l3", "l4", "b"},
			kept:       []string{"l1", "l2", "l3", "l4"},
		},
		{
			name:       "first turn anchor",
			transcript: []string{"a"},
			local:      []persistence.LocalTurn{lt("l1", ""), lt("l2", ""), lt("l3", "a")},
			order:      []string{"l1", "l2", "a", "l3"},
			kept:       []string{"l1", "l2", "l3"},
		},
		{
			name:  "a session of commands only",
			local: []persistence.LocalTurn{lt("l1", ""), lt("l2", "l1"), lt("l3", "l2")},
			order: []string{"l1", "l2", "l3"},
			kept:  []string{"l1", "l2", "l3"},
		},
		{
			name:       "an orphan is dropped, with what hangs off it",
			transcript: []string{"a", "c"},
			local:      []persistence.LocalTurn{lt("l1", "b"), lt("l2", "l1"), lt("l3", "c")},
			order:      []string{"a", "c", "l3"},
			kept:       []string{"l3"},
		},
		{
			name:       "every orphan dropped when the transcript was truncated",
			transcript: []string{},
			local:      []persistence.LocalTurn{lt("l1", "a")},
			order:      []string{},
			kept:       []string{},
		},
		{
			name:       "a local turn the live state already holds",
			transcript: []string{"a", "l1", "b"},
			local:      []persistence.LocalTurn{lt("l1", "a"), lt("l2", "l1")},
			order:      []string{"a", "l1", "l2", "b"},
			kept:       []string{"l1", "l2"},
		},
		{
			name:       "loops, self anchors and repeated ids",
			transcript: []string{"a"},
			local:      []persistence.LocalTurn{lt("x", "y"), lt("y", "x"), lt("z", "z"), lt("l1", "a"), lt("l1", "a"), lt("", "a")},
			order:      []string{"a", "l1"},
			kept:       []string{"l1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, kept := persistence.MergeTurns(tc.transcript, tc.local)
			if !slices.Equal(order, tc.order) {
				t.Errorf("order = %q, want %q", order, tc.order)
			}
			if got := ids(kept); !slices.Equal(got, tc.kept) {
				t.Errorf("kept = %q, want %q", got, tc.kept)
			}
			// The refs alone, as a restart reads them, merge the same way.
			refs := make([]persistence.TurnRef, len(tc.local))
			for i, l := range tc.local {
				refs[i] = persistence.TurnRef{ID: l.ID, AnchorTurnID: l.AnchorTurnID}
			}
			refOrder, keptRefs := persistence.MergeTurnRefs(tc.transcript, refs)
			var keptIDs []string
			for _, r := range keptRefs {
				keptIDs = append(keptIDs, r.ID)
			}
			if !slices.Equal(refOrder, tc.order) || !slices.Equal(keptIDs, tc.kept) {
				t.Errorf("MergeTurnRefs = %q, %q; want %q, %q", refOrder, keptIDs, tc.order, tc.kept)
			}
		})
	}
}
