package pty

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// member is a process of a terminal's session, named by pid and start time so a pid
// the kernel has since handed to somebody else is never signalled.
type member struct {
	pid   int
	start string
}

// sessionOf lists the members of session sid, the session of a shell this host
// started (sid is the shell's pid), other than the shell itself, without reading
// every process on the machine. A member is a descendant of the shell in its
// session, or, once its parent is gone (a double fork such as `( job & )`, or the
// shell itself having exited), a child of the process it was handed to: the
// nearest subreaper among its ancestors, or init. Those ancestors are the host's
// own, so their children and the shell's, followed down through the session, are
// the whole session: a session is only ever inherited, never joined. It reads a
// stat per child of those processes rather than one per process on the machine
// (disposing many terminals was quadratic that way). It reports false when the
// kernel's children lists cannot be read; the caller then scans.
//
// Every Terminate walks twice, so the per-walk part is kept small: the ancestors'
// lists are held open for the process's life (ancestorLists) and read again in
// one pread each, and a child of theirs is asked its session with getsid before
// its stat is read; on this machine's kernel an open, read and close of a /proc
// file costs about four system calls' time.
func sessionOf(sid int) ([]member, bool) {
	if !childrenListed() {
		return nil, false
	}
	var w sessionWalk
	w.sid = sid
	w.seen = map[int]bool{sid: true}
	for _, r := range w.reapers() {
		w.seen[r.pid] = true
	}
	// A reaper takes an orphan on its first live thread: the main thread, unless
	// that has ended while others run on (then every thread is read). A thread
	// that has ended has no children (the kernel hands them on as it ends and
	// hands no orphan to it), so a list with anyone in it is a live thread's and
	// only an empty one needs the stat that tells.
	for _, r := range w.reapers() {
		kids, err := w.reaperChildren(r)
		if err == nil && (len(kids) > 0 || !w.zombieThread(r.pid)) {
			w.take(kids)
			continue
		}
		if kids, ok := w.allChildren(r.pid, 0); ok {
			w.take(kids)
		} else {
			return nil, false
		}
	}
	threads := 0
	if st, ok := statInto(sid, w.stat[:]); ok {
		threads = st.threads
	}
	kids, ok := w.allChildren(sid, threads)
	if !ok {
		return nil, false
	}
	w.take(kids)
	// Down from each member: w.out grows as the walk goes.
	for i := 0; i < len(w.out); i++ {
		kids, ok := w.allChildren(w.out[i].pid, w.threads[i])
		if !ok {
			return nil, false
		}
		w.take(kids)
	}
	return w.out, true
}

// sessionWalk is one sessionOf: what it found, and the buffers it reads into.
type sessionWalk struct {
	sid  int
	seen map[int]bool
	out  []member
	// threads is each member's thread count as its stat said, beside out.
	threads []int
	reaped  []reaperList // reapers, once listed
	stat    [statBufSize]byte
	listBuf []byte
}

// take adds each process of kids that is in the session and not seen yet. A
// process that made a session of its own left the terminal's, and so did
// everything it started.
func (w *sessionWalk) take(kids []int) {
	for _, c := range kids {
		if w.seen[c] {
			continue
		}
		w.seen[c] = true
		// Most children looked at are the reapers', of other sessions: getsid
		// tells in one system call. The session's own are read for their start.
		if s, err := unix.Getsid(c); err == nil && s != w.sid {
			continue
		}
		if st, ok := statInto(c, w.stat[:]); ok && st.sid == w.sid {
			w.out = append(w.out, member{c, st.start})
			w.threads = append(w.threads, st.threads)
		}
	}
}

// reapers lists the processes an orphan of this host's children may be handed
// to: this process, should it be a subreaper, each of its ancestors (any of them
// may be one), and init.
func (w *sessionWalk) reapers() []reaperList {
	if w.reaped != nil {
		return w.reaped
	}
	out := []reaperList{}
	var flag int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&flag)), 0, 0, 0); err == nil && flag != 0 {
		out = append(out, reaperList{pid: os.Getpid(), fd: -1})
	}
	w.reaped = append(out, ancestorLists()...)
	return w.reaped
}

// reaperList is a reaper and its main thread's children list held open (fd), or
// -1 where it could not be opened.
type reaperList struct {
	pid, fd int
}

// ancestorLists is this process's parent, its parent's, and so on up, and init,
// each with its main thread's children list opened once and held for the
// process's life. The list can only grow stale by losing members: an orphan is
// handed to its nearest living subreaper among its ancestors or to init, which
// are in it already. A held list names its thread, not its pid: once that
// thread has ended it reads empty, and never another process's children.
var ancestorLists = sync.OnceValue(func() []reaperList {
	self := os.Getpid()
	var pids []int
	var buf [statBufSize]byte
	seen := map[int]bool{self: true}
	for pid := self; ; {
		st, ok := statInto(pid, buf[:])
		if !ok || st.ppid <= 0 || seen[st.ppid] {
			break
		}
		pid = st.ppid
		seen[pid] = true
		pids = append(pids, pid)
	}
	if !seen[1] {
		pids = append(pids, 1)
	}
	out := make([]reaperList, 0, len(pids))
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		fd, err := syscall.Open("/proc/"+p+"/task/"+p+"/children", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		out = append(out, reaperList{pid: pid, fd: fd})
	}
	return out
})

// reaperChildren reads reaper r's main thread's children list: from its held
// list, read again from the start, or else by opening it.
func (w *sessionWalk) reaperChildren(r reaperList) ([]int, error) {
	if r.fd < 0 {
		return w.children(r.pid, r.pid)
	}
	return w.readList(r.fd, true)
}

// zombieThread reports whether pid's main thread has ended while others run on.
func (w *sessionWalk) zombieThread(pid int) bool {
	st, ok := statInto(pid, w.stat[:])
	return ok && st.state == 'Z'
}

// allChildren lists a process's children from the children list of each of its
// threads (a child belongs to the thread that forked it). A process that is gone
// has none; false means a list could not be read for another reason. threads is
// its thread count as its stat said (0: not known): a process of one thread has
// its main thread's list read without its threads being listed.
func (w *sessionWalk) allChildren(pid, threads int) ([]int, bool) {
	if threads == 1 {
		if kids, err := w.children(pid, pid); err == nil || gone(err) {
			return kids, true
		}
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, gone(err)
	}
	var out []int
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		kids, err := w.children(pid, tid)
		if err != nil && !gone(err) {
			return nil, false
		}
		out = append(out, kids...)
	}
	return out, true
}

// children reads the children list of thread tid of process pid.
func (w *sessionWalk) children(pid, tid int) ([]int, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/children"
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return w.readList(fd, false)
}

// readList reads a children list from fd, from where it is or, held, from its
// start (pread: a held list is shared by concurrent walks).
func (w *sessionWalk) readList(fd int, held bool) ([]int, error) {
	if w.listBuf == nil {
		w.listBuf = make([]byte, 4096)
	}
	b := w.listBuf[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		want := cap(b) - len(b)
		var n int
		var err error
		if held {
			n, err = syscall.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		} else {
			n, err = syscall.Read(fd, b[len(b):cap(b)])
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
		// The kernel fills a read with whole entries until the list ends or the
		// read is full: one that came back short by more than an entry (a pid
		// and a space) read to the end, and the read that would say so is spared.
		if n < want-24 {
			break
		}
	}
	w.listBuf = b[:0]
	var out []int
	for _, f := range bytes.Fields(b) {
		if c, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// gone reports whether err says the process or thread asked about has ended.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// childrenListed reports whether this kernel has the children lists
// (CONFIG_PROC_CHILDREN), by looking for this process's main thread's.
var childrenListed = sync.OnceValue(func() bool {
	pid := strconv.Itoa(os.Getpid())
	_, err := os.Stat("/proc/" + pid + "/task/" + pid + "/children")
	return err == nil
})

// sessionMembers lists the processes whose session is sid, the shell's own pid (every
// child starts in a session of its own). Under a pseudoterminal an interactive shell
// puts each job in a process group of its own, so signalling the shell's group alone
// would leave a backgrounded `sleep 1000 &` running; the session holds them all.
// It reads every process on the machine: the way when sessionOf cannot be used.
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
		st, ok := statInto(pid, buf[:])
		if ok && sids[st.sid] {
			out[st.sid] = append(out[st.sid], member{pid, st.start})
		}
	}
	return out
}

// procSessionAndStart reads a process's session id and start time from its stat.
func procSessionAndStart(pid int) (int, string, bool) {
	var buf [statBufSize]byte
	st, ok := statInto(pid, buf[:])
	return st.sid, st.start, ok
}

// statBufSize holds any /proc/<pid>/stat: some fifty numbers and a name of at most
// 64 bytes come to well under half of it.
const statBufSize = 1024

// procStat is what the host reads of a process's stat.
type procStat struct {
	state     byte // 'Z' for a zombie: ended, waiting for its parent to reap it
	ppid, sid int
	threads   int
	start     string // start time since boot, in clock ticks: with the pid, names one process
}

// statInto reads pid's stat into buf. A scan of every process reads thousands of
// these, and os.ReadFile costs each one a poller registration attempt, an fstat
// and an allocation on top of the open, read and close that are all a stat file
// needs (it was most of the CPU of disposing terminals whose shells had exited).
func statInto(pid int, buf []byte) (procStat, bool) {
	_, f, ok := statFields(pid, buf)
	// After the name: state(0) ppid(1) pgrp(2) session(3) … num_threads(17)
	// itrealvalue(18) starttime(19).
	if !ok || len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	threads, err3 := strconv.Atoi(f[17])
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, sid: sid, threads: threads, start: f[19]}, true
}

// statFields reads pid's stat into buf and splits it: the command name, which is in
// parentheses and may hold spaces, and the fields after it (state first).
func statFields(pid int, buf []byte) (comm []byte, fields []string, ok bool) {
	b, ok := readStat(pid, buf)
	if !ok {
		return nil, nil, false
	}
	open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || shut < open || shut+2 > len(b) {
		return nil, nil, false
	}
	return b[open+1 : shut], strings.Fields(string(b[shut+2:])), true
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

// stillAlive is the members that have not ended. A zombie has: under an init
// that does not reap what it is handed, it would otherwise hold Terminate for
// the whole grace.
func stillAlive(ms []member) []member {
	var out []member
	var buf [statBufSize]byte
	for _, m := range ms {
		if st, ok := statInto(m.pid, buf[:]); ok && st.start == m.start && st.state != 'Z' {
			out = append(out, m)
		}
	}
	return out
}
