package shells

import (
	"time"

	"github.com/termhost/termhost/auth"
)

// Family says whose tool a call is, which decides how its output is shaped: the
// host's (VS Code's bash, read_bash, …: control sequences removed, the last 60,000
// characters) or the PTY tools' (redraws folded, the tail within 2,000 lines and
// 50 KiB).
type Family int

const (
	HostFamily Family = iota
	PTYFamily
)

// Caller is who makes a tool call and for which chat.
type Caller struct {
	// Principal is the person the agent acts for; every call checks its grant.
	Principal auth.Principal
	// Chat is the chat the calling connection is bound to: a new shell opens in it
	// and is claimed for it.
	Chat string
	// ToolCallID names the call in the claim of a shell it opens.
	ToolCallID string
	Family     Family
}

// Run runs a command in the chat's idle shell, or a new one when every shell of the
// chat is busy. The answer (*Result) comes when the command ends, when Wait is over
// (the command goes on in its shell, which stays busy), or at once for Background.
type Run struct {
	Caller
	Command string
	// Wait is how long the call waits for the command; zero means the service's
	// window (60 s, 5 s for a command that sleeps and polls).
	Wait time.Duration
	// Deadline, when set and shorter than the wait, interrupts a command still in
	// the foreground at that point (the PTY tools' timeout).
	Deadline time.Duration
	// Background answers at once with the shell's id; the command is background work
	// of the chat and wakes the session when it ends.
	Background  bool
	Cols, Rows  int
	Description string
}

// Read returns what a shell printed since the last read, with a status line; it
// never waits. Screen returns the rendered screen instead.
type Read struct {
	Caller
	ShellID string // "" is the chat's most recently used shell
	Filter  string // RE2; only matching lines
	Screen  bool
}

// Write types into a shell: Text, then each of Keys (named keys: enter, ctrl+c, …),
// then Enter when Submit. The answer carries what the shell printed in reply.
type Write struct {
	Caller
	ShellID string
	Text    string
	Keys    []string
	Submit  bool
}

// Resize changes a shell's size.
type Resize struct {
	Caller
	ShellID    string
	Cols, Rows int
}

// Kill ends a shell's process group, or every shell of the session with All; the
// shell stays listed, exited. Dispose (bash_shutdown) also takes it off the list.
type Kill struct {
	Caller
	ShellID string
	All     bool
	Dispose bool
}

// List answers every shell of the session in Result.Shells; it needs no grant.
type List struct{ Caller }

// Watch starts a monitor (or rearms one): matching lines of a shell's output, and
// one exit summary, delivered as wakes under the delivery rules of agenttools.Gate.
// With Command it runs that command in a shell of its own and watches it; with
// ShellID it watches that shell from now.
type Watch struct {
	Caller
	Rearm       bool
	MonitorID   string // for Rearm; "" rearms every monitor of ShellID
	ShellID     string
	Command     string
	Filter      string
	Description string
	// Timeout ends a monitor that is not Persistent (default 5 minutes, at most an hour).
	Timeout    time.Duration
	Persistent bool
}

// Stop interrupts the command running in a shell (^C), as a person's stop does.
type Stop struct {
	Caller
	ShellID string
}

// Result answers every request. Err is a tool error the agent is told (a refused
// grant, an unknown shell); nothing ran.
type Result struct {
	ShellID  string
	Terminal string // the shell's terminal URI
	Output   string
	ExitCode *int
	Running  bool
	// Status is one line saying where the shell stands now.
	Status string
	// EndShown names the command (by its number in the session) whose end the
	// answer reports, 0 for none: a wake for that end says nothing the answer does
	// not, and is not repeated beside it.
	EndShown  int
	MonitorID string
	Shells    []ShellInfo
	Err       error
}

// ShellInfo is one shell as List shows it.
type ShellInfo struct {
	ID       string `json:"id"`
	Terminal string `json:"terminal"`
	Chat     string `json:"chat"`
	Command  string `json:"command,omitempty"` // what runs in it now
	Running  bool   `json:"running"`
	Exited   bool   `json:"exited"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
	Cols     int    `json:"cols"`
	Rows     int    `json:"rows"`
}

// A Sink is an agent connection that is told about wakes (an MCP session). Notice
// must not block: it is called from the service's mailbox.
type Sink interface {
	Notice(WakeNotice)
}

// WakeNotice is one wake: a monitor's delivery or a background command's end.
type WakeNotice struct {
	Chat     string
	ShellID  string
	Terminal string
	Monitor  string // the monitor's id, "" for a command's end
	Command  int    // the command's number in the session (Result.EndShown), 0 for a monitor
	// WaitsForInput says the wake is a background command's question, not its end:
	// stale once an answer shows the agent that shell as it is now.
	WaitsForInput bool
	Text          string
	At            time.Time
}

// Attach tells the service about a sink bound to a chat: it gets every later
// wake of the session, and first the ones nobody was attached to hear.
type Attach struct {
	Chat string
	Sink Sink
}

// Detach forgets a sink.
type Detach struct{ Sink Sink }
