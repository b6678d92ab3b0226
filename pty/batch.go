package pty

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A pseudoterminal hands its reader at most a few KiB per read (the line
// discipline's buffer), and a writer that fills it waits until the reader comes
// back. Reading a flood one such chunk at a time costs a poller wake-up, a message,
// an envelope and a socket write per chunk, and the writer waits through each of
// those hand-offs. The batching reader below keeps reading on its own thread while
// chunks keep coming, so a flood becomes few large reads and the writer is drained
// as fast as the kernel wakes a blocked thread.
const (
	// floodChunk is the smallest read taken as the start of a flood. A keystroke's
	// echo or a prompt is far smaller and goes out at once.
	floodChunk = 1024
	// gatherWaitMs is how long a flood's next chunk is waited for before what has
	// been gathered goes out: the coalescing window.
	gatherWaitMs = 1
)

// batchReader reads f through the runtime's poller while output is quiet, so an idle
// terminal holds no thread, and gathers a flood with direct reads (see above).
type batchReader struct {
	f  *os.File
	rc syscall.RawConn // nil when f offers none; then no gathering
}

func newBatchReader(f *os.File) batchReader {
	r := batchReader{f: f}
	if rc, err := f.SyscallConn(); err == nil {
		r.rc = rc
	}
	return r
}

func (r batchReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if err != nil || n < floodChunk || n == len(b) || r.rc == nil {
		return n, err
	}
	return n + r.gather(b[n:]), nil
}

// gather fills b with what arrives within the coalescing window of the last chunk.
// An error ends the gathering and is left for the next Read to report. Control
// holds the descriptor open, so a Close meanwhile waits at most one window.
func (r batchReader) gather(b []byte) int {
	total := 0
	_ = r.rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for total < len(b) {
			n, err := syscall.Read(int(fd), b[total:])
			switch {
			case n > 0:
				total += n
			case err == syscall.EINTR:
			case err == syscall.EAGAIN:
				ready, perr := unix.Poll(pfd, gatherWaitMs)
				if perr == unix.EINTR {
					continue
				}
				if ready <= 0 || perr != nil {
					return
				}
			default:
				return // end of output or an error: the next Read sees it
			}
		}
	})
	return total
}
