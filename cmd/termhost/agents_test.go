package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentsFile reads the state folder's agents.json: each command line split as
// --agent splits it; no file is no agents; a file of another shape stops the host
// with an error naming it.
func TestAgentsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, agentsFile)
	if got, err := readAgentsFile(path); err != nil || len(got) != 0 {
		t.Fatalf("no file: %v %v", got, err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"agents": {"claude": "npx @zed-industries/claude-code-acp --verbose", "quoted": "'/opt/my agent/run' --acp"}}`)
	got, err := readAgentsFile(path)
	if err != nil || !slices.Equal(got["claude"], []string{"npx", "@zed-industries/claude-code-acp", "--verbose"}) ||
		!slices.Equal(got["quoted"], []string{"/opt/my agent/run", "--acp"}) {
		t.Fatalf("read %q, %v", got, err)
	}
	for _, bad := range []string{`{"agents": {"a": ["npx", "x"]}}`, `{"agent": {"a": "x"}}`, `{"agents": {"no spaces": "x"}}`, `{"agents": {"a": ""}}`,
		`{"agents": {"a": "x"}} {}`, `not json`} {
		write(bad)
		if _, err := readAgentsFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v", bad, err)
		}
	}

	// serve refuses to start on it, saying why, before it listens.
	err = run([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", dir}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), agentsFile) {
		t.Fatalf("serve with a malformed %s: %v", agentsFile, err)
	}
	err = run([]string{"serve", "--listen", "127.0.0.1:0", "--state-dir", dir, "--agent", "no-command="}, io.Discard, io.Discard)
	if _, usage := err.(usageError); !usage || !strings.Contains(err.Error(), "--agent") {
		t.Fatalf("serve with a bad --agent: %v", err)
	}
}
