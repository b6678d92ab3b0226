package toolterm

import "testing"

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct{ chat, key string }{
		{"ahp-chat:/s1/c1", "call_1"},
		{"ahp-chat:/a b/ü", "agent-7"},
		{"ahp-chat:/s/c", "with/slash"},
	} {
		uri := URI(tc.chat, tc.key)
		chat, key, ok := Parse(uri)
		if !ok || chat != tc.chat || key != tc.key {
			t.Errorf("Parse(URI(%q, %q)) = %q, %q, %v", tc.chat, tc.key, chat, key, ok)
		}
	}
}

func TestParseRefusesOthers(t *testing.T) {
	for _, uri := range []string{
		"ahp-terminal:/work",
		"ahp-terminal:/termhost-command/",
		"ahp-terminal:/termhost-command/onlychat",
		"ahp-terminal:/termhost-command//key",
		"ahp-terminal:/termhost-command/chat/",
		"ahp-terminal:/termhost-command/%zz/key",
	} {
		if chat, key, ok := Parse(uri); ok {
			t.Errorf("Parse(%q) = %q, %q, true; want false", uri, chat, key)
		}
	}
}
