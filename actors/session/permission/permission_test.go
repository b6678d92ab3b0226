package permission

import (
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/messages/schematest"
)

var offered = []agentmsg.PermissionOption{
	{ID: "never", Name: "Always refuse", Kind: "reject_always"},
	{ID: "yes", Name: "Allow", Kind: "allow_once"},
	{ID: "no", Name: "", Kind: "reject_once"},
	{ID: "always", Name: "Always allow", Kind: "allow_always"},
}

// TestChoose answers the agent with the option a person picked, or the one ACP's
// semantics give for a bare approval or refusal, and refuses a pick that contradicts
// the answer or that the agent never offered.
func TestChoose(t *testing.T) {
	cases := []struct {
		name               string
		options            []agentmsg.PermissionOption
		approved           bool
		selected           string
		wantID, wantRefuse string
	}{
		{"approval takes the first allowing option", offered, true, "", "yes", ""},
		{"refusal prefers reject_once", offered, false, "", "no", ""},
		{"refusal without reject_once takes the first refusing option", offered[:2], false, "", "never", ""},
		{"refusal with no refusing option is the cancelled outcome", offered[1:2], false, "", "", ""},
		{"approval with no allowing option is refused", offered[:1], true, "", "", "the agent offered no option that allows the call"},
		{"a picked allowing option", offered, true, "always", "always", ""},
		{"a picked refusing option", offered, false, "never", "never", ""},
		{"a pick the agent never offered", offered, true, "maybe", "", `the agent offered no option "maybe"`},
		{"a refusing pick sent as an approval", offered, true, "never", "", `option "never" refuses the call: send it with approved false`},
		{"an allowing pick sent as a refusal", offered, false, "yes", "", `option "yes" allows the call: send it with approved true`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, refusal := Choose(c.options, c.approved, c.selected)
			if id != c.wantID || refusal != c.wantRefuse {
				t.Fatalf("Choose(approved=%v, %q) = %q, %q; want %q, %q", c.approved, c.selected, id, refusal, c.wantID, c.wantRefuse)
			}
		})
	}
}

// TestReadyShowsTheAgentsChoices checks the action a client is sent: the protocol's
// chat/toolCallReady with no confirmed, so it awaits a person, each choice an
// approve or deny option labelled with its name (its id when it has none), and the
// default title when the agent gave none.
func TestReadyShowsTheAgentsChoices(t *testing.T) {
	raw, err := json.Marshal(Ready{TurnID: "t1", ToolCallID: "call-1", ToolInput: "rm -rf build", Options: offered})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "chat/toolCallReady" || got["turnId"] != "t1" || got["toolCallId"] != "call-1" {
		t.Fatalf("action = %s", raw)
	}
	if _, ok := got["confirmed"]; ok {
		t.Fatalf("a question must await confirmation, got confirmed: %s", raw)
	}
	if got["confirmationTitle"] != defaultTitle || got["invocationMessage"] != defaultTitle {
		t.Fatalf("titles = %v / %v, want %q", got["confirmationTitle"], got["invocationMessage"], defaultTitle)
	}
	want := []map[string]any{
		{"id": "never", "label": "Always refuse", "kind": "deny", "group": 1.0},
		{"id": "yes", "label": "Allow", "kind": "approve", "group": 0.0},
		{"id": "no", "label": "no", "kind": "deny", "group": 1.0},
		{"id": "always", "label": "Always allow", "kind": "approve", "group": 0.0},
	}
	options, _ := got["options"].([]any)
	if len(options) != len(want) {
		t.Fatalf("options = %v", got["options"])
	}
	for i, o := range options {
		for k, v := range want[i] {
			if o.(map[string]any)[k] != v {
				t.Fatalf("option %d %s = %v, want %v (%s)", i, k, o.(map[string]any)[k], v, raw)
			}
		}
	}
	if err := schematest.Load(t).Validate("ChatToolCallReadyAction", got); err != nil {
		t.Fatalf("not a valid chat/toolCallReady: %v\n%s", err, raw)
	}
}
