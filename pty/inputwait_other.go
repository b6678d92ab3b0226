//go:build !linux

package pty

// InputWait is what ForegroundInput found (see inputwait_linux.go).
type InputWait struct {
	Waiting bool
	Pid     int
	Name    string
}

// InputSeen says whether ForegroundInput, PipeInput and ShellReadsInput can see a
// wait: not without /proc.
const InputSeen = false

// ForegroundInput cannot tell without /proc: never waiting, so a caller waits as
// it would have anyway.
func ForegroundInput(int) InputWait { return InputWait{} }

// PipeInput cannot tell without /proc either.
func PipeInput(int) InputWait { return InputWait{} }

// ShellReadsInput cannot tell without /proc either.
func ShellReadsInput(int) bool { return false }
