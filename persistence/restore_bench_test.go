package persistence

import "testing"

// BenchmarkRestoreLongChat reads back a chat of 20,000 kept turns as a host's restart
// does: whole (every turn decoded, as before a chat held only its newest) and refs
// (ids and anchors off the lines' starts, then the newest 50 decoded).
func BenchmarkRestoreLongChat(b *testing.B) {
	const sess, chat, total, held = "ahp-session:/long", "ahp-chat:/long", 20_000, 50
	s, _ := longChat(b, sess, chat, total)
	if err := s.SaveSession(SessionRecord{URI: sess, Created: t0}); err != nil {
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

// BenchmarkFindToolCallTurn finds the turn of one tool call in a chat of 20,000 kept
// turns, as a chat does for the terminal of a turn it let go of: whole (every turn
// decoded, as before) and by the lines that name the call.
func BenchmarkFindToolCallTurn(b *testing.B) {
	const sess, chat, total = "ahp-session:/long", "ahp-chat:/long", 20_000
	s, _ := longChat(b, sess, chat, total)
	const call = "cmd-123"
	b.Run("whole", func(b *testing.B) {
		for range b.N {
			all, err := s.Turns(sess, chat)
			found := 0
			for _, t := range all {
				if t.ToolCallID == call {
					found++
				}
			}
			if err != nil || found != 1 {
				b.Fatal(found, err)
			}
		}
	})
	b.Run("named", func(b *testing.B) {
		for range b.N {
			if got, err := s.TurnsOfToolCall(sess, chat, call); err != nil || len(got) != 1 {
				b.Fatal(len(got), err)
			}
		}
	})
}

// BenchmarkPageOfLongChat reads a page of 50 turns from the middle of a chat of 20,000
// kept turns, as fetchTurns does once the store has read the log through: indexed
// (the lines where the store's index says) and scanned (the whole log read, only the
// page decoded, as every page was read before the index).
func BenchmarkPageOfLongChat(b *testing.B) {
	const sess, chat, total, page = "ahp-session:/long", "ahp-chat:/long", 20_000, 50
	s, turns := longChat(b, sess, chat, total)
	ids := make([]string, 0, page)
	for _, t := range turns[10_000 : 10_000+page] {
		ids = append(ids, t.ID)
	}
	b.Run("indexed", func(b *testing.B) {
		for range b.N {
			if got, err := s.TurnsWithIDs(sess, chat, ids); err != nil || len(got) != page {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("scanned", func(b *testing.B) {
		for range b.N {
			if got, err := s.readTurnsOf(sess, chat, wantIDs(ids)); err != nil || len(got) != page {
				b.Fatal(len(got), err)
			}
		}
	})
}

// BenchmarkFirstAppendAfterReopen keeps a turn in a chat of 20,000 kept turns with a
// store opened afresh, as the first `!` command after a restart does: the store first
// reads where each of the log's lines is.
func BenchmarkFirstAppendAfterReopen(b *testing.B) {
	const sess, chat, total = "ahp-session:/long", "ahp-chat:/long", 20_000
	s, _ := longChat(b, sess, chat, total)
	for n := range b.N {
		fresh, err := Open(s.root)
		if err != nil {
			b.Fatal(err)
		}
		if err := fresh.AppendTurn(sess, chat, commandTurn(total+n)); err != nil {
			b.Fatal(err)
		}
	}
}

// longChat is a store holding a chat of total `!` commands (commandTurn), and those
// turns.
func longChat(tb testing.TB, sess, chat string, total int) (*Store, []LocalTurn) {
	tb.Helper()
	s := openTemp(tb)
	turns := make([]LocalTurn, 0, total)
	for n := range total {
		turns = append(turns, commandTurn(n))
	}
	if _, err := s.rewriteTurnLogLocked(sess, chat, turns); err != nil {
		tb.Fatal(err)
	}
	return s, turns
}
