package agenttools

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestFilterMatch(t *testing.T) {
	tests := []struct {
		pattern string
		line    string
		want    bool
	}{
		{"", "anything", true},
		{"", "", true},
		{"ERROR", "2024 ERROR disk full", true},
		{"ERROR", "2024 warning", false},
		{"^ok$", "ok", true},
		{"^ok$", "not ok", false},
		{"(?i)error", "Error: x", true},
		{`\d+ passed`, "12 passed, 0 failed", true},
		{"fail|error", "build failed", true},
		{"é", "café", true},
	}
	for _, tt := range tests {
		f, err := NewFilter(tt.pattern)
		if err != nil {
			t.Fatalf("NewFilter(%q): %v", tt.pattern, err)
		}
		if got := f.Match(tt.line); got != tt.want {
			t.Errorf("NewFilter(%q).Match(%q) = %v, want %v", tt.pattern, tt.line, got, tt.want)
		}
	}
}

func TestFilterNilMatchesAll(t *testing.T) {
	var f *Filter
	if !f.Match("x") {
		t.Error("a nil filter refused a line")
	}
}

func TestFilterInvalid(t *testing.T) {
	tests := []struct {
		pattern string
		says    []string
	}{
		{"(", []string{`"("`, "RE2", "missing closing )"}},
		{"[a-", []string{`"[a-"`, "missing closing ]"}},
		{"a**", []string{"invalid nested repetition"}},
		{"foo(?=bar)", []string{`"foo(?=bar)"`, "invalid or unsupported Perl syntax", "no lookaround"}},
		{`(a)\1`, []string{"invalid escape", "backreferences"}},
	}
	for _, tt := range tests {
		f, err := NewFilter(tt.pattern)
		if err == nil {
			t.Errorf("NewFilter(%q) = %v, want an error", tt.pattern, f)
			continue
		}
		for _, s := range tt.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("NewFilter(%q) error %q does not say %q", tt.pattern, err, s)
			}
		}
		var se *syntax.Error
		if !errors.As(err, &se) {
			t.Errorf("NewFilter(%q) error %v does not wrap the *syntax.Error", tt.pattern, err)
		}
	}
}
