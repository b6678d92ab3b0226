package limits

import (
	"strings"
	"testing"
)

func TestCheckURI(t *testing.T) {
	ok := []string{"ahp-terminal:/t1", "agenthost-terminal:/x", "ahp-session:/5f0c", "ahp-root://", "ahp-terminal:/" + strings.Repeat("a", MaxURIBytes-14), "ahp-terminal:/ünïcode"}
	for _, u := range ok {
		if err := CheckURI(u); err != nil {
			t.Errorf("CheckURI(%.40q) = %v, want nil", u, err)
		}
	}
	bad := map[string]string{
		"":          "empty",
		"no-scheme": "no scheme",
		":/x":       "no scheme",
		"ahp-terminal:/" + strings.Repeat("a", MaxURIBytes): "at most 2048",
		"ahp-terminal:/a\x00b":                              "U+0000",
		"ahp-terminal:/a\nb":                                "U+000A",
		"ahp-terminal:/a\x7fb":                              "U+007F",
		"ahp-terminal:/a\u0085b":                            "U+0085",
		"ahp-terminal:/a\u202eb":                            "bidirectional",
		"ahp-terminal:/a\u2067b":                            "bidirectional",
		"ahp-terminal:/a\u2028b":                            "bidirectional",
		"ahp-terminal:/a\xffb":                              "not UTF-8",
	}
	for u, want := range bad {
		err := CheckURI(u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURI(%.40q) = %v, want an error saying %q", u, err, want)
		}
	}
}

func TestIsTerminalURI(t *testing.T) {
	for u, want := range map[string]bool{
		"ahp-terminal:/t":       true,
		"agenthost-terminal:/t": true,
		"ahp-session:/v/chat":   false,
		"ahp-chat:/c":           false,
		"ahp-root://":           false,
		"x-terminal:/t":         false,
		"file:///tmp":           false,
		"ahp-terminalx:/t":      false,
	} {
		if got := IsTerminalURI(u); got != want {
			t.Errorf("IsTerminalURI(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestCheckTitle(t *testing.T) {
	if err := CheckTitle("the name", strings.Repeat("n", MaxTitleBytes)); err != nil {
		t.Errorf("a name of exactly the limit: %v", err)
	}
	err := CheckTitle("the name", strings.Repeat("n", MaxTitleBytes+1))
	if err == nil || !strings.Contains(err.Error(), "the name is 1025 bytes; at most 1024") {
		t.Errorf("an over-long name: %v", err)
	}
}
