//go:build linux

package pty

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// sysPidfdOpen is pidfd_open(2), 434 on every Linux architecture.
const sysPidfdOpen = 434

// childWatch watches a process that is not the test's child, such as a job a shell
// started in the background. A pidfd becomes readable when its process exits, which
// is an event to wait for instead of polling /proc.
type childWatch struct {
	pid   int
	pidfd int // -1 when the process was gone before the watch began
}

// watchChild starts watching the process whose pid the output names as pid=N.
func watchChild(t *testing.T, out string) *childWatch {
	t.Helper()
	pid := parsePid(t, out)
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	switch {
	case errno == syscall.ESRCH:
		return &childWatch{pid: pid, pidfd: -1}
	case errno == syscall.ENOSYS:
		t.Skip("pidfd_open is not available")
	case errno != 0:
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	syscall.CloseOnExec(int(fd))
	w := &childWatch{pid: pid, pidfd: int(fd)}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL) // in case the test failed before it ended
		_ = syscall.Close(w.pidfd)
	})
	return w
}

// waitGone waits until the process has exited, failing after testTimeout.
func (w *childWatch) waitGone(t *testing.T) {
	t.Helper()
	if w.pidfd < 0 {
		return
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer syscall.Close(ep)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(w.pidfd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, w.pidfd, &ev); err != nil {
		t.Fatalf("epoll_ctl: %v", err)
	}
	deadline := time.Now().Add(testTimeout)
	events := make([]syscall.EpollEvent, 1)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("process %d still running after the group was ended", w.pid)
		}
		n, err := syscall.EpollWait(ep, events, int(left.Milliseconds())+1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("epoll_wait: %v", err)
		}
		if n > 0 {
			return
		}
	}
}
