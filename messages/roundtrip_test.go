package messages_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// roundTripFixture is one shared/ahp-0.8.0/round-trips/NNN-*.json file.
type roundTripFixture struct {
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	Type              string            `json:"type"`
	Input             json.RawMessage   `json:"input"`
	AcceptableOutputs []json.RawMessage `json:"acceptableOutputs"`
}

// roundTrippers decode a fixture's input into the package's types and encode it
// again, by the fixture's type; each may give several encodings, named by how they
// were made, and every one must be acceptable.
var roundTrippers = map[string]func(t *testing.T, input json.RawMessage) map[string]any{
	"JsonRpcMessage":   roundTripJSONRPC,
	"ActionEnvelope":   roundTripEnvelope,
	"InitializeResult": roundTripInitializeResult,
}

// TestRoundTripFixtures checks that decoding each fixture's input into the package's
// wire types and encoding it again gives one of its acceptable outputs.
func TestRoundTripFixtures(t *testing.T) {
	files := fixtureFiles(t, "round-trips")
	v := schematest.Load(t)
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		var fx roundTripFixture
		if err := json.Unmarshal(readFile(t, path), &fx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			rt := roundTrippers[fx.Type]
			if rt == nil {
				t.Skipf("%s: type %s has no counterpart in package messages (termhost does not model it)", name, fx.Type)
			}
			if len(fx.AcceptableOutputs) == 0 {
				t.Fatal("no acceptableOutputs")
			}
			var accept []any
			for _, out := range fx.AcceptableOutputs {
				accept = append(accept, generic(t, out))
			}
			for how, out := range rt(t, fx.Input) {
				got := generic(t, out)
				ok := false
				for _, a := range accept {
					if reflect.DeepEqual(got, a) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s: %s is none of the acceptable outputs\n got: %s\nwant: %s", fx.Type, how, pretty(got), pretty(accept))
				}
				if v.Has(fx.Type) {
					if err := v.Validate(fx.Type, out); err != nil {
						t.Errorf("%s: %v", how, err)
					}
				}
			}
		})
	}
}

// roundTripJSONRPC reads a request or notification with ParseInbound, and writes a
// success or error answer with ResponseFrame or ErrorFrame.
func roundTripJSONRPC(t *testing.T, input json.RawMessage) map[string]any {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(input, &keys); err != nil {
		t.Fatal(err)
	}
	switch {
	case keys["method"] != nil:
		m, e := messages.ParseInbound(input)
		if e != nil {
			t.Fatalf("ParseInbound: %v", e)
		}
		if m.IsRequest() != (keys["id"] != nil) {
			t.Errorf("IsRequest = %v for %s", m.IsRequest(), input)
		}
		return map[string]any{"ParseInbound then json.Marshal(Inbound)": m}
	case keys["result"] != nil:
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
		}
		if err := strictDecode(input, &r); err != nil {
			t.Fatal(err)
		}
		frame, err := messages.ResponseFrame(r.ID, r.Result)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"ResponseFrame": json.RawMessage(frame)}
	case keys["error"] != nil:
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   messages.Error  `json:"error"`
		}
		if err := strictDecode(input, &r); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"ErrorFrame": json.RawMessage(messages.ErrorFrame(r.ID, &r.Error))}
	}
	t.Fatalf("not a JSON-RPC message this package reads or writes: %s", input)
	return nil
}

// roundTripEnvelope decodes an Envelope and encodes it with encoding/json and as the
// params of EnvelopeFrame. The action stays opaque, so session and chat actions
// round-trip too; a terminal or root action is also decoded into Action.
func roundTripEnvelope(t *testing.T, input json.RawMessage) map[string]any {
	var env messages.Envelope
	if err := strictDecode(input, &env); err != nil {
		t.Fatal(err)
	}
	var frame struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(messages.EnvelopeFrame(&env), &frame); err != nil {
		t.Fatal(err)
	}
	if frame.JSONRPC != "2.0" || frame.Method != "action" {
		t.Errorf("frame is %s %q", frame.JSONRPC, frame.Method)
	}
	outs := map[string]any{"json.Marshal(Envelope)": env, "EnvelopeFrame params": frame.Params}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(env.Action, &head); err != nil {
		t.Fatal(err)
	}
	if knownActionTypes[head.Type] {
		var a messages.Action
		if err := strictDecode(env.Action, &a); err != nil {
			t.Fatal(err)
		}
		env2 := env
		env2.Action = messages.EncodeAction(&a)
		outs["Envelope with the action decoded and re-encoded"] = env2
	}
	return outs
}

// roundTripInitializeResult decodes an InitializeResult as a map (the host builds
// it as one), with each snapshot a Snapshot whose state is a RootState or a
// TerminalState by its resource.
func roundTripInitializeResult(t *testing.T, input json.RawMessage) map[string]any {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil {
		t.Fatal(err)
	}
	var raws []struct {
		Resource string          `json:"resource"`
		State    json.RawMessage `json:"state"`
		FromSeq  uint64          `json:"fromSeq"`
	}
	if err := json.Unmarshal(m["snapshots"], &raws); err != nil {
		t.Fatal(err)
	}
	snaps := make([]messages.Snapshot, len(raws))
	for i, r := range raws {
		var state any
		switch {
		case r.Resource == messages.RootURI:
			state = &messages.RootState{}
		case strings.HasPrefix(r.Resource, "ahp-terminal:"):
			state = &messages.TerminalState{}
		default:
			t.Skipf("snapshot of %s has no state type here", r.Resource)
		}
		if err := strictDecode(r.State, state); err != nil {
			t.Fatal(err)
		}
		snaps[i] = messages.Snapshot{Resource: r.Resource, State: state, FromSeq: r.FromSeq}
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	out["snapshots"] = snaps
	return map[string]any{fmt.Sprintf("map with %d Snapshot(s)", len(snaps)): out}
}

// TestWireShapes round-trips the 1.x shapes of PROTOCOL.md 5.1 through the state
// types: what the host decodes it encodes the same.
func TestWireShapes(t *testing.T) {
	v := schematest.Load(t)
	cases := map[string]struct {
		def string
		typ func() any
		raw string
	}{
		"TerminalState": {"TerminalState", func() any { return &messages.TerminalState{} }, `{ "title": "bash", "cwd": "file:///work", "cols": 120, "rows": 30,
  "content": [ {"type": "unclassified", "value": "$ "},
               {"type": "command", "commandId": "c1", "commandLine": "ls", "output": "a b\r\n",
                "timestamp": 1767225600000, "isComplete": true, "exitCode": 0, "durationMs": 12} ],
  "lifecycle": {"status": "exited", "exitCode": 0}, "exitCode": 0,
  "claim": {"kind": "session", "session": "ahp-session:/s1", "chat": "ahp-chat:/c1",
            "turnId": "t1", "toolCallId": "tc1"},
  "supportsCommandDetection": true,
  "isPty": true, "_meta": {"signal": "SIGTERM"} }`},
		"TerminalInfo": {"TerminalInfo", func() any { return &messages.TerminalInfo{} }, `{ "resource": "ahp-terminal:/t1", "title": "npm test",
  "claim": {"kind": "client", "clientId": "client-abc"},
  "lifecycle": {"status": "running"} }`},
		"client claim with an empty clientId": {"TerminalClaim", func() any { return &messages.Claim{} }, `{"kind":"client","clientId":""}`},
		"running command part": {"TerminalContentPart", func() any { return &messages.ContentPart{} },
			`{"type":"command","commandId":"c","commandLine":"","output":"","timestamp":0,"isComplete":false}`},
		"empty unclassified part": {"TerminalContentPart", func() any { return &messages.ContentPart{} }, `{"type":"unclassified","value":""}`},
		"RootState": {"RootState", func() any { return &messages.RootState{} }, `{"agents":[],"terminals":[],
  "config":{"schema":{"type":"object","properties":{"defaultShell":{"type":"string","title":"Default shell"}}},"values":{"defaultShell":""}}}`},
		"Snapshot": {"Snapshot", func() any { return &messages.Snapshot{State: &messages.RootState{}} },
			`{"resource":"ahp-root://","state":{"agents":[]},"fromSeq":42}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			val := c.typ()
			if err := strictDecode([]byte(c.raw), val); err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, "re-encoded", generic(t, val), generic(t, []byte(c.raw)))
			if err := v.Validate(c.def, val); err != nil {
				t.Error(err)
			}
		})
	}
}
