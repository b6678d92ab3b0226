package persistence

import "testing"

// BenchmarkRestoreLongChat reads back a chat of 20,000 kept turns as a host's restart
// does: whole (every turn decoded, as before a chat held only its newest) and refs
// (ids and anchors off the lines' starts, then the newest 50 decoded).
func BenchmarkRestoreLongChat(b *testing.B) {
	s := openTemp(b)
	const sess, chat, total, held = "ahp-session:/long", "ahp-chat:/long", 20_000, 50
	if err := s.SaveSession(SessionRecord{URI: sess, Created: t0}); err != nil {
		b.Fatal(err)
	}
	turns := make([]LocalTurn, 0, total)
	for n := range total {
		turns = append(turns, commandTurn(n))
	}
	if _, err := s.rewriteTurnLogLocked(sess, chat, turns); err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		for range b.N {
			got, err := s.Turns(sess, chat)
			if err != nil || len(got) != total {
				b.Fatal(len(got), err)
			}
			MergeTurns(nil, got)
		}
	})
	b.Run("refs", func(b *testing.B) {
		for range b.N {
			refs, err := s.TurnRefs(sess, chat)
			if err != nil || len(refs) != total {
				b.Fatal(len(refs), err)
			}
			_, kept := MergeTurnRefs(nil, refs)
			ids := make([]string, 0, held)
			for _, t := range kept[len(kept)-held:] {
				ids = append(ids, t.ID)
			}
			if newest, err := s.TurnsWithIDs(sess, chat, ids); err != nil || len(newest) != held {
				b.Fatal(len(newest), err)
			}
		}
	})
}
