//go:build linux && amd64

package pty

import "golang.org/x/sys/unix"

// The older waits amd64 still has beside pselect6, ppoll and epoll_pwait.
const (
	sysSelect    = unix.SYS_SELECT
	sysPoll      = unix.SYS_POLL
	sysEpollWait = unix.SYS_EPOLL_WAIT
)
