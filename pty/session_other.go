//go:build !linux

package pty

import "syscall"

// Where the kernel has no /proc to read (macOS, the BSDs), a terminal's session is
// not walked: Terminate signals the shell and the process group it leads, and a job
// the shell put in a group of its own, or a double fork, outlives it. The host's
// own tests and its guarantee of no process left behind are Linux's; elsewhere the
// binary still builds and runs, for the client verbs above all.

// member is a process of a terminal's session (see session_linux.go).
type member struct {
	pid   int
	start string
}

// sessionOf reports that the session cannot be walked here.
func sessionOf(int) ([]member, bool) { return nil, false }

// scanSessions finds no members here.
func scanSessions(map[int]bool) map[int][]member { return nil }

func sessionMembers(int) []member { return nil }

// signalMembers has nothing to signal: no member is ever found here.
func signalMembers([]member, syscall.Signal) {}

// stillAlive keeps no member: none is ever found here.
func stillAlive([]member) []member { return nil }
