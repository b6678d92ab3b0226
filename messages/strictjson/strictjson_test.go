package strictjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/strictjson"
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
	m := strictjson.Of(messages.Action{})
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

func TestMembersCheckNested(t *testing.T) {
	type inner struct {
		ClientID string `json:"clientId"`
	}
	type params struct {
		Channel string  `json:"channel"`
		Claim   *inner  `json:"claim"`
		Items   []inner `json:"items"`
	}
	m := strictjson.Of(&params{})
	for raw, want := range map[string]string{
		`{"channel":"a","claim":{"clientId":"x"},"items":[{"clientId":"y"}]}`: "",
		`{"Channel":"a"}`:                               `"Channel" is not a member here`,
		`{"claim":{"clientid":"x"}}`:                    `"claim.clientid" is not a member here: member names are case-sensitive (did you mean "claim.clientId"?)`,
		`{"items":[{"clientId":"y"},{"CLIENTID":"z"}]}`: `"items[1].CLIENTID"`,
		`{"claim":"not an object"}`:                     "",
		`{"other":{"Channel":1}}`:                       "",
	} {
		err := m.Check([]byte(raw))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error saying %q", raw, err, want)
		}
	}
}
