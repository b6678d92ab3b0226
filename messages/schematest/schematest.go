// Package schematest validates JSON values against the AHP 0.8.0 JSON Schemas kept in
// shared/ahp-0.8.0/schema, for tests of any package that puts AHP shapes on the wire.
//
// The shared folder is found by walking up from the test's working directory to the
// first ancestor with a child folder named shared that holds ahp-0.8.0. In the
// workspace that is /work/shared beside the repository at /work/main; CI clones the
// repository next to shared/ the same way. When it is not there, Load and AHPDir skip
// the test rather than fail it, and NoteIfMissing, called from a package's TestMain,
// says so once in the output of a plain `go test ./...`.
//
// What the 0.8.0 schemas say about the host's 1.x additions: none of their object
// definitions sets additionalProperties (or unevaluatedProperties) to false, so the
// 1.x-only keys the host sends, `lifecycle` on TerminalState and TerminalInfo (beside
// the flat `exitCode`) and `chat` on a session claim, validate as they are. The
// schemas cannot require them either: a missing `lifecycle` is valid 0.8.0.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Version is the protocol version of the data this package reads.
const Version = "0.8.0"

// schemaFiles are the schema documents, in the order a definition is looked up: a
// name defined in several files (most are repeated in each) is taken from the first.
var schemaFiles = []string{
	"state.schema.json",
	"actions.schema.json",
	"commands.schema.json",
	"notifications.schema.json",
	"errors.schema.json",
}

// FindAHPDir walks up from the working directory looking for shared/ahp-0.8.0 and
// returns its path.
func FindAHPDir() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; {
		cand := filepath.Join(dir, "shared", "ahp-"+Version)
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			return cand, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// AHPDir returns the path of shared/ahp-0.8.0, or skips the test when there is none.
func AHPDir(t testing.TB) string {
	t.Helper()
	dir, ok := FindAHPDir()
	if !ok {
		t.Skipf("shared/ahp-%s not found in any parent of the working directory (expected a folder named shared beside the repository); skipping", Version)
	}
	return dir
}

// Validator validates instances against the definitions ($defs) of the AHP schemas.
// It is safe for concurrent use.
type Validator struct {
	// owner maps a definition name to the base URL of the schema file holding it.
	owner map[string]string
	// files is the base URL of each schema file, by file name.
	files map[string]string
	// dropped counts the broken union entries removed before compiling.
	dropped int

	mu       sync.Mutex // guards compiler and compiled
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Validator{}
)

// Load returns a validator of the schemas in shared/ahp-0.8.0/schema. It skips the
// test when the shared folder is absent and fails it when the schemas do not load.
// Validators are cached per folder, so calling Load in every test is cheap.
func Load(t testing.TB) *Validator {
	t.Helper()
	dir := AHPDir(t)
	v, err := LoadDir(filepath.Join(dir, "schema"))
	if err != nil {
		t.Fatalf("schematest: %v", err)
	}
	return v
}

// LoadDir loads the schemas of a folder, without a testing.TB.
func LoadDir(dir string) (*Validator, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if v := cache[dir]; v != nil {
		return v, nil
	}
	v := &Validator{
		owner:    map[string]string{},
		files:    map[string]string{},
		compiler: jsonschema.NewCompiler(),
		compiled: map[string]*jsonschema.Schema{},
	}
	for _, name := range schemaFiles {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a JSON object", path)
		}
		// The known defect of the 0.8.0 data: the StateAction union of
		// actions.schema.json has an entry {"$ref":"#/$defs/"}, a reference to no
		// definition, which a strict compiler refuses. Drop such entries.
		v.dropped += DropEmptyRefs(obj)
		base, _ := obj["$id"].(string)
		if base == "" {
			base = (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
		}
		if err := v.compiler.AddResource(base, obj); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		v.files[name] = base
		defs, _ := obj["$defs"].(map[string]any)
		for def := range defs {
			if _, seen := v.owner[def]; !seen {
				v.owner[def] = base
			}
		}
	}
	cache[dir] = v
	return v, nil
}

// emptyRef is the broken reference: a pointer to the definition named "".
const emptyRef = "#/$defs/"

// DropEmptyRefs removes from every oneOf or anyOf union in doc the entries that are
// only {"$ref":"#/$defs/"}, and returns how many it removed. doc is changed in place.
func DropEmptyRefs(doc any) int {
	n := 0
	switch d := doc.(type) {
	case map[string]any:
		for k, child := range d {
			if arr, ok := child.([]any); ok && (k == "oneOf" || k == "anyOf") {
				kept := arr[:0:0]
				for _, e := range arr {
					if m, ok := e.(map[string]any); ok && len(m) == 1 && m["$ref"] == emptyRef {
						n++
						continue
					}
					kept = append(kept, e)
				}
				d[k] = kept
				child = kept
			}
			n += DropEmptyRefs(child)
		}
	case []any:
		for _, e := range d {
			n += DropEmptyRefs(e)
		}
	}
	return n
}

// Dropped reports how many broken union entries Load removed (1 for the 0.8.0 data).
func (v *Validator) Dropped() int { return v.dropped }

// Has reports whether a definition of that name is in any of the schemas.
func (v *Validator) Has(def string) bool {
	_, ok := v.owner[def]
	return ok
}

// File names the schema file a definition is taken from, or "" if there is none.
func (v *Validator) File(def string) string {
	base, ok := v.owner[def]
	if !ok {
		return ""
	}
	for _, name := range schemaFiles {
		if v.files[name] == base {
			return name
		}
	}
	return ""
}

// Defs lists every definition name, sorted.
func (v *Validator) Defs() []string {
	out := make([]string, 0, len(v.owner))
	for def := range v.owner {
		out = append(out, def)
	}
	sort.Strings(out)
	return out
}

// Validate validates instance against the named definition, e.g. "TerminalState",
// "TerminalInfo", "RootState", "ActionEnvelope", "InitializeResult" or "Snapshot".
//
// instance is a decoded JSON value (what json.Unmarshal into an any gives), raw JSON
// as json.RawMessage or []byte, or any other Go value, which is encoded with
// encoding/json first; so a messages.TerminalState can be validated as it is.
func (v *Validator) Validate(def string, instance any) error {
	sch, err := v.schema(def)
	if err != nil {
		return err
	}
	inst, err := normalize(instance)
	if err != nil {
		return fmt.Errorf("schematest: %s: the instance is not JSON: %v", def, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("schematest: not a valid %s: %v", def, err)
	}
	return nil
}

func (v *Validator) schema(def string) (*jsonschema.Schema, error) {
	base, ok := v.owner[def]
	if !ok {
		return nil, fmt.Errorf("schematest: no definition %q in the AHP %s schemas", def, Version)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if sch := v.compiled[def]; sch != nil {
		return sch, nil
	}
	loc := base + "#/$defs/" + escapePointer(def)
	sch, err := v.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schematest: compiling %s: %v", def, err)
	}
	v.compiled[def] = sch
	return sch, nil
}

// escapePointer escapes a name as one JSON Pointer token inside a URL fragment.
func escapePointer(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return url.PathEscape(s)
}

// normalize turns an instance into the values the validator understands, with
// numbers as json.Number so none loses precision.
func normalize(instance any) (any, error) {
	var raw []byte
	switch x := instance.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(instance)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}
