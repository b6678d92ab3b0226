package versioning_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
	"github.com/termhost/termhost/messages/versioning"
)

// TestMain says once when the schemas are not there to test against, so the skip is
// not silent.
func TestMain(m *testing.M) {
	schematest.NoteIfMissing("messages/versioning")
	os.Exit(m.Run())
}

func TestNegotiate(t *testing.T) {
	accept := []struct {
		offered []string
		want    string
	}{
		{[]string{"1.0.0"}, "1.0.0"},
		{[]string{"1.0.0", "0.9.0"}, "1.0.0"},
		{[]string{"0.9.0", "1.0.0"}, "1.0.0"},
		{[]string{"0.5.1", "0.9.3", "0.8.0"}, "0.9.3"},
		{[]string{"0.8.0", "0.9.3", "0.5.1"}, "0.9.3"},
		{[]string{"1.2.3"}, "1.2.3"},
		{[]string{"1.0.0", "1.2.3", "0.7.0"}, "1.2.3"},
		{[]string{"0.7.0", "1.2.3", "1.0.0"}, "1.2.3"},
		{[]string{"1.99.0", "1.100.0"}, "1.100.0"},
		{[]string{"0.5.1"}, "0.5.1"},
		{[]string{"0.5.9"}, "0.5.9"},
		{[]string{"0.5.0", "0.5.9"}, "0.5.9"},
		{[]string{"0.9.3"}, "0.9.3"},
		{[]string{"0.6.4", "0.7.0"}, "0.7.0"},
		{[]string{"2.0.0", "0.6.4"}, "0.6.4"},
		{[]string{"0.10.0", "0.8.1"}, "0.8.1"},
	}
	for _, c := range accept {
		got, e := versioning.Negotiate(c.offered)
		if e != nil || got != c.want {
			t.Errorf("Negotiate(%q) = %q, %v; want %q", c.offered, got, e, c.want)
		}
	}
	refuse := [][]string{{"0.5.0"}, {"2.0.0"}, {"0.4.9", "2.1.0"}, {"0.10.0"}, {"0.0.1"}, {}, nil}
	for _, offered := range refuse {
		got, e := versioning.Negotiate(offered)
		if e == nil {
			t.Errorf("Negotiate(%q) = %q, want -32005", offered, got)
			continue
		}
		if e.Code != messages.CodeUnsupportedProtocolVersion {
			t.Errorf("Negotiate(%q): code %d, want -32005", offered, e.Code)
		}
		var frame struct {
			Error struct {
				Data map[string][]string `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(messages.ErrorFrame(json.RawMessage(`1`), e), &frame); err != nil {
			t.Fatalf("Negotiate(%q): the -32005 frame does not decode: %v", offered, err)
		}
		want := map[string][]string{"supportedVersions": {"^1.0.0", "^0.9.0", "^0.8.0", "^0.7.0", "^0.6.0", "^0.5.1"}}
		if !reflect.DeepEqual(frame.Error.Data, want) {
			t.Errorf("-32005 data = %v, want %v", frame.Error.Data, want)
		}
		for _, v := range offered {
			if !strings.Contains(e.Message, v) {
				t.Errorf("message %q does not name the offered %s", e.Message, v)
			}
		}
	}
	malformed := []string{"1.0", "1", "1.0.0.0", "", "v1.0.0", "1.0.0-beta", "1.0.0+build", "01.0.0", "1.00.0",
		"+1.0.0", "1.+0.0", "-0.5.1", "1.-0.0", " 1.0.0", "1.0.0 ", "1..0", "1.0.x", "١.٠.٠"}
	for _, v := range malformed {
		for _, offered := range [][]string{{v}, {"1.0.0", v}, {v, "1.0.0"}} {
			got, e := versioning.Negotiate(offered)
			if e == nil || e.Code != messages.CodeInvalidParams {
				t.Errorf("Negotiate(%q) = %q, %v; want -32602", offered, got, e)
			}
		}
	}
	// Every range the host names accepts its own baseline.
	for _, r := range versioning.SupportedVersions() {
		v := strings.TrimPrefix(r, "^")
		if got, e := versioning.Negotiate([]string{v}); e != nil || got != v {
			t.Errorf("baseline %s: %q, %v", v, got, e)
		}
	}
}

func TestUnsupportedVersionDataValidates(t *testing.T) {
	v := schematest.Load(t)
	_, e := versioning.Negotiate([]string{"2.0.0"})
	if e == nil {
		t.Fatal("2.0.0 accepted")
	}
	if err := v.Validate("UnsupportedProtocolVersionErrorData", e.Data); err != nil {
		t.Error(err)
	}
}
