//go:build linux && !amd64

package pty

// Newer architectures have only pselect6, ppoll and epoll_pwait: numbers no call
// has (distinct, as they share one switch).
const (
	sysSelect    = -101
	sysPoll      = -102
	sysEpollWait = -103
)
