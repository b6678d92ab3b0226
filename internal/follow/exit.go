package follow

import (
	"fmt"

	"github.com/termhost/termhost/messages"
)

// Exit is how a terminal ended: its code, when the host knows it, and the signal
// that ended its process (termhost's _meta.signal on terminal/exited).
type Exit struct {
	Code   *int   // nil when the host could not read one
	Signal string // "" when no signal ended it
}

// ExitFromAction is the exit a terminal/exited action reports.
func ExitFromAction(a *messages.Action) *Exit {
	e := &Exit{Code: a.ExitCode}
	if s, ok := a.Meta["signal"].(string); ok {
		e.Signal = s
	}
	return e
}

// ExitFromState is the exit of a terminal whose state says it exited, else nil.
func ExitFromState(st *messages.TerminalState) *Exit {
	switch {
	case st.Lifecycle != nil && st.Lifecycle.Status == messages.StatusExited:
		e := &Exit{Code: st.Lifecycle.ExitCode}
		if e.Code == nil {
			e.Code = st.ExitCode
		}
		e.Signal, _ = st.Meta["signal"].(string)
		return e
	case st.Lifecycle == nil && st.ExitCode != nil: // a host before AHP 0.9.0
		return &Exit{Code: st.ExitCode}
	}
	return nil
}

// Status is the process exit status the terminal's exit becomes: its code, 128+n for
// a signal (the host reports it so), and 1 where the host could not read one.
func (e *Exit) Status() int {
	if e.Code == nil || *e.Code < 0 || *e.Code > 255 {
		return 1
	}
	return *e.Code
}

func (e *Exit) String() string {
	switch {
	case e.Signal != "" && e.Code != nil:
		return fmt.Sprintf("was killed by %s (exit code %d)", e.Signal, *e.Code)
	case e.Signal != "":
		return "was killed by " + e.Signal
	case e.Code == nil || *e.Code < 0:
		return "exited; the host could not read its exit code"
	}
	return fmt.Sprintf("exited with code %d", *e.Code)
}
