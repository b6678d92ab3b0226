package terminal

import (
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// Messages a terminal answers, besides the channel messages (subscribe, unsubscribe,
// dispatch) every channel answers. Each is sent as a pointer and never changed after.

// Spec is what a terminal runs. The zero value is the host's shell, sitting at its
// prompt.
type Spec struct {
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

// Create opens a terminal. The answer (*CreateResult) comes once the terminal is
// listed on the root, or its process could not be started.
type Create struct {
	URI   string
	Claim messages.Claim
	Name  string
	Cwd   string // a file: URI or a path, as the client sent it
	Cols  int
	Rows  int
	Spec  Spec
	// Watcher, when set, gets an *Event for every action on the terminal from its
	// start: the seam a session uses to read a command's output as a client would.
	Watcher *actor.PID
	// Node names the cluster node the terminal runs on ("" for the least loaded);
	// a host that is not in a cluster ignores it.
	Node string
	// By is who asked for it, as the connection checked them: a cluster node carries
	// it to the node that acts.
	By auth.Principal
	// Spare, when set, is a shell started ahead for this terminal (Prestart): the
	// terminal adopts it when it fits what the terminal would start, and ends it
	// otherwise. Either way the terminal owns it from here.
	Spare *Spare
}

// CreateResult answers Create.
type CreateResult struct {
	Err *messages.Error
	// IsPty and Detection say how the terminal runs and whether its shell has marked
	// a command boundary by the time it was listed.
	IsPty     bool
	Detection bool
	// Pid is the shell's process id (it leads the terminal's session), for a
	// watcher that looks at what the shell's job is doing (pty.ForegroundInput).
	Pid int
}

// Event is one action applied on a terminal, for its watcher.
type Event struct {
	URI    string
	Action *messages.Action
}

// Write types data into a terminal as the host (a `!` command).
type Write struct {
	URI  string
	Data string
	// Written, when set, is sent a *Written once Data has been written to the
	// process, behind everything written before it. A shell on pipes seen reading
	// its input after that has read Data (a read on a pipe blocks only when the pipe
	// is empty).
	Written *actor.PID
}

// Written says a Write's Data has been written to the terminal's process.
type Written struct{ URI string }

// SnapshotQuery asks a terminal for its settled state; the answer is a
// *messages.TerminalState.
type SnapshotQuery struct{ URI string }

// Dispose ends a terminal's process and takes its row off the list. The answer is a
// *DisposeResult, sent once the row is gone.
type Dispose struct {
	URI string
	// By is who asked, as the connection checked them (see Create.By).
	By auth.Principal
}

// DisposeResult answers Dispose.
type DisposeResult struct{}

// Kill ends a terminal's process and leaves its row listed: Signal (SIGHUP when
// zero) to every process of its session, then SIGKILL after Grace (the terminal's
// kill grace when zero).
type Kill struct {
	URI    string
	Signal syscall.Signal
	Grace  time.Duration
}

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

// Settled is a closed channel: a wait on it returns at once.
var Settled = func() <-chan struct{} { c := make(chan struct{}); close(c); return c }()

// Messages a terminal sends its parent (the root).

// Row says the terminal goes on the root list, or its row changed.
type Row struct {
	PID  *actor.PID
	Info messages.TerminalInfo
}

// StartFailed says a terminal's process could not be started: the root answers its
// create with Err and lets the terminal go.
type StartFailed struct {
	Terminal *actor.PID
	URI      string
	Waiter   *actor.PID
	Err      *messages.Error
}

// HolderQuery asks the root for the actor of the session a claim names, so that the
// terminal's claim actor can watch it; the answer is a *Holder.
type HolderQuery struct{ Session string }

// Holder answers HolderQuery. PID is nil when no session of that URI runs on this
// host (an agent backend's session, say).
type Holder struct {
	Session string
	PID     *actor.PID
}

// Internal messages.

// From the shell actor (shellOutput straight from its reader) to the terminal.
type (
	// shellOutput is decoded output from the shell's reader.
	shellOutput struct{ data string }
	// shellDrained says the reader reached the end of the output.
	shellDrained struct{}
	// shellExited carries the process's exit status.
	shellExited struct{ exit pty.Exit }
	// shellFailed says the process could not be started; folder says the working
	// folder was why.
	shellFailed struct {
		err    error
		folder bool
	}
	// shellStarted says the process runs, and its pid.
	shellStarted struct{ pid int }
)

// To the shell actor.
type (
	shellWrite       struct{ data []byte }
	shellTerminate   struct{}
	shellCloseOutput struct{}
	shellReleased    struct{}
	shellKill        struct {
		signal syscall.Signal
		grace  time.Duration
	}
)

// From the shell actor's goroutines to it.
type (
	// outputEnded says the reader reached the end of the output.
	outputEnded struct{}
	// processExited carries the exit waiter's status.
	processExited struct{ exit pty.Exit }
	// partFailed says one of the goroutines panicked.
	partFailed struct {
		part   string
		reason any
	}
)

// Between the terminal and its claim actor.
type (
	// claimAsk asks whether clientID may set the claim to next; the answer is a
	// *claimVerdict, sent to the terminal in the order of the asks.
	claimAsk struct {
		clientID string
		next     messages.Claim
	}
	// claimVerdict answers claimAsk: refusal is the reason for the client, "" when
	// the claim is taken.
	claimVerdict struct{ refusal string }
	// claimReleased says the claim actor let the claim go from "from" to "to"
	// because its holder went; why is the sentence for the clients.
	claimReleased struct {
		from, to messages.Claim
		why      string
	}
)

// The terminal's own timers.
type (
	// listTimeout lists a pseudoterminal whose shell has said nothing for
	// Config.ListTimeout.
	listTimeout struct{}
	// drainTimeout ends the wait for output once the process has exited.
	drainTimeout struct{}
)
