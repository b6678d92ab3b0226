package actors

import (
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// Messages between actors. Every message is sent as a pointer and never changed after
// it is sent; a byte slice in a message belongs to the receiver.

// Subscribe asks a channel actor for its snapshot and registers Sub for every action
// after it. The answer is a *SubscribeResult.
type Subscribe struct {
	Channel string
	Sub     Subscriber
}

// SubscribeResult answers Subscribe: a snapshot, or an error for the client.
type SubscribeResult struct {
	Snapshot *messages.Snapshot
	Err      *messages.Error
	// Terminal is the answering terminal's own actor, set only by a live terminal: a
	// connection dispatches its terminal/* actions there directly, not through the
	// host, whose one mailbox would otherwise carry every keystroke of every client.
	Terminal *actor.PID
}

// Unsubscribe stops a subscriber's stream on a channel.
type Unsubscribe struct {
	Channel string
	Sub     Subscriber
}

// Dispatch is a client's dispatchAction, already decoded. Raw is the action as the
// client sent it, echoed back unchanged when accepted. Sub is the sender's queue, for
// a rejection that goes to the sender alone.
type Dispatch struct {
	Channel string
	Action  *messages.Action
	Raw     json.RawMessage
	Origin  messages.Origin
	Sub     Subscriber
}

// TerminalSpec is what a terminal runs. The zero value is the host's shell, sitting
// at its prompt.
type TerminalSpec struct {
	Shell               string
	Command             string
	Args                []string
	Env                 []string
	PreventShellHistory bool
	NonInteractive      bool
	// StrictCwd: a directory that is not there is a shell that fails to start (exit
	// 127), as for a terminal a program opens; otherwise, as for a client's terminal,
	// the home folder is used instead.
	StrictCwd bool
}

// CreateTerminal opens a terminal. The answer (*CreateResult) comes once the terminal
// is listed on the root.
type CreateTerminal struct {
	URI   string
	Claim messages.Claim
	Name  string
	Cwd   string // a file: URI or a path, as the client sent it
	Cols  int
	Rows  int
	Spec  TerminalSpec
	// Watcher, when set, gets a *TerminalEvent for every action on the terminal from
	// its start: the seam a session uses to read a command's output as a client would.
	Watcher *actor.PID
}

// CreateResult answers CreateTerminal.
type CreateResult struct {
	Err *messages.Error
	// IsPty and Detection say how the terminal runs and whether its shell has marked
	// a command boundary by the time it was listed.
	IsPty     bool
	Detection bool
}

// TerminalEvent is one action applied on a terminal, for its watcher.
type TerminalEvent struct {
	URI    string
	Action *messages.Action
}

// TerminalWrite types data into a terminal as the host (a `!` command).
type TerminalWrite struct {
	URI  string
	Data string
}

// SnapshotQuery asks a terminal for its settled state; the answer is a
// *messages.TerminalState.
type SnapshotQuery struct{ URI string }

// DisposeTerminal ends a terminal's process and takes its row off the list. The answer
// is a *DisposeResult, sent once the row is gone.
type DisposeTerminal struct{ URI string }

// DisposeResult answers DisposeTerminal.
type DisposeResult struct{}

// Shutdown ends every terminal; the answer (*ShutdownDone) comes once every process
// has been ended and reaped.
type Shutdown struct{}

// ShutdownDone answers Shutdown.
type ShutdownDone struct{}

// ListTerminals asks the host for the URIs it holds; the answer is a []string.
type ListTerminals struct{}

// Internal messages.

// terminalListed tells the host a terminal goes on the root list, or its row changed.
type terminalRow struct {
	pid  *actor.PID
	info messages.TerminalInfo
}

// shellOutput is decoded output from the shell's reader.
type shellOutput struct{ data string }

// shellDrained says the reader reached the end of the output.
type shellDrained struct{}

// shellExited carries the process's exit status.
type shellExited struct{ exit pty.Exit }

// shellFailed says the process could not be started.
type shellFailed struct{ err error }

// shellStarted says the process runs.
type shellStarted struct{ pid int }

// Messages to the shell actor.
type (
	shellWrite       struct{ data []byte }
	shellResize      struct{ cols, rows int }
	shellInterrupt   struct{}
	shellTerminate   struct{}
	shellCloseOutput struct{}
	shellReleased    struct{}
	shellKill        struct{}
	// shellCrash makes the shell actor panic, to test supervision.
	shellCrash struct{}
)

// listTimeout lists a terminal whose shell has said nothing for ten seconds.
type listTimeout struct{}

// drainTimeout ends the wait for output once the process has exited.
type drainTimeout struct{}

// childrenQuery asks a terminal for its children (its shell), for tests.
type childrenQuery struct{}

// ScreenQuery asks a terminal about its screen; the answer is a *ScreenInfo. A
// terminal on pipes has no screen: false for both modes, and WhenAltBuffer settled.
type ScreenQuery struct {
	URI string
	// Text asks for the screen's visible text too, which makes the screen if the
	// terminal has none yet.
	Text bool
}

// ScreenInfo answers ScreenQuery.
type ScreenInfo struct {
	IsPty          bool
	AltBuffer      bool
	BracketedPaste bool
	// WhenAltBuffer is closed once a program switched to the alternate screen.
	WhenAltBuffer <-chan struct{}
	// Text is the screen's visible text.
	Text string
}

// KillTerminal ends a terminal's process and leaves its row listed.
type KillTerminal struct{ URI string }

// WithDefaults is o with each zero value replaced by its default, for what must agree
// with the host before it starts (the folder a handshake names as defaultDirectory).
func (o Options) WithDefaults() Options { return o.withDefaults() }
