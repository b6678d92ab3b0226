package pty

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// member is a process of a terminal's session, named by pid and start time so a pid
// the kernel has since handed to somebody else is never signalled.
type member struct {
	pid   int
	start string
}

// descendants lists a live process's descendants through the kernel's children lists,
// which costs a read per descendant rather than one per process on the machine. It
// reports false when the lists cannot be read (a kernel without them).
func descendants(pid int) ([]member, bool) {
	var out []member
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		if err != nil {
			if p == pid {
				return nil, false
			}
			continue
		}
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + task.Name() + "/children")
			if err != nil {
				if p == pid && os.IsNotExist(err) {
					return nil, false
				}
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				c, err := strconv.Atoi(f)
				if err != nil || seen[c] {
					continue
				}
				seen[c] = true
				// A descendant that made a session of its own left the terminal's.
				if sid, start, ok := procSessionAndStart(c); ok && sid == pid {
					out = append(out, member{c, start})
					queue = append(queue, c)
				}
			}
		}
	}
	return out, true
}

// sessionMembers lists the processes whose session is sid, the shell's own pid (every
// child starts in a session of its own). Under a pseudoterminal an interactive shell
// puts each job in a process group of its own, so signalling the shell's group alone
// would leave a backgrounded `sleep 1000 &` running; the session holds them all.
func sessionMembers(sid int) []member {
	return scanSessions(map[int]bool{sid: true})[sid]
}

// scanSessions lists the members of each of the sessions in one pass over every
// process on the machine.
func scanSessions(sids map[int]bool) map[int][]member {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int][]member{}
	var buf [statBufSize]byte
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, start, ok := sessionAndStartInto(pid, buf[:])
		if ok && sids[s] {
			out[s] = append(out[s], member{pid, start})
		}
	}
	return out
}

// procSessionAndStart reads a process's session id and start time from its stat.
func procSessionAndStart(pid int) (int, string, bool) {
	var buf [statBufSize]byte
	return sessionAndStartInto(pid, buf[:])
}

// statBufSize holds any /proc/<pid>/stat: some fifty numbers and a name of at most
// 64 bytes come to well under half of it.
const statBufSize = 1024

// sessionAndStartInto is procSessionAndStart reading into buf. A scan of every
// process reads thousands of these, and os.ReadFile costs each one a poller
// registration attempt, an fstat and an allocation on top of the open, read and
// close that are all a stat file needs (it was most of the CPU of disposing
// terminals whose shells had exited).
func sessionAndStartInto(pid int, buf []byte) (int, string, bool) {
	b, ok := readStat(pid, buf)
	if !ok {
		return 0, "", false
	}
	// The command name is in parentheses and may hold spaces; fields follow it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+2:]))
	// After the name: state(0) ppid(1) pgrp(2) session(3) … starttime(19).
	if len(f) < 20 {
		return 0, "", false
	}
	sid, err := strconv.Atoi(f[3])
	if err != nil {
		return 0, "", false
	}
	return sid, f[19], true
}

// readStat reads /proc/<pid>/stat into buf in one read, as the kernel hands the whole
// file over in one.
func readStat(pid int, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, buf)
	for err == syscall.EINTR {
		n, err = syscall.Read(fd, buf)
	}
	if err != nil || n <= 0 || n == len(buf) {
		return nil, false
	}
	return buf[:n], true
}

// signalMembers signals each member still alive with the same start time.
func signalMembers(ms []member, sig syscall.Signal) {
	for _, m := range ms {
		if _, start, ok := procSessionAndStart(m.pid); ok && start == m.start {
			_ = syscall.Kill(m.pid, sig)
		}
	}
}
