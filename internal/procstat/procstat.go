// Package procstat reads what Linux's /proc says about a process and the machine: a
// process's resident memory, threads, descriptors, children and CPU time, and the
// machine's busy time and context switches. The bench reads the host and its raw
// baselines with it. Every function returns ok=false where /proc does not say
// (another OS, or a pid that is gone), so a caller leaves a figure out rather than
// print a guess.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSSBytes is a process's resident set (VmRSS) in bytes.
func RSSBytes(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, "VmRSS:"))
		if len(f) < 1 {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// Threads is how many OS threads a process has (Threads in /proc/<pid>/status):
// for a host in another process, the nearest thing to its goroutines that /proc shows
// (a goroutine stuck in a system call holds a thread).
func Threads(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return n, err == nil
		}
	}
	return 0, false
}

// Descriptors is how many descriptors a process holds open.
func Descriptors(pid int) (int, bool) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, false
	}
	return len(entries), true
}

// child is one child process of the host, as /proc/<pid>/stat describes it.
type Child struct {
	pid   int
	state string // "R", "S", "Z", …
}

// Children lists a process's children, Zombies included.
func Children(parent int) ([]Child, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	want := strconv.Itoa(parent)
	var out []Child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := statFields(pid)
		if ok && len(f) > 1 && f[1] == want {
			out = append(out, Child{pid: pid, state: f[0]})
		}
	}
	return out, true
}

// Zombies counts the children in state Z: exited, and not yet reaped by the host.
func Zombies(kids []Child) int {
	n := 0
	for _, k := range kids {
		if k.state == "Z" {
			n++
		}
	}
	return n
}

// ClockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100 on every
// Linux build that matters; the figures built on it are ratios of seconds anyway.
const ClockTicks = 100

// CPUSeconds is the CPU time a process has used, user and system, in seconds.
func CPUSeconds(pid int) (float64, bool) {
	t, ok := readTimes(pid)
	return float64(t.own) / ClockTicks, ok
}

// ChildrenCPUSeconds is the CPU time, in seconds, of a process's children: those it
// has reaped (with what they reaped), and those still running (with what they
// reaped). Two readings give what the children used between them, a child that
// lived across either reading included; the process's own time is not in it.
func ChildrenCPUSeconds(parent int) (float64, bool) {
	t, ok := readTimes(parent)
	if !ok {
		return 0, false
	}
	total := t.reaped
	kids, _ := Children(parent)
	for _, k := range kids {
		// A child gone since the listing was reaped into the parent's times
		// after the read above, or not yet: it is missed either way, once.
		if kt, ok := readTimes(k.pid); ok {
			total += kt.own + kt.reaped
		}
	}
	return float64(total) / ClockTicks, true
}

// times are a process's CPU times in clock ticks: its own (utime + stime) and its
// reaped children's (cutime + cstime).
type times struct{ own, reaped int64 }

func readTimes(pid int) (times, bool) {
	f, ok := statFields(pid)
	// After the name: state is field 3, utime 14, stime 15, cutime 16 and cstime 17
	// (man 5 proc), so f[11] to f[14].
	if !ok || len(f) < 15 {
		return times{}, false
	}
	var v [4]int64
	for i := range v {
		n, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return times{}, false
		}
		v[i] = n
	}
	return times{own: v[0] + v[1], reaped: v[2] + v[3]}, true
}

// statFields are the fields of /proc/<pid>/stat after the command's name, which is in
// parentheses and may hold spaces: f[0] is the state (field 3).
func statFields(pid int) ([]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, false
	}
	return strings.Fields(s[i+2:]), true
}

// Machine is one reading of /proc/stat: the machine's CPU time spent busy and in
// all, in ticks (two readings give how busy it was between them), and the context
// switches made since boot. A thread woken or put to sleep costs a switch; on a
// virtual machine that is dear, and the host's wake-ups per MB show in it.
type Machine struct {
	Busy, Total, Switches int64
}

func ReadMachine() (Machine, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, false
	}
	var m Machine
	cpuSeen, ctxtSeen := false, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[0] == "cpu":
			for i, v := range f[1:] {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return Machine{}, false
				}
				m.Total += n
				// idle (4th) and iowait (5th) are the idle columns.
				if i != 3 && i != 4 {
					m.Busy += n
				}
			}
			cpuSeen = true
		case len(f) == 2 && f[0] == "ctxt":
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return Machine{}, false
			}
			m.Switches, ctxtSeen = n, true
		}
	}
	return m, cpuSeen && ctxtSeen
}
