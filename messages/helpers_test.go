package messages_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/termhost/termhost/messages/schematest"
)

// ahpDir is shared/ahp-0.8.0, found by walking up from the working directory; the
// test is skipped when there is none.
func ahpDir(t testing.TB) string {
	t.Helper()
	return schematest.AHPDir(t)
}

// fixtureFiles lists the JSON files of a folder under shared/ahp-0.8.0, sorted.
func fixtureFiles(t *testing.T, sub string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ahpDir(t), sub, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", filepath.Join(ahpDir(t), sub))
	}
	sort.Strings(files)
	return files
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generic turns v into a generic JSON value: raw JSON ([]byte, json.RawMessage) is
// decoded as it is, anything else is encoded with encoding/json first. Integers
// become int64 and other numbers float64, so 80 and 80.0 compare equal and large
// sequence numbers keep every digit.
func generic(t testing.TB, v any) any {
	t.Helper()
	var raw []byte
	switch x := v.(type) {
	case []byte:
		raw = x
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding %T: %v", v, err)
		}
		raw = b
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	if dec.More() {
		t.Fatalf("trailing data after the JSON value in %q", raw)
	}
	return normNumbers(out)
}

func normNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, err := x.Float64()
		if err != nil {
			return x
		}
		if math.Trunc(f) == f && math.Abs(f) < 1<<63 {
			return int64(f)
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normNumbers(e)
		}
	}
	return v
}

// dropNulls removes every object member whose value is null: in the fixtures a null
// means the field is absent.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropNulls(e)
		}
	}
	return v
}

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// assertJSONEqual compares two generic JSON values.
func assertJSONEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s differs\n got: %s\nwant: %s", what, pretty(got), pretty(want))
	}
}

// strictDecode decodes raw JSON into v, refusing keys v has no field for, so a
// fixture field the wire types do not model is reported instead of lost.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
