package cluster

import (
	"testing"

	"github.com/termhost/termhost/actors/cluster/proxy"
)

// A session's and a chat's channel name their session when their node is lost; a
// chat a client named outside its session's URI names none.
func TestSessionOfLostChannel(t *testing.T) {
	p := &peer{sessions: []map[string]any{{"resource": "ahp-session:/s"}, {"resource": "ahp-session:/s/x"}}}
	for _, c := range []struct {
		uri  string
		kind proxy.Kind
		want string
	}{
		{"ahp-session:/s", proxy.Session, "ahp-session:/s"},
		{"ahp-session:/s/chat", proxy.Chat, "ahp-session:/s"},
		{"ahp-session:/s/x/chat-2", proxy.Chat, "ahp-session:/s/x"},
		{"ahp-chat:/mine", proxy.Chat, ""},
		{"ahp-session:/s/chat", proxy.Terminal, ""},
	} {
		if got := sessionOf(p, c.uri, c.kind); got != c.want {
			t.Errorf("sessionOf(%s) = %q, want %q", c.uri, got, c.want)
		}
	}
}
