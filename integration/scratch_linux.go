package integration

import (
	"os"

	"golang.org/x/sys/unix"
)

// newScratch is bash's scratch file: an anonymous file in memory (memfd) that the
// script writes what a builtin prints into and reads back with `read`, where
// $(...) would fork a bash for every command line. It is the shell's own: nothing
// in a temporary folder, no name to collide with another shell's, gone when the
// last descriptor is. It begins with scratchHeader(nonce), so that the script
// knows its descriptor 3 is this file and nothing else; nil when it cannot be made.
func newScratch(nonce string) *os.File {
	fd, err := unix.MemfdCreate("termhost-bash-scratch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "termhost-bash-scratch")
	if _, err := f.WriteString(scratchHeader(nonce)); err != nil {
		_ = f.Close()
		return nil
	}
	return f
}
