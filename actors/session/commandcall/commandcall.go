// Package commandcall owns how a `!` command shows in a chat as a tool call: which
// turns are commands, the terminal block naming the command's terminal, what the
// command printed as a person reads it, and the completed call's result as the run
// ended (its past tense, its error, its exit code and the tail of what it printed).
// It holds no state and runs nothing: the session runs each command in a terminal,
// reads its output and decides how it ended.
package commandcall

import (
	"fmt"
	"strings"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/screen"
)

// How a `!` command shows as a tool call, and its terminal's title.
const (
	ToolName    = "terminal"
	DisplayName = "Terminal"
	Title       = "Terminal"
)

// How a run ended: the completed call's past tense, in the seed's (and VS Code's)
// words. A command that exits with a code other than 0 says so instead (Exited).
const (
	Ran          = "Ran command"
	TimedOut     = "Command timed out"
	ShellExited  = "Shell exited unexpectedly"
	InBackground = "Command is running in the background"
	Interactive  = "Command opened an interactive terminal"
	Failed       = "Failed to run command"
)

// previewLimit is how much of a command's printed text its completed call carries.
const previewLimit = 80_000

// Parse is the shell command a turn's text asks for: text after a leading `!`. A
// lone `!`, or one followed only by spaces, is somebody typing an exclamation point.
func Parse(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "!")
	if !ok {
		return "", false
	}
	cmd := strings.TrimSpace(rest)
	return cmd, cmd != ""
}

// Block is the terminal block naming a command's terminal.
func Block(terminal string, isPty bool) messages.TerminalContent {
	return messages.TerminalContent{Resource: terminal, Title: Title, IsPty: isPty}
}

// Output is what a command's terminal printed once the command was typed.
type Output struct {
	// Raw is the terminal's output as it came, escape sequences included: with
	// Marks, from the command's start mark on.
	Raw string
	// Marks says the command's end is read from the shell integration's finished
	// mark; without them, from the line the sentinel echo prints.
	Marks bool
	// Command is the command as typed, Sentinel the id its sentinel echo carries.
	Command, Sentinel string
}

// Printed is the command's text without escape sequences or the sentinel's lines.
func (o Output) Printed() string {
	text := screen.StripEscapes(o.Raw)
	if o.Marks {
		return text
	}
	out := integration.WithoutSentinel(text, o.Sentinel)
	// Under a pseudoterminal the shell echoes the typed line first.
	out = strings.TrimPrefix(out, " "+o.Command+"\n")
	return out
}

// Ending is how a command's run ended.
type Ending struct {
	// How is the call's past tense: one of the endings above, or Exited's.
	How     string
	Success bool
	// Failure is why the command could not run (its terminal did not start, the
	// host is closing); nil when it ran. A failure's call says Failed, unsuccessful,
	// whatever How says.
	Failure error
	// Exit is the command's exit code, when it exited.
	Exit *int
}

// Exited is the ending of a command that exited with code: it ran when the code is
// 0, and says the code otherwise.
func Exited(code int) Ending {
	if code == 0 {
		return Ending{How: Ran, Success: true, Exit: &code}
	}
	return Ending{How: fmt.Sprintf("Command exited with code %d", code), Exit: &code}
}

// Result is the completed call's result for a command that ended so. A command that
// ran carries its block with its exit code and the last previewLimit characters of
// what it printed, and one that timed out or whose shell exited says so as its
// error too. One that failed carries its block, without a result, only when it was
// typed: its terminal was opened.
func (e Ending) Result(block messages.TerminalContent, typed bool, out Output) messages.ToolCallResult {
	result := messages.ToolCallResult{Success: e.Success, PastTenseMessage: e.How}
	if e.Failure != nil {
		result.PastTenseMessage = Failed
		result.Error = &messages.ToolCallError{Message: e.Failure.Error()}
		result.Success = false
	} else {
		preview, truncated := lastChars(out.Printed(), previewLimit)
		block.Result = &messages.TerminalCommandResult{ExitCode: e.Exit, Preview: preview, Truncated: truncated}
		if e.How == TimedOut || e.How == ShellExited {
			result.Error = &messages.ToolCallError{Message: e.How}
		}
	}
	if typed || e.Failure == nil {
		result.Content = []messages.TerminalContent{block}
	}
	return result
}

// lastChars keeps the last n characters of s.
func lastChars(s string, n int) (string, bool) {
	r := []rune(s)
	if len(r) <= n {
		return s, false
	}
	return string(r[len(r)-n:]), true
}
