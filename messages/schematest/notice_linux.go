//go:build linux

package schematest

import (
	"io"
	"os"
	"strconv"
	"syscall"
)

// goCommandStderr opens the stderr of this process's parent when it is not this
// process's own stderr - as when `go test` buffers a test binary's output to show it
// only if the package fails - and returns nil otherwise. It goes through syscall
// rather than os so that the test cache, which records the files os opens, does not
// take a file named after the parent's pid as an input of the test.
func goCommandStderr() io.WriteCloser {
	path := "/proc/" + strconv.Itoa(os.Getppid()) + "/fd/2"
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	var parent, own syscall.Stat_t
	if syscall.Fstat(fd, &parent) != nil || syscall.Fstat(int(os.Stderr.Fd()), &own) != nil ||
		parent.Dev == own.Dev && parent.Ino == own.Ino {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), path)
}
