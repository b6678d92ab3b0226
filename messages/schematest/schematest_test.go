package schematest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestLoad(t *testing.T) {
	v := Load(t)
	if v2 := Load(t); v2 != v {
		t.Error("Load does not reuse the loaded schemas")
	}
	if v.Dropped() != 1 {
		t.Errorf("dropped %d broken union entries, want the one the README names", v.Dropped())
	}
	where := map[string]string{
		"TerminalState":                       "state.schema.json",
		"TerminalInfo":                        "state.schema.json",
		"TerminalClaim":                       "state.schema.json",
		"TerminalContentPart":                 "state.schema.json",
		"RootState":                           "state.schema.json",
		"Snapshot":                            "state.schema.json",
		"ActionEnvelope":                      "actions.schema.json",
		"StateAction":                         "actions.schema.json",
		"TerminalDataAction":                  "actions.schema.json",
		"InitializeResult":                    "commands.schema.json",
		"InitializeParams":                    "commands.schema.json",
		"CreateTerminalParams":                "commands.schema.json",
		"ReconnectReplayResult":               "commands.schema.json",
		"AuthRequiredParams":                  "notifications.schema.json",
		"UnsupportedProtocolVersionErrorData": "errors.schema.json",
	}
	for def, file := range where {
		if !v.Has(def) {
			t.Errorf("no definition %s", def)
		}
		if got := v.File(def); got != file {
			t.Errorf("%s is taken from %q, want %q", def, got, file)
		}
	}
	for _, def := range []string{"", "Nope", "terminalState", "JsonRpcMessage", "TerminalLifecycleState"} {
		if v.Has(def) {
			t.Errorf("Has(%q) = true", def)
		}
		if err := v.Validate(def, map[string]any{}); err == nil || !strings.Contains(err.Error(), "no definition") {
			t.Errorf("Validate(%q): %v", def, err)
		}
	}
	if defs := v.Defs(); len(defs) < 300 || defs[0] > defs[len(defs)-1] {
		t.Errorf("Defs() lists %d names", len(defs))
	}
}

// TestKnownDefect shows why Load drops an entry: compiled as shipped, the
// StateAction union of actions.schema.json does not compile.
func TestKnownDefect(t *testing.T) {
	path := filepath.Join(AHPDir(t), "schema", "actions.schema.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://example.test/actions.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("https://example.test/actions.schema.json#/$defs/StateAction"); err == nil {
		t.Error("StateAction compiled as shipped; is the defect gone? Then Load need not drop anything")
	} else {
		t.Logf("as shipped: %v", err)
	}
	if n := DropEmptyRefs(doc); n != 1 {
		t.Errorf("dropped %d entries", n)
	}
	c = jsonschema.NewCompiler()
	if err := c.AddResource("https://example.test/actions.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("https://example.test/actions.schema.json#/$defs/StateAction"); err != nil {
		t.Errorf("after the fix: %v", err)
	}
}

func TestDropEmptyRefs(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(`{"$defs":{
		"U":{"oneOf":[{"$ref":"#/$defs/"},{"$ref":"#/$defs/A"},{"$ref":"#/$defs/","description":"kept: not only a $ref"}]},
		"V":{"anyOf":[{"$ref":"#/$defs/"}],"items":{"oneOf":[{"$ref":"#/$defs/"},{"type":"string"}]}},
		"W":{"enum":[{"$ref":"#/$defs/"}]}}}`), &doc); err != nil {
		t.Fatal(err)
	}
	if n := DropEmptyRefs(doc); n != 3 {
		t.Errorf("dropped %d, want 3", n)
	}
	got, _ := json.Marshal(doc)
	want := `{"$defs":{"U":{"oneOf":[{"$ref":"#/$defs/A"},{"$ref":"#/$defs/","description":"kept: not only a $ref"}]},"V":{"anyOf":[],"items":{"oneOf":[{"type":"string"}]}},"W":{"enum":[{"$ref":"#/$defs/"}]}}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestValidate(t *testing.T) {
	v := Load(t)
	valid := []struct{ def, doc string }{
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"client","clientId":"c1"}}`},
		{"TerminalState", `{"title":"bash","cwd":"file:///w","cols":80,"rows":24,"content":[{"type":"unclassified","value":"$ "},
			{"type":"command","commandId":"c1","commandLine":"ls","output":"","timestamp":1,"isComplete":false}],
			"claim":{"kind":"session","session":"ahp-session:/s1","turnId":"t","toolCallId":"tc"},"exitCode":0,"supportsCommandDetection":true,"isPty":false}`},
		// The host's 1.x additions: lifecycle beside the flat exitCode, a claim's chat.
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"session","session":"ahp-session:/s1","chat":"ahp-chat:/c1"},
			"lifecycle":{"status":"exited","exitCode":2},"exitCode":2}`},
		{"TerminalInfo", `{"resource":"ahp-terminal:/t1","title":"bash","claim":{"kind":"client","clientId":"c"},"lifecycle":{"status":"running"}}`},
		{"RootState", `{"agents":[]}`},
		{"RootState", `{"agents":[],"terminals":[{"resource":"ahp-terminal:/t1","title":"t","claim":{"kind":"client","clientId":""}}],
			"config":{"schema":{"type":"object","properties":{}},"values":{}}}`},
		{"Snapshot", `{"resource":"ahp-terminal:/t1","state":{"title":"t","content":[],"claim":{"kind":"client","clientId":"c"}},"fromSeq":0}`},
		{"ActionEnvelope", `{"channel":"ahp-terminal:/t1","action":{"type":"terminal/data","data":"x"},"serverSeq":9007199254740993}`},
		{"ActionEnvelope", `{"channel":"ahp-terminal:/t1","action":{"type":"terminal/exited"},"serverSeq":1,"origin":{"clientId":"c","clientSeq":1},"rejectionReason":"no"}`},
		{"InitializeResult", `{"protocolVersion":"1.0.0","serverSeq":0,"snapshots":[],"terminalCommandPrefix":"!"}`},
		{"UnsupportedProtocolVersionErrorData", `{"supportedVersions":["^1.0.0"]}`},
	}
	for _, c := range valid {
		if err := v.Validate(c.def, mustJSON(t, c.doc)); err != nil {
			t.Errorf("%s %s: %v", c.def, c.doc, err)
		}
	}
	invalid := []struct{ def, doc string }{
		{"TerminalState", `{"title":"bash","claim":{"kind":"client","clientId":"c1"}}`},                // no content
		{"TerminalState", `{"title":"bash","content":null,"claim":{"kind":"client","clientId":"c1"}}`}, // content null
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"robot"}}`},                    // claim kind
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"client"}}`},                   // clientId
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"session"}}`},                  // session
		{"TerminalState", `{"title":"bash","content":[{"type":"weird","value":""}],"claim":{"kind":"client","clientId":"c"}}`},
		{"TerminalState", `{"title":"bash","content":[{"type":"command","commandId":"c","output":""}],"claim":{"kind":"client","clientId":"c"}}`},
		{"TerminalState", `{"title":"bash","content":[],"claim":{"kind":"client","clientId":"c"},"cols":"80"}`},
		{"TerminalState", `[]`},
		{"TerminalInfo", `{"title":"bash","claim":{"kind":"client","clientId":"c"}}`},
		{"RootState", `{"terminals":[]}`},
		{"RootState", `{"agents":null}`},
		{"ActionEnvelope", `{"channel":"c","action":{"type":"terminal/nope"},"serverSeq":1}`},
		{"ActionEnvelope", `{"channel":"c","action":{"type":"terminal/data"},"serverSeq":1}`},
		{"ActionEnvelope", `{"channel":"c","action":{"type":"terminal/data","data":"x"},"serverSeq":"1"}`},
		{"ActionEnvelope", `{"channel":"c","action":{"type":"terminal/data","data":"x"},"serverSeq":1,"origin":{"clientId":"c"}}`},
		{"InitializeResult", `{"protocolVersion":"1.0.0","serverSeq":0}`},
		{"UnsupportedProtocolVersionErrorData", `{"supportedVersions":"^1.0.0"}`},
	}
	for _, c := range invalid {
		if err := v.Validate(c.def, mustJSON(t, c.doc)); err == nil {
			t.Errorf("%s %s: valid", c.def, c.doc)
		} else if !strings.Contains(err.Error(), c.def) {
			t.Errorf("error does not name %s: %v", c.def, err)
		}
	}
}

func TestValidateInstanceForms(t *testing.T) {
	v := Load(t)
	type claim struct {
		Kind     string `json:"kind"`
		ClientID string `json:"clientId"`
	}
	forms := map[string]any{
		"decoded":         mustJSON(t, `{"kind":"client","clientId":"c"}`),
		"raw":             json.RawMessage(`{"kind":"client","clientId":"c"}`),
		"bytes":           []byte(`{"kind":"client","clientId":"c"}`),
		"struct":          claim{"client", "c"},
		"pointer":         &claim{"client", "c"},
		"map of strings":  map[string]string{"kind": "client", "clientId": "c"},
		"json.Number map": map[string]any{"kind": "client", "clientId": "c", "extra": json.Number("1e400")},
	}
	for name, inst := range forms {
		if err := v.Validate("TerminalClientClaim", inst); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := v.Validate("TerminalClientClaim", json.RawMessage(`{"kind":`)); err == nil {
		t.Error("broken raw JSON validated")
	}
	if err := v.Validate("TerminalClientClaim", make(chan int)); err == nil {
		t.Error("a channel validated")
	}
}

func TestValidateConcurrently(t *testing.T) {
	v := Load(t)
	defs := []string{"TerminalState", "TerminalInfo", "RootState", "Snapshot", "ActionEnvelope", "InitializeResult", "TerminalClaim"}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			def := defs[i%len(defs)]
			for j := 0; j < 5; j++ {
				if err := v.Validate(def, map[string]any{}); err == nil {
					t.Errorf("%s: {} validated", def)
				}
			}
		}(i)
	}
	wg.Wait()
}

func TestFindAHPDir(t *testing.T) {
	dir, ok := FindAHPDir()
	if !ok {
		t.Skip("no shared folder here")
	}
	if filepath.Base(dir) != "ahp-"+Version || filepath.Base(filepath.Dir(dir)) != "shared" {
		t.Errorf("found %s", dir)
	}
	for _, sub := range []string{"schema", "reducers", "round-trips"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			t.Errorf("%s has no %s folder", dir, sub)
		}
	}
}

// The line a package without the schemas prints names the package and the folder.
func TestMissingLine(t *testing.T) {
	var b strings.Builder
	writeMissing(&b, "server")
	if got, want := b.String(), "server: schema tests skipped: ../shared/ahp-0.8.0 not found\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}
