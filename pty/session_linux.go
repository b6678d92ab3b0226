package pty

import (
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

// sessionMembers lists the processes whose session is sid, the shell's own pid (every
// child starts in a session of its own). Under a pseudoterminal an interactive shell
// puts each job in a process group of its own, so signalling the shell's group alone
// would leave a backgrounded `sleep 1000 &` running; the session holds them all.
func sessionMembers(sid int) []member {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []member
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, start, ok := procSessionAndStart(pid)
		if ok && s == sid {
			out = append(out, member{pid, start})
		}
	}
	return out
}

// procSessionAndStart reads a process's session id and start time from its stat.
func procSessionAndStart(pid int) (int, string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	// The command name is in parentheses and may hold spaces; fields follow it.
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, "", false
	}
	f := strings.Fields(s[i+2:])
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

// signalMembers signals each member still alive with the same start time.
func signalMembers(ms []member, sig syscall.Signal) {
	for _, m := range ms {
		if _, start, ok := procSessionAndStart(m.pid); ok && start == m.start {
			_ = syscall.Kill(m.pid, sig)
		}
	}
}
