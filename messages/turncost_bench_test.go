package messages

import (
	"fmt"
	"testing"
)

// BenchmarkChatTurnAtLength folds a turn (started, completed) into a chat that holds
// n completed turns: what a turn costs the reducer as the chat grows, looking through
// the turns for the new one's id (scan) and asking a producer's set of ids (knowing).
func BenchmarkChatTurnAtLength(b *testing.B) {
	for _, knowing := range []bool{false, true} {
		for _, n := range []int{10, 1_000, 10_000} {
			name := fmt.Sprintf("scan/%d", n)
			if knowing {
				name = fmt.Sprintf("knowing/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				st := NewChatState("ahp-chat:/long", "Chat", "2026-12-05T00:00:00Z")
				ids := map[string]bool{}
				for i := range n {
					id := fmt.Sprintf("old-%d", i)
					st.AppendTurn(Turn{ID: id, Message: UserMessage("!echo x"), State: TurnStateComplete})
					ids[id] = true
				}
				var had func(string) bool
				if knowing {
					had = func(id string) bool { return ids[id] }
				}
				b.ResetTimer()
				for i := range b.N {
					id := fmt.Sprintf("new-%d", i)
					if _, err := st.ApplyKnowing(ChatTurnStartedAction{TurnID: id, StartedAt: "2026-12-05T00:00:00Z", Message: UserMessage("!echo x")}, had); err != nil {
						b.Fatal(err)
					}
					if _, err := st.ApplyKnowing(ChatTurnCompleteAction{TurnID: id}, had); err != nil {
						b.Fatal(err)
					}
					// Back to n turns, so every round folds into the same length.
					st["turns"] = []any(object(st).list("turns")[1:])
				}
			})
		}
	}
}
