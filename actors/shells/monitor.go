package shells

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/agenttools"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/integration"
)

// monitor watches one shell's output for lines that match its filter, and says once
// when it ends; agenttools.Gate decides when a delivery goes.
type monitor struct {
	id, shell   string
	chat        string
	description string
	filter      *agenttools.Filter
	gate        *agenttools.Gate
	// ownsCommand: the monitor started the command it watches (cmd), and ends with it.
	ownsCommand bool
	command     string
	cmd         *command
	persistent  bool
	timeout     time.Duration
	by          string
	partial     string // the start of a line not yet ended
	pastEnd     bool   // the sentinel of the command it started went by
	ended       bool
	due, end    *time.Timer
}

func (m *monitor) stopTimers() {
	if m.due != nil {
		m.due.Stop()
	}
	if m.end != nil {
		m.end.Stop()
	}
}

// watch creates or rearms monitors.
func (s *service) watch(ctx actor.Context, m *Watch) {
	if m.Rearm {
		s.rearm(ctx, m)
		return
	}
	filter, err := agenttools.NewFilter(m.Filter)
	if err != nil {
		ctx.Respond(&Result{Err: err})
		return
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultMonitorTimeout
	}
	if timeout > MaxMonitorTimeout {
		timeout = MaxMonitorTimeout
	}
	var sh *shell
	own := strings.TrimSpace(m.Command) != ""
	if own {
		if !m.Principal.Can(auth.GrantTerminalInput) {
			ctx.Respond(&Result{Err: refused(m.Principal, auth.GrantTerminalInput)})
			return
		}
		if sh, err = s.open(ctx, m.Caller, 0, 0); err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
	} else {
		if m.ShellID == "" {
			ctx.Respond(&Result{Err: errors.New("a monitor needs a command to run or the bash_id of a shell to watch")})
			return
		}
		if !m.Principal.Can(auth.GrantTerminalOutput) {
			ctx.Respond(&Result{Err: refused(m.Principal, auth.GrantTerminalOutput)})
			return
		}
		if sh, err = s.find(m.Chat, m.ShellID); err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
		if sh.exited {
			ctx.Respond(&Result{ShellID: sh.id, Err: fmt.Errorf("shell %s has exited: there is nothing to watch", sh.id)})
			return
		}
	}
	s.seq++
	mon := &monitor{id: fmt.Sprintf("mon-%d", s.seq), shell: sh.id, chat: sh.chat, description: m.Description, filter: filter,
		gate: agenttools.NewGate(s.opts.Policy), ownsCommand: own, command: m.Command, persistent: m.Persistent, timeout: timeout, by: m.Principal.User}
	s.monitors[mon.id] = mon
	if !mon.persistent {
		mon.end = s.after(ctx, timeout, &monitorEnd{id: mon.id})
	}
	if own {
		c := &command{seq: s.seq, line: m.Command, family: m.Family, by: m.Principal.User, started: time.Now(), toldWaiting: -1}
		sh.cmd, mon.cmd = c, c
		s.startLooking(ctx, sh, c)
		if sh.opened {
			s.typeCommand(ctx, sh, c)
		}
	}
	what := "the output of " + sh.id
	if own {
		what = fmt.Sprintf("`%s` in %s", firstLine(m.Command), sh.id)
	}
	ends := fmt.Sprintf("it ends after %s", timeout)
	if mon.persistent {
		ends = "it stays until its shell ends"
	}
	ctx.Respond(&Result{ShellID: sh.id, Terminal: sh.uri, MonitorID: mon.id, Running: true,
		Status: fmt.Sprintf("[%s watches %s; matching lines and its end wake you; %s]", mon.id, what, ends)})
}

// rearm restarts a monitor's budget and unpauses it, and restarts its timeout.
func (s *service) rearm(ctx actor.Context, m *Watch) {
	var done []string
	for _, mon := range s.monitors {
		if mon.ended || (m.MonitorID != "" && mon.id != m.MonitorID) || (m.MonitorID == "" && mon.shell != m.ShellID) {
			continue
		}
		mon.gate.Rearm()
		if mon.end != nil {
			mon.end.Stop()
			mon.end = s.after(ctx, mon.timeout, &monitorEnd{id: mon.id})
		}
		done = append(done, mon.id)
	}
	if len(done) == 0 {
		ctx.Respond(&Result{Err: errors.New("no running monitor matches: give the monitor_id or the bash_id it watches")})
		return
	}
	ctx.Respond(&Result{MonitorID: strings.Join(done, ","), Status: fmt.Sprintf("[rearmed: %s]", strings.Join(done, ", "))})
}

// monitorOutput feeds a monitor the complete lines of what its shell sh printed.
func (s *service) monitorOutput(ctx actor.Context, mon *monitor, sh *shell, data string) {
	if mon.ended {
		return
	}
	text := mon.partial + data
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		mon.partial = text
		if len(mon.partial) > 64<<10 {
			// A line that never ends is taken as it is rather than held without bound.
			s.monitorLine(mon, sh, mon.partial)
			mon.partial = ""
			s.schedule(ctx, mon)
		}
		return
	}
	mon.partial = text[i+1:]
	for line := range strings.SplitSeq(text[:i], "\n") {
		s.monitorLine(mon, sh, line)
	}
	s.schedule(ctx, mon)
}

// monitorLine offers the filter one line sh printed, unless the line is the shell
// showing a command rather than anything a command printed.
func (s *service) monitorLine(mon *monitor, sh *shell, raw string) {
	line := strings.TrimRight(agenttools.Clean(raw), " \r")
	if strings.Contains(line, integration.SentinelPrefix) {
		if c := mon.cmd; c != nil && c.sentinel != "" {
			if _, ok := integration.SentinelCode(line, c.sentinel); ok {
				mon.pastEnd = true
			}
		}
		return
	}
	if mon.pastEnd {
		return // the command's sentinel went by: this is the next prompt
	}
	if c := mon.cmd; c != nil && (!c.typed || c.marked() && !c.executed()) {
		// Before the command the monitor started is typed, the shell is starting
		// (its rc files, its prompt); where the shell marks where a command starts,
		// everything before that mark is its prompt and the typed line.
		return
	}
	if sh != nil && sh.cmd != nil && sh.cmd.typed && !sh.cmd.executed() && echoes(line, sh.cmd.line) {
		return // a prompt and a command typed into it, in a shell the monitor watches
	}
	if mon.filter.Match(line) {
		mon.gate.Line(time.Now(), line)
	}
}

// echoes reports whether a line the shell printed ends with a line of command: the
// terminal showing what was typed, after the prompt or a continuation prompt.
func echoes(line, command string) bool {
	line = strings.TrimSpace(line)
	for l := range strings.SplitSeq(command, "\n") {
		if l = strings.TrimSpace(l); l != "" && strings.HasSuffix(line, l) {
			return true
		}
	}
	return false
}

// schedule arms the monitor's timer for its next delivery.
func (s *service) schedule(ctx actor.Context, mon *monitor) {
	next, ok := mon.gate.Next()
	if !ok {
		return
	}
	if mon.due != nil {
		mon.due.Stop()
	}
	mon.due = s.after(ctx, max(time.Until(next), 0), &monitorDue{id: mon.id})
}

// monitorDue sends a monitor's delivery when one is due.
func (s *service) monitorDue(ctx actor.Context, id string) {
	mon := s.monitors[id]
	if mon == nil {
		return
	}
	if d, ok := mon.gate.Take(time.Now()); ok {
		sh := s.shells[mon.shell]
		head := "Monitor " + mon.id
		if mon.description != "" {
			head += " (" + mon.description + ")"
		}
		head += " on " + mon.shell
		if d.Exit {
			head += " ended"
		}
		n := WakeNotice{Chat: mon.chat, ShellID: mon.shell, Monitor: mon.id, Text: head + ":\n" + d.Text, At: time.Now()}
		if sh != nil {
			n.Terminal = sh.uri
		}
		s.wake(ctx, n, mon.by)
	}
	if mon.gate.Done() {
		mon.stopTimers()
		delete(s.monitors, id)
		return
	}
	s.schedule(ctx, mon)
}

// endMonitor gives a monitor its exit summary.
func (s *service) endMonitor(ctx actor.Context, mon *monitor, summary string) {
	if mon.ended {
		return
	}
	if mon.partial != "" {
		s.monitorLine(mon, s.shells[mon.shell], mon.partial)
		mon.partial = ""
	}
	mon.ended = true
	if mon.end != nil {
		mon.end.Stop()
	}
	mon.gate.Exit(time.Now(), summary)
	s.schedule(ctx, mon)
}

// monitorTimedOut ends a monitor at its timeout; a command it started is ended too.
func (s *service) monitorTimedOut(ctx actor.Context, id string) {
	mon := s.monitors[id]
	if mon == nil || mon.ended {
		return
	}
	s.endMonitor(ctx, mon, fmt.Sprintf("timed out after %s", mon.timeout))
	if sh := s.shells[mon.shell]; sh != nil && mon.ownsCommand && sh.cmd != nil {
		s.interrupt(ctx, sh)
	}
}
