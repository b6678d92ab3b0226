package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Figures read from /proc about the host process. Every function here returns ok=false
// where /proc does not say (another OS, or a pid that is gone), and the scenario then
// leaves the figure out rather than printing a guess.

// rssBytes is a process's resident set (VmRSS) in bytes.
func rssBytes(pid int) (int64, bool) {
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

// threadCount is how many OS threads a process has (Threads in /proc/<pid>/status):
// for a host in another process, the nearest thing to its goroutines that /proc shows
// (a goroutine stuck in a system call holds a thread).
func threadCount(pid int) (int, bool) {
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

// fdCount is how many descriptors a process holds open.
func fdCount(pid int) (int, bool) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, false
	}
	return len(entries), true
}

// child is one child process of the host, as /proc/<pid>/stat describes it.
type child struct {
	pid   int
	state string // "R", "S", "Z", …
}

// children lists a process's children, zombies included.
func children(parent int) ([]child, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	want := strconv.Itoa(parent)
	var out []child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces: the fields that
		// follow start after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 > len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) > 1 && f[1] == want {
			out = append(out, child{pid: pid, state: f[0]})
		}
	}
	return out, true
}

// zombies counts the children in state Z: exited, and not yet reaped by the host.
func zombies(kids []child) int {
	n := 0
	for _, k := range kids {
		if k.state == "Z" {
			n++
		}
	}
	return n
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100 on every
// Linux build that matters; the figures built on it are ratios of seconds anyway.
const clockTicks = 100

// cpuSeconds is the CPU time a process has used, user and system, in seconds.
func cpuSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	// After the name: state is field 3, utime 14 and stime 15 (man 5 proc).
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(user+sys) / clockTicks, true
}

// machineStat is one reading of /proc/stat: the machine's CPU time spent busy and in
// all, in ticks (two readings give how busy it was between them), and the context
// switches made since boot. A thread woken or put to sleep costs a switch; on a
// virtual machine that is dear, and the host's wake-ups per MB show in it.
type machineStat struct {
	busy, total, switches int64
}

func readMachineStat() (machineStat, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineStat{}, false
	}
	var m machineStat
	cpuSeen, ctxtSeen := false, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[0] == "cpu":
			for i, v := range f[1:] {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return machineStat{}, false
				}
				m.total += n
				// idle (4th) and iowait (5th) are the idle columns.
				if i != 3 && i != 4 {
					m.busy += n
				}
			}
			cpuSeen = true
		case len(f) == 2 && f[0] == "ctxt":
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return machineStat{}, false
			}
			m.switches, ctxtSeen = n, true
		}
	}
	return m, cpuSeen && ctxtSeen
}
