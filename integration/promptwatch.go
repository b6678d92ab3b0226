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
// nil is no sentinel owed.
//
// Once its holder (an actor) calls Start, it drives its own looks: a timer tells
// the holder's mailbox a look is due (SentinelDue), the look runs off the mailbox
// and tells what it found (SentinelLooked), and the holder hands each back (Due,
// Looked) with what only it knows, the command's output, and types the line Looked
// returns. Every method but Start's timer and look runs on the holder's mailbox.
type OwedSentinel struct {
	id, command string
	pid         int
	typed       time.Time
	looks       PromptLooks
	// onPipes: the shell reads a pipe, and written says the command's line has
	// reached it.
	onPipes, written bool

	key   any       // the holder's name for the command, in every message
	tell  func(any) // reaches the holder's mailbox
	timer *time.Timer
}

// SentinelDue tells the holder that a look at the shell is due: it calls
// Owed.Due, if Owed is still the sentinel its command Key owes.
type SentinelDue struct {
	Key  any
	Owed *OwedSentinel
}

// SentinelLooked tells the holder what a look found: it calls Owed.Looked, if
// Owed is still the sentinel its command Key owes.
type SentinelLooked struct {
	Key  any
	Owed *OwedSentinel
	back bool
}

// Start begins the looks of a sentinel just owed: key names the command in the
// messages tell sends to the holder's mailbox.
func (o *OwedSentinel) Start(key any, tell func(any)) {
	o.key, o.tell = key, tell
	o.arm()
}

// Stop ends the looks of a command that is over; a look already made is ignored
// by its holder.
func (o *OwedSentinel) Stop() {
	if o != nil && o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

func (o *OwedSentinel) arm() {
	key, tell := o.key, o.tell
	o.timer = time.AfterFunc(o.looks.Next(), func() { tell(&SentinelDue{Key: key, Owed: o}) })
}

// Due is a SentinelDue handed back with out, what the terminal printed since the
// command was typed: the look is made, off the mailbox, once it can tell anything
// (MayLook), and otherwise waits the next gap.
func (o *OwedSentinel) Due(out string) {
	o.timer = nil
	if !o.MayLook(out) {
		o.arm()
		return
	}
	key, tell, pid := o.key, o.tell, o.pid
	// The shell itself, back at its prompt (or in a read builtin) with no job of
	// its own in the foreground, reads its terminal or its pipe again. Only the
	// shell is looked at, so a look costs the same beside a build of hundreds of
	// processes as beside one.
	go func() { tell(&SentinelLooked{Key: key, Owed: o, back: pty.ShellReadsInput(pid)}) }()
}

// Looked is a SentinelLooked handed back: the line to type, once the shell reads
// again (nothing is owed after it), or false and the next look waits its gap.
func (o *OwedSentinel) Looked(m *SentinelLooked) (line string, ok bool) {
	if !m.back {
		o.arm()
		return "", false
	}
	return o.Line(), true
}

// Output says the command printed, out being all it printed since it was typed: a
// shell back at its prompt prints it. A look waiting on its timer after the looks
// drew apart is made now, not after the first gap: in an idle Go process a timer
// under a millisecond takes about one (the poller sleeps in whole milliseconds),
// and the output is itself the news.
func (o *OwedSentinel) Output(out string) {
	if o.Printed() && o.timer != nil && o.timer.Stop() {
		o.Due(out)
	}
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

// Wrote says the command's line has been written to the shell's pipe. A look
// waiting on its timer after the looks drew apart waits the first gap again; it
// reports, as Printed does, whether the looks had drawn apart.
func (o *OwedSentinel) Wrote() bool {
	if o == nil || o.written {
		return false
	}
	o.written = true
	near := o.looks.Printed()
	if near && o.timer != nil && o.timer.Stop() {
		o.arm()
	}
	return near
}

// Next is the gap before the next look.
func (o *OwedSentinel) Next() time.Duration { return o.looks.Next() }

// Printed brings the looks near again; it reports whether they had drawn apart.
// A holder that has started the looks calls Output instead.
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

// Line is what to type once the shell reads again: the sentinel's echo, with a
// leading space that keeps it out of a POSIX shell's history, and the return that
// enters it.
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
