package pty

import (
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// awaitExit returns once cmd's process has ended, without reaping it, having waited
// in the runtime's poller on a pidfd of the process. exec.Cmd.Wait alone blocks a
// thread in waitid for the child's whole life: a host with a thousand shells held a
// thousand threads, and every start handed the blocked thread's processor to
// another. Wait, called afterwards, reaps a process that has already ended. Where
// the kernel has no pidfds, or the poller does not take one, it returns at once and
// Wait blocks as before.
func awaitExit(cmd *exec.Cmd) {
	// The child is not reaped before Wait, so its pid cannot name anybody else.
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		return
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return
	}
	// A non-blocking descriptor given to NewFile goes to the poller, which reports
	// a pidfd readable once its process has ended.
	f := os.NewFile(uintptr(fd), "pidfd")
	defer func() { _ = f.Close() }()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		ready := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(ready, 0)
		if err == unix.EINTR {
			return false
		}
		// An error other than EINTR ends the wait here too: Wait then blocks.
		return err != nil || n > 0
	})
}
