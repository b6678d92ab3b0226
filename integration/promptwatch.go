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
// The host's two typists of commands (the agent shell tools and a `!` command) hold
// an OwedSentinel for such a command, and look when it says, off their mailbox.
// On pipes the same holds: the line would wait in the shell's input pipe, where a
// command reading its standard input would read it.

// SentinelsOwed says whether a sentinel can be owed here: whether a shell can be
// seen reading again. Where it cannot, the sentinel is typed after the command.
const SentinelsOwed = pty.InputSeen

// OwedSentinel is a sentinel not typed yet: the command it ends was typed into a
// shell without marks, under a pseudoterminal or on pipes, and the line that echoes
// the sentinel waits until the shell itself reads its terminal (or its pipe) again.
// Its holder keeps the timer and runs Look off its mailbox; nil is no sentinel owed.
type OwedSentinel struct {
	id, command string
	pid         int
	typed       time.Time
	looks       PromptLooks
	// onPipes: the shell reads a pipe, and written says the command's line has
	// reached it.
	onPipes, written bool
}

// Owe is the sentinel id owed for command, just typed into the shell with pid.
func Owe(id, command string, pid int) *OwedSentinel {
	return &OwedSentinel{id: id, command: command, pid: pid, typed: time.Now()}
}

// OweOnPipes is Owe for a shell on pipes. Nothing echoes there: its looks wait
// instead until the holder says the command's line has been written to the pipe
// (Wrote). From then on the shell seen blocked reading the pipe has read the line
// and run the command, since a read of a pipe blocks only when it is empty.
func OweOnPipes(id, command string, pid int) *OwedSentinel {
	o := Owe(id, command, pid)
	o.onPipes = true
	return o
}

// Wrote says the command's line has been written to the shell's pipe; it reports,
// as Printed does, whether a look already waiting should be brought near.
func (o *OwedSentinel) Wrote() bool {
	if o == nil || o.written {
		return false
	}
	o.written = true
	return o.looks.Printed()
}

// Next is the gap before the next look.
func (o *OwedSentinel) Next() time.Duration { return o.looks.Next() }

// Printed says the command printed; it reports whether the looks had drawn apart,
// so that a look already waiting should be brought near (the holder stops its timer
// and looks now).
func (o *OwedSentinel) Printed() bool { return o != nil && o.looks.Printed() }

// MayLook says whether a look can tell anything yet, given out, what the terminal
// printed since the command was typed: not before the command's line has come back
// (Echoed), unless EchoWait has passed (a shell with the echo off).
// On pipes it is once the line is written (Wrote).
func (o *OwedSentinel) MayLook(out string) bool {
	if o.onPipes {
		return o.written
	}
	return Echoed(out, o.command) || time.Since(o.typed) >= EchoWait
}

// Look reports whether the shell reads its terminal (or its pipe) again
// (ShellReadsAgain). It reads /proc: run it off the mailbox.
func (o *OwedSentinel) Look() bool { return ShellReadsAgain(o.pid) }

// Line is what to type once Look says so: the sentinel's echo, with a leading space
// that keeps it out of a POSIX shell's history, and the return that enters it.
func (o *OwedSentinel) Line() string { return " " + SentinelEcho(o.id) + "\r" }

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
// On pipes, its terminal is the pipe it reads its commands from. Only the shell is
// looked at (pty.ShellReadsInput), so a look costs the same beside a build of
// hundreds of processes as beside one.
func ShellReadsAgain(pid int) bool { return pty.ShellReadsInput(pid) }

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
