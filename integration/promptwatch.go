package integration

import (
	"strings"
	"time"

	"github.com/termhost/termhost/pty"
)

// A shell that marks no boundaries is told to echo the sentinel after a command. The
// line that tells it must not be typed while the command runs: it would wait in the
// terminal's input queue, and a command that reads the terminal would read it
// (head, apt-get's question, a REPL), and the shell, back at its prompt, would never
// echo the sentinel. So it is typed once the shell itself reads its terminal again.
// The host's two typists of commands (the agent shell tools and a `!` command) look
// for that with ShellReadsAgain, paced by PromptLooks.

// Echoed reports whether out, what a terminal printed since a line was typed into
// it, holds the line's echo (its last bytes; of a command of several lines, its last
// line's): the line discipline echoes a line as it hands it to the shell, so before
// the echo the shell seen reading may not have read the line yet, and any output
// before it (a spare shell's prompt arriving late) says nothing. A line that echoes
// nothing recognisable (control characters) is waited for by the caller's own bound.
func Echoed(out, line string) bool {
	tail := strings.TrimSpace(line)
	if i := strings.LastIndexByte(tail, '\n'); i >= 0 {
		tail = strings.TrimSpace(tail[i+1:])
	}
	if len(tail) > 16 {
		tail = tail[len(tail)-16:]
	}
	return strings.Contains(out, tail)
}

// EchoWait bounds how long a caller waits for Echoed before it looks anyway: a
// shell that turned the terminal's echo off never echoes.
const EchoWait = time.Second

// ShellReadsAgain reports whether the shell with pid, which leads its terminal's
// session, is itself waiting to read its terminal with no job of its own in the
// foreground: back at its prompt, or in a read builtin.
func ShellReadsAgain(pid int) bool {
	w := pty.ForegroundInput(pid)
	return w.Waiting && w.Pid == pid
}

// PromptLooks paces the looks for a shell's prompt after a command: close together
// at first (most commands end within a millisecond or two, and a look costs about a
// tenth of one), twice as far apart after each look that finds the command still
// running, up to a tenth of a second (how late a long command's end is seen, beyond
// the look), and close again whenever the command prints (a shell back at its
// prompt prints it). The zero value starts at the first gap.
type PromptLooks struct{ every time.Duration }

const (
	firstPromptLook = 250 * time.Microsecond
	maxPromptLook   = 100 * time.Millisecond
)

// Next is the gap before the next look, after one that did not find the prompt (or
// before the first).
func (l *PromptLooks) Next() time.Duration {
	if l.every == 0 {
		l.every = firstPromptLook
		return l.every
	}
	l.every = min(2*l.every, maxPromptLook)
	return l.every
}

// Printed says the command printed; it reports whether the looks had drawn apart,
// so that a look already waiting should be brought near: the caller stops its timer
// and waits Next again.
func (l *PromptLooks) Printed() bool {
	if l.every <= firstPromptLook {
		return false
	}
	l.every = 0
	return true
}
