package messages_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

// FuzzMembersCheck: whatever bytes come, Check never panics, and on valid JSON it
// finds a wrong-case member exactly when one is there at the top level.
func FuzzMembersCheck(f *testing.F) {
	for _, seed := range []string{
		`{"type":"terminal/input","data":"l"}`, `{"TYPE":"x"}`, `{"type":"x","claim":{"Kind":"client"}}`,
		`{"a\u0074a":1}`, `{"terminals":[{"resource":"x"},{"Resource":"y"}]}`, `{`, `{"`, `{"type"`, `{"type":`,
		`[1,2`, `"str`, `{"x":[{"y":"}"}]}`, ` { "data" : "a\"b" , "Type" : 1 } `, ``, `nul`,
	} {
		f.Add([]byte(seed))
	}
	m := messages.MembersOf(messages.Action{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := m.Check(raw)
		var top map[string]json.RawMessage
		if json.Unmarshal(raw, &top) != nil {
			return
		}
		wrong := false
		for k := range top {
			for _, known := range []string{"type", "data", "cols", "rows", "claim", "title", "cwd", "exitCode", "commandId", "commandLine", "timestamp", "durationMs", "terminals", "config", "replace", "_meta"} {
				if k != known && strings.EqualFold(k, known) {
					wrong = true
				}
			}
		}
		if wrong && err == nil {
			t.Fatalf("%q: a wrong-case member was not found", raw)
		}
	})
}
