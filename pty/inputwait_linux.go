package pty

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InputSeen says whether ForegroundInput, PipeInput and ShellReadsInput can see a
// wait here: they read /proc.
const InputSeen = true

// ForegroundInput reports whether the job in the foreground of the terminal whose
// shell is sid (the shell's pid, which leads its session) is waiting for somebody to
// type: no process of the foreground group runs, and one of them is blocked reading
// the terminal (read, or select, poll or epoll with the terminal in its set and no
// socket beside it: a program waiting on the network is not waiting on a person).
// The shell counts when it is in the foreground itself (its `read` builtin), so a
// caller asks only while a command runs, not at the prompt. It reads the processes'
// /proc files (syscall, and mem for a select's or poll's set), which the kernel
// lets a process read of its own descendants; whatever cannot be read says "not
// waiting", so a wrong answer costs only the wait the caller would have made anyway.
func ForegroundInput(sid int) InputWait {
	var buf [statBufSize]byte
	shell, ok := foregroundStatOf(sid, buf[:])
	if !ok || shell.tty == 0 || shell.tpgid <= 0 {
		return InputWait{}
	}
	foreground := func(st foregroundStat) bool { return st.pgrp == shell.tpgid }
	return inputWaitUnder(sid, shell, inputFile{rdev: shell.tty}, foreground, buf[:])
}

// PipeInput is ForegroundInput for a shell on pipes (sid its pid, which leads its
// session): whether the processes under it wait to read the pipe the shell reads
// its commands from. There is no terminal and no foreground there: every process of
// the session counts, and what is waited on is the shell's standard input, the same
// pipe by device and inode whichever descriptor holds it. The shell itself blocked
// reading it has read everything written to it (a read on a pipe blocks only when
// the pipe is empty) and waits for its next line.
func PipeInput(sid int) InputWait {
	var buf [statBufSize]byte
	shell, ok := foregroundStatOf(sid, buf[:])
	if !ok {
		return InputWait{}
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(sid)+"/fd/0", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return InputWait{}
	}
	every := func(foregroundStat) bool { return true }
	return inputWaitUnder(sid, shell, inputFile{fifo: true, dev: uint64(st.Dev), ino: uint64(st.Ino)}, every, buf[:])
}

// ShellReadsInput reports whether the shell pid is itself blocked reading its input,
// as it is at its prompt: its standard input's terminal, or on pipes its standard
// input's pipe, whichever descriptor it reads it through. It looks at the shell
// alone, a handful of /proc reads however many processes run under it: a shell
// reading its input is running no foreground job (it waits for those), and what
// runs in the background is no matter here.
func ShellReadsInput(pid int) bool {
	var buf [statBufSize]byte
	shell, ok := foregroundStatOf(pid, buf[:])
	if !ok {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/0", &st); err != nil {
		return false
	}
	var in inputFile
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		in = inputFile{rdev: uint64(st.Rdev)}
	case unix.S_IFIFO:
		in = inputFile{fifo: true, dev: uint64(st.Dev), ino: uint64(st.Ino)}
	default:
		return false
	}
	return inspectForInput(pid, shell, in) == processReadsInput
}

// inputWaitUnder walks the processes of sid's session, the shell's stat first, and
// finds one that counts blocked reading in, with none that counts running.
func inputWaitUnder(sid int, shell foregroundStat, in inputFile, counts func(foregroundStat) bool, buf []byte) InputWait {
	w := sessionWalk{sid: sid, seen: map[int]bool{sid: true}}
	pids, stats := []int{sid}, []foregroundStat{shell}
	var found InputWait
	for i := 0; i < len(pids); i++ {
		if i >= maxForegroundWalk {
			return InputWait{}
		}
		st := stats[i]
		if counts(st) && st.state != 'Z' {
			switch doing := inspectForInput(pids[i], st, in); doing {
			case processRuns:
				return InputWait{}
			case processReadsInput:
				if !found.Waiting {
					found = InputWait{Waiting: true, Pid: pids[i], Name: st.comm}
				}
			}
		}
		kids, ok := w.allChildren(pids[i], st.threads)
		if !ok {
			return InputWait{}
		}
		for _, k := range kids {
			if w.seen[k] {
				continue
			}
			w.seen[k] = true
			if kst, ok := foregroundStatOf(k, buf); ok {
				pids, stats = append(pids, k), append(stats, kst)
			}
		}
	}
	return found
}

// inputFile is what a wait for input is a wait on: a terminal, by its device
// number (/dev/tty and /dev/pts/N are one), or a pipe, by its device and inode.
type inputFile struct {
	fifo     bool
	rdev     uint64
	dev, ino uint64
}

// is says whether st, a descriptor's stat, is the input.
func (in inputFile) is(st *unix.Stat_t) bool {
	if in.fifo {
		return st.Mode&unix.S_IFMT == unix.S_IFIFO && uint64(st.Dev) == in.dev && uint64(st.Ino) == in.ino
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && uint64(st.Rdev) == in.rdev
}

// InputWait is what ForegroundInput found.
type InputWait struct {
	// Waiting says the foreground job waits to read the terminal.
	Waiting bool
	// Pid and Name are the process that waits and its command name as the kernel
	// has it (at most 15 bytes).
	Pid  int
	Name string
}

// maxForegroundWalk bounds the processes looked at under one shell: a build's tree
// of hundreds is busy anyway, and the walk gives up rather than read them all.
const maxForegroundWalk = 256

// maxThreadsLooked bounds the threads read of one process.
const maxThreadsLooked = 64

type processDoing int

const (
	processSleeps processDoing = iota
	processRuns
	processReadsInput
)

// foregroundStat is what ForegroundInput reads of a process's stat.
type foregroundStat struct {
	state   byte
	comm    string
	pgrp    int
	tty     uint64 // the controlling terminal's device number, 0 for none
	tpgid   int    // the terminal's foreground process group
	threads int
}

func foregroundStatOf(pid int, buf []byte) (foregroundStat, bool) {
	comm, f, ok := statFields(pid, buf)
	// After the name: state(0) ppid(1) pgrp(2) session(3) tty_nr(4) tpgid(5) …
	// num_threads(17).
	if !ok || len(f) < 18 {
		return foregroundStat{}, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	tty, err2 := strconv.ParseUint(f[4], 10, 64)
	tpgid, err3 := strconv.Atoi(f[5])
	threads, err4 := strconv.Atoi(f[17])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return foregroundStat{}, false
	}
	return foregroundStat{state: f[0][0], comm: string(comm), pgrp: pgrp, tty: tty, tpgid: tpgid, threads: threads}, true
}

// inspectForInput says what one process of the foreground group is doing: running
// (any thread), blocked reading the terminal (any thread), or asleep on something
// else.
func inspectForInput(pid int, st foregroundStat, in inputFile) processDoing {
	switch st.state {
	case 'R':
		return processRuns
	case 'T', 't', 'X', 'x':
		return processSleeps
	}
	tids := []int{pid}
	if st.threads > 1 {
		entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil || len(entries) > maxThreadsLooked {
			return processRuns // not known: not a person's wait
		}
		tids = tids[:0]
		for _, e := range entries {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				tids = append(tids, tid)
			}
		}
	}
	doing := processSleeps
	for _, tid := range tids {
		call, ok := blockedSyscall(pid, tid)
		if !ok {
			return processRuns
		}
		if call.nr >= 0 && readsInput(pid, call, in) {
			doing = processReadsInput
		}
	}
	return doing
}

// blockedCall is a thread's system call as /proc/PID/task/TID/syscall has it.
type blockedCall struct {
	nr   int // -1: blocked, not in a system call
	args [6]uint64
}

// blockedSyscall reads the call a thread is blocked in; false when it runs or
// cannot be read.
func blockedSyscall(pid, tid int) (blockedCall, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return blockedCall{}, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || f[0] == "running" {
		return blockedCall{}, false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return blockedCall{}, false
	}
	call := blockedCall{nr: nr}
	if nr < 0 {
		return call, true
	}
	if len(f) < 7 {
		return blockedCall{}, false
	}
	for i := range call.args {
		v, err := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			return blockedCall{}, false
		}
		call.args[i] = v
	}
	return call, true
}

// readsInput says whether a blocked call waits for the input to be readable.
func readsInput(pid int, call blockedCall, in inputFile) bool {
	switch call.nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64:
		return isInput(pid, int(int32(call.args[0])), in)
	case unix.SYS_PSELECT6, sysSelect:
		return selectReadsInput(pid, int(int32(call.args[0])), call.args[1], in)
	case unix.SYS_PPOLL, sysPoll:
		return pollReadsInput(pid, call.args[0], int(call.args[1]), in)
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2, sysEpollWait:
		return epollReadsInput(pid, int(int32(call.args[0])), in)
	}
	return false
}

// isInput says whether descriptor fd of pid is the input.
func isInput(pid, fd int, in inputFile) bool {
	if fd < 0 {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st); err != nil {
		return false
	}
	return in.is(&st)
}

// isSocket says whether descriptor fd of pid is a socket.
func isSocket(pid, fd int) bool {
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
	return err == nil && strings.HasPrefix(link, "socket:")
}

// watchesInput judges a wait on several descriptors: the input among them and no
// socket.
func watchesInput(pid int, fds []int, in inputFile) bool {
	input := false
	for _, fd := range fds {
		if isSocket(pid, fd) {
			return false
		}
		input = input || isInput(pid, fd, in)
	}
	return input
}

// readMemory reads n bytes of pid's memory at addr.
func readMemory(pid int, addr uint64, n int) ([]byte, bool) {
	if addr == 0 || n <= 0 || addr > 1<<62 {
		return nil, false
	}
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/mem", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	b := make([]byte, n)
	got, err := syscall.Pread(fd, b, int64(addr))
	if err != nil || got != n {
		return nil, false
	}
	return b, true
}

// selectReadsInput reads the read set of a select (nfds, then the set's address).
func selectReadsInput(pid, nfds int, set uint64, in inputFile) bool {
	if nfds <= 0 || nfds > 1024 {
		return false
	}
	words := (nfds + 63) / 64
	b, ok := readMemory(pid, set, words*8)
	if !ok {
		return false
	}
	var fds []int
	for w := range words {
		bits := binary.NativeEndian.Uint64(b[w*8:])
		for i := range 64 {
			if fd := w*64 + i; fd < nfds && bits&(1<<i) != 0 {
				fds = append(fds, fd)
			}
		}
	}
	return watchesInput(pid, fds, in)
}

// pollReadsInput reads a poll's array of {fd int32, events int16, revents int16}.
func pollReadsInput(pid int, array uint64, n int, in inputFile) bool {
	if n <= 0 || n > 256 {
		return false
	}
	b, ok := readMemory(pid, array, n*8)
	if !ok {
		return false
	}
	var fds []int
	for i := range n {
		fd := int32(binary.NativeEndian.Uint32(b[i*8:]))
		events := binary.NativeEndian.Uint16(b[i*8+4:])
		if fd >= 0 && events&(unix.POLLIN|unix.POLLPRI) != 0 {
			fds = append(fds, int(fd))
		}
	}
	return watchesInput(pid, fds, in)
}

// epollReadsInput reads an epoll's set from its fdinfo ("tfd: N events: HEX").
func epollReadsInput(pid, epfd int, in inputFile) bool {
	if epfd < 0 {
		return false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return false
	}
	defer f.Close()
	var fds []int
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 4 || fields[0] != "tfd:" || fields[2] != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(fields[1])
		events, err2 := strconv.ParseUint(fields[3], 16, 32)
		if err1 == nil && err2 == nil && events&unix.EPOLLIN != 0 {
			fds = append(fds, fd)
		}
		if len(fds) > 256 {
			return false
		}
	}
	return watchesInput(pid, fds, in)
}
