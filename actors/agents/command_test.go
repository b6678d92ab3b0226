package agents_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/termhost/termhost/actors/agents"
)

// TestParseCommand: a --agent value is a name and a command line split as a shell
// splits words, without expanding anything; a whole quoted command is the command
// line.
func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		flag string
		name string
		argv []string
	}{
		{"claude=npx @zed-industries/claude-code-acp", "claude", []string{"npx", "@zed-industries/claude-code-acp"}},
		{"claude='npx @zed-industries/claude-code-acp --debug'", "claude", []string{"npx", "@zed-industries/claude-code-acp", "--debug"}},
		{`gem="gemini --experimental-acp"`, "gem", []string{"gemini", "--experimental-acp"}},
		{`x='"/opt/my agent/run" --acp'`, "x", []string{"/opt/my agent/run", "--acp"}},
		{`x=run 'a b' "c \"d\" \$e" f\ g`, "x", []string{"run", "a b", `c "d" $e`, "f g"}},
		{`x=run $HOME ~ *`, "x", []string{"run", "$HOME", "~", "*"}},
		{`x=run ''`, "x", []string{"run", ""}},
		{"x=  spaced\targs  ", "x", []string{"spaced", "args"}},
		{"my-agent.v2=a=b", "my-agent.v2", []string{"a=b"}},
	} {
		name, argv, err := agents.ParseCommand(tc.flag)
		if err != nil || name != tc.name || !slices.Equal(argv, tc.argv) {
			t.Errorf("ParseCommand(%q) = %q %q %v, want %q %q", tc.flag, name, argv, err, tc.name, tc.argv)
		}
	}
	for _, tc := range []struct{ flag, says string }{
		{"claude", "want NAME=COMMAND"},
		{"=npx acp", "name before '=' is empty"},
		{"my agent=npx", "a name has only"},
		{"x=", "no command"},
		{"x=''", "no command"},
		{"x='npx acp", "single quote at byte 1 is never closed"},
		{`x=npx "acp`, "double quote at byte 5 is never closed"},
		{`x=npx acp\`, "backslash"},
	} {
		_, _, err := agents.ParseCommand(tc.flag)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseCommand(%q) error %v, want one saying %q", tc.flag, err, tc.says)
		}
	}
}
