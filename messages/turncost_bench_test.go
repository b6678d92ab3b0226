package messages

import (
	"fmt"
	"testing"
)

// BenchmarkChatTurnAtLength folds a turn (started, completed) into a chat that holds
// n completed turns: what a turn costs the reducer as the chat grows.
func BenchmarkChatTurnAtLength(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			st := NewChatState("ahp-chat:/long", "Chat", "2026-12-05T00:00:00Z")
			for i := range n {
				st.AppendTurn(Turn{ID: fmt.Sprintf("old-%d", i), Message: UserMessage("!echo x"), State: TurnStateComplete})
			}
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("new-%d", i)
				if _, err := st.Apply(ChatTurnStartedAction{TurnID: id, StartedAt: "2026-12-05T00:00:00Z", Message: UserMessage("!echo x")}); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Apply(ChatTurnCompleteAction{TurnID: id}); err != nil {
					b.Fatal(err)
				}
				// Back to n turns, so every round folds into the same length.
				st["turns"] = []any(object(st).list("turns")[1:])
			}
		})
	}
}
