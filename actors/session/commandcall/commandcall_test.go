package commandcall

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
)

// TestParse: a turn is a command when its text starts with `!` and something other
// than spaces follows; the command is that, trimmed.
func TestParse(t *testing.T) {
	cases := []struct {
		text, want string
		ok         bool
	}{
		{"!ls -la", "ls -la", true},
		{"!  echo hi  ", "echo hi", true},
		{"!", "", false},
		{"!   ", "", false},
		{"hello!", "", false},
		{" !ls", "", false},
	}
	for _, c := range cases {
		if got, ok := Parse(c.text); got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

// TestPrinted reads a command's own text out of its terminal's output: without
// escape sequences and carriage returns, and, read by its sentinel, without the
// sentinel's lines or the shell's echo of the typed line.
func TestPrinted(t *testing.T) {
	marked := Output{Raw: "\x1b[32mok\x1b[0m\r\n", Marks: true, Command: "echo ok"}
	if got := marked.Printed(); got != "ok\n" {
		t.Errorf("with marks: %q, want %q", got, "ok\n")
	}
	const id = "abc123"
	raw := " echo hi\r\n" + integration.SentinelEcho(id) + "\r\nhi\r\n<<<" + integration.SentinelPrefix + id + "_EXIT_0>>>\r\n"
	bySentinel := Output{Raw: raw, Command: "echo hi", Sentinel: id}
	if got := bySentinel.Printed(); got != "hi\n" {
		t.Errorf("by its sentinel: %q, want %q", got, "hi\n")
	}
}

// TestResult builds the completed call of each way a command's run ends.
func TestResult(t *testing.T) {
	const uri = "ahp-terminal:/termhost-command/c/cmd-1"
	out := Output{Raw: "done\r\n", Marks: true}
	zero, three := 0, 3
	withResult := func(exit *int, preview string) []messages.TerminalContent {
		b := Block(uri, true)
		b.Result = &messages.TerminalCommandResult{ExitCode: exit, Preview: preview}
		return []messages.TerminalContent{b}
	}
	cases := []struct {
		name  string
		end   Ending
		typed bool
		want  messages.ToolCallResult
	}{
		{"exited 0", Exited(0), true,
			messages.ToolCallResult{Success: true, PastTenseMessage: Ran, Content: withResult(&zero, "done\n")}},
		{"exited 3", Exited(3), true,
			messages.ToolCallResult{PastTenseMessage: "Command exited with code 3", Content: withResult(&three, "done\n")}},
		{"timed out", Ending{How: TimedOut}, true,
			messages.ToolCallResult{PastTenseMessage: TimedOut, Error: &messages.ToolCallError{Message: TimedOut}, Content: withResult(nil, "done\n")}},
		{"shell exited", Ending{How: ShellExited}, true,
			messages.ToolCallResult{PastTenseMessage: ShellExited, Error: &messages.ToolCallError{Message: ShellExited}, Content: withResult(nil, "done\n")}},
		{"in the background", Ending{How: InBackground, Success: true}, true,
			messages.ToolCallResult{Success: true, PastTenseMessage: InBackground, Content: withResult(nil, "done\n")}},
		{"failed before it was typed", Ending{How: Failed, Success: true, Failure: errors.New("the terminal did not start")}, false,
			messages.ToolCallResult{PastTenseMessage: Failed, Error: &messages.ToolCallError{Message: "the terminal did not start"}}},
		{"failed once typed", Ending{How: Interactive, Failure: errors.New("closing")}, true,
			messages.ToolCallResult{PastTenseMessage: Failed, Error: &messages.ToolCallError{Message: "closing"}, Content: []messages.TerminalContent{Block(uri, true)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.end.Result(Block(uri, true), c.typed, out); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestResultPreviewKeepsTheTail: a call carries the last previewLimit characters of
// what the command printed, counted in characters, not bytes, and says it cut.
func TestResultPreviewKeepsTheTail(t *testing.T) {
	printed := "é" + strings.Repeat("x", previewLimit-1) + "ü"
	got := Exited(0).Result(Block("t", false), true, Output{Raw: printed, Marks: true})
	res := got.Content[0].Result
	if !res.Truncated || res.Preview != printed[len("é"):] {
		t.Fatalf("preview of %d runes: truncated %v, %d bytes; want the last %d runes", previewLimit+1, res.Truncated, len(res.Preview), previewLimit)
	}
	got = Exited(0).Result(Block("t", false), true, Output{Raw: printed[len("é"):], Marks: true})
	if res := got.Content[0].Result; res.Truncated || res.Preview != printed[len("é"):] {
		t.Fatalf("a preview of exactly %d runes was cut", previewLimit)
	}
}
