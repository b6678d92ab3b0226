//go:build !linux

package pty

// InputWait is what ForegroundInput found (see inputwait_linux.go).
type InputWait struct {
	Waiting bool
	Pid     int
	Name    string
}

// ForegroundInput cannot tell without /proc: never waiting, so a caller waits as
// it would have anyway.
func ForegroundInput(int) InputWait { return InputWait{} }
