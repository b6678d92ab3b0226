package shells

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/agenttools"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
)

// sleepPoll matches a command that sleeps and polls (sleep 30; until …; do sleep 1;
// done; while …): it waits PollWindow, not Window, before going to the background,
// since the seed's tools would have it watched by a monitor rather than waited on.
var sleepPoll = regexp.MustCompile(`(^|[;&|]\s*|\b(do|then)\s+)sleep\s+\d|^\s*(while|until)\b`)

// run starts a command in the chat's idle shell, or in a new one.
func (s *service) run(ctx actor.Context, m *Run) {
	if strings.TrimSpace(m.Command) == "" {
		ctx.Respond(&Result{Err: errors.New("command is empty")})
		return
	}
	if !m.Principal.Can(auth.GrantTerminalInput) {
		ctx.Respond(&Result{Err: refused(m.Principal, auth.GrantTerminalInput)})
		return
	}
	sh := s.idleShell(m.Chat)
	if sh != nil && (m.Cols > 0 && m.Cols != sh.cols || m.Rows > 0 && m.Rows != sh.rows) {
		s.resizeShell(ctx, sh, m.Cols, m.Rows)
	}
	if sh == nil {
		var err error
		if sh, err = s.open(ctx, m.Caller, m.Cols, m.Rows); err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
	}
	s.seq++
	c := &command{seq: s.seq, line: m.Command, family: m.Family, by: m.Principal.User, started: time.Now(), toldWaiting: -1}
	sh.cmd, sh.lastUsed = c, time.Now()
	if m.Background {
		s.toBackground(ctx, sh, c)
		ctx.Respond(&Result{ShellID: sh.id, Terminal: sh.uri, Running: true,
			Status: fmt.Sprintf("[%s: `%s` started in the background; its end wakes you]", sh.id, firstLine(c.line))})
	} else {
		c.waiter = ctx.Sender()
		wait := m.Wait
		if wait <= 0 {
			wait = s.opts.Window
			if sleepPoll.MatchString(m.Command) {
				wait = s.opts.PollWindow
			}
		}
		if m.Deadline > 0 && m.Deadline < wait {
			c.timer = s.after(ctx, m.Deadline, &deadlineOver{shell: sh.id, seq: c.seq})
		} else {
			c.timer = s.after(ctx, wait, &waitOver{shell: sh.id, seq: c.seq})
		}
	}
	s.startLooking(ctx, sh, c)
	if sh.opened {
		s.typeCommand(ctx, sh, c)
	}
}

// typeCommand types a command into its shell, with the sentinel after it when the
// shell marks no boundaries.
func (s *service) typeCommand(ctx actor.Context, sh *shell, c *command) {
	// A leading space keeps the command out of a POSIX shell's history.
	line := " " + c.line
	owed := false
	if !sh.marks {
		c.sentinel = strconv.FormatInt(time.Now().UnixNano(), 36)
		// Typed once the shell is back at its prompt where that can be seen
		// (sentinel.go), so that the command cannot read it.
		if owed = s.owesSentinel(sh); !owed {
			line += "\n " + integration.SentinelEcho(c.sentinel)
		}
	}
	c.typed = true
	s.opts.Logger.Debug("agent command typed", "shell", sh.id, "marks", sh.marks, "command", c.line)
	w := &terminal.Write{URI: sh.uri, Data: line + "\r"}
	if owed && !sh.isPty {
		w.Written = ctx.Self()
	}
	ctx.Send(s.spec.Root, w)
	if owed {
		s.oweSentinel(ctx, sh, c)
	}
}

// printed is what a command printed, for a model: control sequences removed, the
// typed echo and the sentinel's lines left out.
func (c *command) printed() string {
	text := agenttools.Clean(c.raw.String())
	if c.sentinel == "" {
		return text
	}
	text = integration.WithoutSentinel(text, c.sentinel)
	// Under a pseudoterminal the shell echoes the typed line first.
	return strings.TrimPrefix(text, " "+c.line+"\n")
}

// answer is what a command's call is told now; what the shell printed so far
// counts as shown.
func (s *service) answer(sh *shell, c *command) *Result {
	sh.shownAt = max(sh.shownAt, sh.logEnd())
	printed := c.printed()
	output := shape(c.family, printed)
	if c.family != HostFamily && c.droppedBytes > 0 {
		output = agenttools.ForModelAfter(printed, c.droppedLines, c.droppedBytes)
	}
	r := &Result{ShellID: sh.id, Terminal: sh.uri, Output: output, ExitCode: c.exit, Running: !c.done}
	if c.done {
		r.EndShown = c.seq
	}
	switch {
	case c.done && c.how != "":
		r.Status = fmt.Sprintf("[%s: %s]", sh.id, c.how)
	case c.done && c.exit != nil:
		r.Status = fmt.Sprintf("[%s: exited with code %d]", sh.id, *c.exit)
	default:
		r.Status = s.status(sh)
	}
	return r
}

// ended finishes a shell's command: its call is answered, its background row goes
// and the session is woken, its monitors summarise.
func (s *service) ended(ctx actor.Context, sh *shell, exit *int, how string) {
	c := sh.cmd
	if c == nil || c.done {
		return
	}
	c.done, c.exit, c.how = true, exit, how
	s.opts.Logger.Debug("agent command ended", "shell", sh.id, "how", how, "exit", exitWords(exit), "typed", c.typed)
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.lookTimer != nil {
		c.lookTimer.Stop()
	}
	c.owed.Stop()
	sh.cmd, sh.last, sh.lastUsed = nil, c, time.Now()
	if c.waiter != nil {
		ctx.Send(c.waiter, s.answer(sh, c))
		c.waiter = nil
	}
	if c.background {
		if c.work != "" {
			ctx.Send(ctx.Parent(), &session.RemoveBackgroundWork{Chat: sh.chat, ID: c.work})
		}
		code := "no exit code"
		if exit != nil {
			code = fmt.Sprintf("exit code %d", *exit)
		}
		tail, cut := agenttools.LastChars(agenttools.Clean(c.printed()), agenttools.CompletionChars)
		if cut {
			tail = "…" + tail
		}
		text := fmt.Sprintf("Background command `%s` in shell %s ended with %s.", firstLine(c.line), sh.id, code)
		if how != "" {
			text = fmt.Sprintf("Background command `%s` in shell %s ended: %s (%s).", firstLine(c.line), sh.id, how, code)
		}
		if strings.TrimSpace(tail) != "" {
			text += "\n" + tail
		}
		s.wake(ctx, WakeNotice{Chat: sh.chat, ShellID: sh.id, Terminal: sh.uri, Command: c.seq, Text: text, At: time.Now()}, c.by)
	}
	for _, mon := range s.monitors {
		if mon.shell == sh.id && mon.ownsCommand {
			s.endMonitor(ctx, mon, fmt.Sprintf("`%s` ended with %s", firstLine(c.line), exitWords(exit)))
		}
	}
}

func exitWords(exit *int) string {
	if exit == nil {
		return "no exit code"
	}
	return fmt.Sprintf("exit code %d", *exit)
}

// toBackground makes a command background work: a row on its chat, and a wake when
// it ends.
func (s *service) toBackground(ctx actor.Context, sh *shell, c *command) {
	if c.background {
		return
	}
	c.background = true
	c.work = fmt.Sprintf("bg-%s-%d", sh.id, c.seq)
	ctx.Send(ctx.Parent(), &session.SetBackgroundWork{Chat: sh.chat, Owner: ctx.Self(), Work: messages.BackgroundShellWork{
		Kind: "shell", ID: c.work, Label: firstLine(c.line), StartedAt: c.started.UTC().Format(time.RFC3339Nano), Command: c.line, Terminal: sh.uri}})
}

// waitOver answers a command's call with what it printed so far; the command goes on
// in the background.
func (s *service) waitOver(ctx actor.Context, m *waitOver) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.waiter == nil {
		return
	}
	c := sh.cmd
	s.toBackground(ctx, sh, c)
	r := s.answer(sh, c)
	r.Status = fmt.Sprintf("[%s: `%s` is still running after %s and goes on in the background; read it with bash_output or read_bash, stop it with kill_bash; its end wakes you]",
		sh.id, firstLine(c.line), time.Since(c.started).Round(time.Second))
	ctx.Send(c.waiter, r)
	c.waiter = nil
}

// startLooking starts the looks at a command's foreground job (inputLook).
func (s *service) startLooking(ctx actor.Context, sh *shell, c *command) {
	if s.opts.InputPoll > 0 {
		c.lookEvery = s.opts.InputPoll
		s.nextLook(ctx, sh, c)
	}
}

func (s *service) nextLook(ctx actor.Context, sh *shell, c *command) {
	c.lookTimer = s.after(ctx, c.lookEvery, &inputLook{shell: sh.id, seq: c.seq})
}

// lookSoon brings the next look at a command near again when it prints after a
// quiet spell: a question is what a program prints before it waits.
func (s *service) lookSoon(ctx actor.Context, sh *shell, c *command) {
	if c.lookEvery > s.opts.InputPoll && c.lookTimer != nil && c.lookTimer.Stop() {
		c.lookEvery = s.opts.InputPoll
		s.nextLook(ctx, sh, c)
	}
}

// maxLookEvery is the longest gap between two looks at a command that stays quiet
// and waits for no one (a long build, a server): a look costs a few /proc reads.
const maxLookEvery = 3200 * time.Millisecond

// inputLook looks, off the mailbox, at what a running command's foreground job is
// doing, when the command has printed nothing since the last look: a program
// waiting for a person prints its question and goes quiet. The looks go on for as
// long as the command runs, further apart while it stays quiet and waits for no
// one, and close again when it prints.
func (s *service) inputLook(ctx actor.Context, m *inputLook) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.done {
		return
	}
	c := sh.cmd
	if sh.opened && sh.pid <= 0 {
		return // no process known to look at
	}
	// Until the command has begun, the shell reading the terminal is the shell at
	// its prompt. A command ended by its sentinel has begun once typed: the shell
	// reads the whole line before it runs the command.
	if !c.typed || c.marked() && !c.executed() || c.outBytes != c.lookedAt {
		c.lookedAt, c.readingLooks, c.lookEvery = c.outBytes, 0, s.opts.InputPoll
		s.nextLook(ctx, sh, c)
		return
	}
	self, system, pid, isPty := s.self, ctx.ActorSystem(), sh.pid, sh.isPty
	looked := &inputLooked{shell: sh.id, seq: c.seq, printed: c.outBytes}
	go func() {
		if isPty {
			looked.wait = pty.ForegroundInput(pid)
		} else {
			looked.wait = pty.PipeInput(pid) // the pipe it reads is its terminal
		}
		system.Root.Send(self, looked)
	}()
}

// inputLooked acts once two looks in a row, with nothing printed between them,
// found a command's job waiting to read the terminal: a call waiting on the
// command is answered, and a command in the background wakes the agent with its
// question, unless the agent has been shown everything it printed (the answer
// to its bash_input shows the next question already).
func (s *service) inputLooked(ctx actor.Context, m *inputLooked) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.done {
		return
	}
	c := sh.cmd
	switch {
	case c.outBytes != m.printed:
		c.readingLooks, c.lookEvery = 0, s.opts.InputPoll
	case !m.wait.Waiting:
		c.readingLooks, c.lookEvery = 0, min(2*c.lookEvery, maxLookEvery)
	default:
		c.readingLooks++
	}
	c.lookedAt = c.outBytes
	s.nextLook(ctx, sh, c)
	if c.readingLooks < 2 || c.toldWaiting == c.outBytes {
		return
	}
	c.toldWaiting = c.outBytes
	s.opts.Logger.Debug("agent command waits for input", "shell", sh.id, "process", m.wait.Name, "pid", m.wait.Pid, "answering", c.waiter != nil)
	reader := m.wait.Name
	if c.sentinel != "" && m.wait.Pid == sh.pid {
		// The shell itself reads: its read builtin, or, as likely, the shell back at
		// its prompt because the command read the line typed to mark its end.
		reader = fmt.Sprintf("the shell itself (%s: a read builtin, or its prompt if the command took the line that marks its end)", m.wait.Name)
	}
	if c.waiter != nil {
		if c.timer != nil {
			c.timer.Stop()
		}
		s.toBackground(ctx, sh, c)
		r := s.answer(sh, c)
		r.Status = fmt.Sprintf("[%s: `%s` is waiting for input: %s reads the terminal. Answer it with bash_input or write_bash, stop it with kill_bash; it goes on in the background and its end wakes you]",
			sh.id, firstLine(c.line), reader)
		ctx.Send(c.waiter, r)
		c.waiter = nil
		return
	}
	if sh.shownAt >= sh.logEnd() {
		return
	}
	tail, cut := agenttools.LastChars(agenttools.Clean(c.printed()), agenttools.CompletionChars)
	if cut {
		tail = "…" + tail
	}
	text := fmt.Sprintf("Background command `%s` in shell %s is waiting for input: %s reads the terminal. Answer it with bash_input.", firstLine(c.line), sh.id, reader)
	if strings.TrimSpace(tail) != "" {
		text += "\n" + tail
	}
	s.wake(ctx, WakeNotice{Chat: sh.chat, ShellID: sh.id, Terminal: sh.uri, Command: c.seq, WaitsForInput: true, Text: text, At: time.Now()}, c.by)
}

// fullScreen answers a command's call once it opens the alternate screen (an
// editor, a pager, a TUI): nothing it draws there reads as output, and it waits for
// keys. It goes on in its shell, busy until it ends.
func (s *service) fullScreen(ctx actor.Context, sh *shell, c *command) {
	if c.timer != nil {
		c.timer.Stop()
	}
	s.toBackground(ctx, sh, c)
	r := s.answer(sh, c)
	r.Status = fmt.Sprintf("[%s: `%s` opened a full-screen view and waits for keys; see it with bash_output view=screen, drive it with bash_input, stop it with kill_bash; its end wakes you]",
		sh.id, firstLine(c.line))
	ctx.Send(c.waiter, r)
	c.waiter = nil
}

// deadlineOver interrupts a command still in the foreground at its deadline.
func (s *service) deadlineOver(ctx actor.Context, m *deadlineOver) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.waiter == nil {
		return
	}
	c := sh.cmd
	r := s.answer(sh, c)
	r.Status = fmt.Sprintf("[%s: `%s` ran past its timeout of %s and was interrupted (^C)]", sh.id, firstLine(c.line), time.Since(c.started).Round(time.Second))
	ctx.Send(c.waiter, r)
	c.waiter = nil
	s.interrupt(ctx, sh)
}

// interrupt writes ^C to a shell, as a person's stop does. Without marks, the line
// discipline drops the sentinel line typed after the command along with the rest of
// its input queue, so it is typed again to say when the shell is back; a sentinel
// still owed is typed by its looks once the shell is back (sentinel.go). A command not
// yet typed, or typed and not yet begun by a shell that marks commands, is thrown
// away with its line: nothing would ever say it ended, so it ends here.
func (s *service) interrupt(ctx actor.Context, sh *shell) {
	c := sh.cmd
	s.opts.Logger.Debug("agent shell interrupted", "shell", sh.id, "running", c != nil)
	if c != nil && !c.typed {
		s.ended(ctx, sh, nil, "interrupted before it started")
		return
	}
	data := "\x03"
	if c != nil && c.sentinel != "" && c.owed == nil {
		data += " " + integration.SentinelEcho(c.sentinel) + "\r"
	}
	ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: data})
	if c != nil && sh.marks && c.commandID == "" {
		s.ended(ctx, sh, nil, "interrupted before it started")
	}
}

// target is the shell a call names, once the caller's grant is checked; alive
// also refuses a shell that has ended. On a refusal the call is answered and ok is
// false.
func (s *service) target(ctx actor.Context, c Caller, grant, id string, alive bool) (sh *shell, ok bool) {
	if !c.Principal.Can(grant) {
		ctx.Respond(&Result{Err: refused(c.Principal, grant)})
		return nil, false
	}
	sh, err := s.find(c.Chat, id)
	if err != nil {
		ctx.Respond(&Result{Err: err})
		return nil, false
	}
	if alive && sh.exited {
		ctx.Respond(&Result{ShellID: sh.id, Err: fmt.Errorf("shell %s has ended; nothing can be typed into it or resized", sh.id)})
		return nil, false
	}
	return sh, true
}

// read answers what a shell printed since the last read, or its screen.
func (s *service) read(ctx actor.Context, m *Read) {
	sh, ok := s.target(ctx, m.Caller, auth.GrantTerminalOutput, m.ShellID, false)
	if !ok {
		return
	}
	sh.lastUsed = time.Now()
	if m.Screen {
		f := ctx.RequestFuture(s.spec.Root, &terminal.ScreenQuery{URI: sh.uri, Text: true}, channel.RequestTimeout)
		ctx.ReenterAfter(f, func(res any, err error) {
			info, _ := res.(*terminal.ScreenInfo)
			if err != nil || info == nil {
				ctx.Respond(&Result{ShellID: sh.id, Err: errors.New("the shell's screen could not be read: it is gone")})
				return
			}
			text := info.Text
			if !info.IsPty {
				text = "(this shell runs on pipes and has no screen; its log follows)\n" + agenttools.ForModel(sh.log.String(), 0, 0)
			}
			ctx.Respond(s.readResult(sh, text))
		})
		return
	}
	var filter *agenttools.Filter
	if m.Filter != "" {
		var err error
		if filter, err = agenttools.NewFilter(m.Filter); err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
	}
	raw, end := sh.logSince(sh.readAt)
	sh.readAt, sh.shownAt = end, max(sh.shownAt, end)
	text := integration.WithoutSentinels(agenttools.Clean(raw))
	if filter != nil {
		var keep []string
		for _, line := range strings.Split(text, "\n") {
			if filter.Match(line) {
				keep = append(keep, line)
			}
		}
		text = strings.Join(keep, "\n")
	}
	ctx.Respond(s.readResult(sh, shape(m.Family, text)))
}

func (s *service) readResult(sh *shell, text string) *Result {
	r := &Result{ShellID: sh.id, Terminal: sh.uri, Output: text, Running: sh.cmd != nil, Status: s.status(sh)}
	if sh.exited {
		r.ExitCode = sh.exit
	} else if sh.cmd == nil && sh.last != nil {
		r.ExitCode = sh.last.exit
	}
	if sh.cmd == nil && sh.last != nil {
		r.EndShown = sh.last.seq
	}
	return r
}

// write types into a shell and answers once it has quieted down.
func (s *service) write(ctx actor.Context, m *Write) {
	sh, ok := s.target(ctx, m.Caller, auth.GrantTerminalInput, m.ShellID, true)
	if !ok {
		return
	}
	data := m.Text
	for _, k := range m.Keys {
		b, err := agenttools.KeyBytes(k)
		if err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
		data += b
	}
	if m.Submit {
		data += "\r"
	}
	if data == "" {
		ctx.Respond(&Result{Err: errors.New("nothing to type: give input, keys or submit")})
		return
	}
	if sh.writer != nil && sh.writer.waiter != nil {
		// One write waits at a time; the earlier one is answered now.
		s.answerWrite(ctx, sh)
	}
	sh.lastUsed = time.Now()
	_, end := sh.logSince(sh.readAt)
	now := time.Now()
	sh.writer = &settle{waiter: ctx.Sender(), from: end, since: now, lastOut: now, family: m.Family}
	ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: data})
	if c := sh.cmd; c != nil && c.typed && sh.marks && c.commandID == "" && strings.Contains(data, "\x03") {
		// ^C before the shell began the command throws its line away: no mark will
		// ever say it ended, so it ends here.
		s.ended(ctx, sh, nil, "interrupted before it started")
	}
	s.after(ctx, s.opts.Settle, &settleCheck{shell: sh.id})
}

// settleCheck answers a write once its shell printed nothing for Settle, its command
// ended, or SettleMax passed.
func (s *service) settleCheck(ctx actor.Context, m *settleCheck) {
	sh := s.shells[m.shell]
	if sh == nil || sh.writer == nil || sh.writer.waiter == nil {
		return
	}
	w := sh.writer
	now := time.Now()
	if now.Sub(w.lastOut) < s.opts.Settle && now.Sub(w.since) < s.opts.SettleMax && !sh.exited {
		s.after(ctx, s.opts.Settle-now.Sub(w.lastOut)+time.Millisecond, &settleCheck{shell: sh.id})
		return
	}
	s.answerWrite(ctx, sh)
}

func (s *service) answerWrite(ctx actor.Context, sh *shell) {
	w := sh.writer
	raw, end := sh.logSince(w.from)
	if end > sh.readAt {
		sh.readAt = end
	}
	sh.shownAt = max(sh.shownAt, end)
	ctx.Send(w.waiter, s.readResult(sh, shape(w.family, integration.WithoutSentinels(raw))))
	w.waiter = nil
}

// resize changes a shell's size.
func (s *service) resize(ctx actor.Context, m *Resize) {
	if m.Cols <= 0 || m.Rows <= 0 || m.Cols > 1000 || m.Rows > 1000 {
		ctx.Respond(&Result{Err: fmt.Errorf("cols and rows must be 1 to 1000, not %d×%d", m.Cols, m.Rows)})
		return
	}
	sh, ok := s.target(ctx, m.Caller, auth.GrantTerminalResize, m.ShellID, true)
	if !ok {
		return
	}
	s.resizeShell(ctx, sh, m.Cols, m.Rows)
	r := s.readResult(sh, "")
	r.Status = fmt.Sprintf("[%s: resized to %d×%d]", sh.id, m.Cols, m.Rows)
	ctx.Respond(r)
}

func (s *service) resizeShell(ctx actor.Context, sh *shell, cols, rows int) {
	if cols <= 0 {
		cols = sh.cols
	}
	if rows <= 0 {
		rows = sh.rows
	}
	sh.cols, sh.rows = cols, rows
	a := &messages.Action{Type: messages.TerminalResized, Cols: &cols, Rows: &rows}
	raw := fmt.Appendf(nil, `{"type":%q,"cols":%d,"rows":%d}`, messages.TerminalResized, cols, rows)
	ctx.Send(s.spec.Root, &channel.Dispatch{Channel: sh.uri, Action: a, Raw: raw,
		Origin: messages.Origin{ClientID: "termhost-agent-tools"}, Sub: discard{}})
}

// kill ends shells: SIGTERM to every process of the shell's session now, SIGKILL to
// what is left after the grace (an interactive shell ignores SIGTERM, so the shell
// itself goes then); or, for Dispose, ends the shell and takes it off the list.
func (s *service) kill(ctx actor.Context, m *Kill) {
	if !m.Principal.Can(auth.GrantTerminalDispose) {
		ctx.Respond(&Result{Err: refused(m.Principal, auth.GrantTerminalDispose)})
		return
	}
	var targets []*shell
	if m.All {
		for _, id := range s.order {
			targets = append(targets, s.shells[id])
		}
	} else {
		sh, err := s.find(m.Chat, m.ShellID)
		if err != nil {
			ctx.Respond(&Result{Err: err})
			return
		}
		targets = []*shell{sh}
	}
	var names []string
	var disposing []<-chan struct{}
	for _, sh := range targets {
		if sh.gone {
			continue
		}
		names = append(names, sh.id)
		if m.Dispose {
			if sh.cmd != nil {
				s.ended(ctx, sh, nil, "the shell was shut down")
			}
			disposing = append(disposing, s.forget(ctx, sh))
			continue
		}
		if sh.exited {
			continue
		}
		ctx.Send(s.spec.Root, &terminal.Kill{URI: sh.uri, Signal: syscall.SIGTERM, Grace: s.opts.KillGrace})
	}
	r := &Result{Shells: s.list()}
	switch {
	case len(names) == 0:
		r.Status = "[no shells to end]"
	case m.Dispose:
		r.Status = fmt.Sprintf("[shut down: %s]", strings.Join(names, ", "))
	default:
		r.Status = fmt.Sprintf("[killed: %s]", strings.Join(names, ", "))
	}
	if len(targets) == 1 {
		r.ShellID, r.Terminal = targets[0].id, targets[0].uri
	}
	if len(disposing) == 0 {
		ctx.Respond(r)
		return
	}
	// The answer waits until the shells are off the list, as a client's dispose does.
	sender, system := ctx.Sender(), ctx.ActorSystem()
	go func() {
		for _, done := range disposing {
			<-done
		}
		system.Root.Send(sender, r)
	}()
}

// stop interrupts a shell's command.
func (s *service) stop(ctx actor.Context, m *Stop) {
	sh, ok := s.target(ctx, m.Caller, auth.GrantTerminalInput, m.ShellID, false)
	if !ok {
		return
	}
	s.interrupt(ctx, sh)
	ctx.Respond(s.readResult(sh, ""))
}

// stopWork is a client's stop on a background row: the same ^C.
func (s *service) stopWork(ctx actor.Context, m *session.StopBackgroundWork) {
	for _, sh := range s.shells {
		if sh.cmd != nil && sh.cmd.work == m.ID {
			s.interrupt(ctx, sh)
			return
		}
	}
}

// acted tells the monitors of a chat that the agent made a call: their run of
// monitor-only wakes restarts.
func (s *service) acted(chat string) {
	for _, mon := range s.monitors {
		if s.shells[mon.shell] != nil && s.shells[mon.shell].chat == chat {
			mon.gate.AgentActed()
		}
	}
}

// wake tells every attached sink of the chat, and the session as a turn.
func (s *service) wake(ctx actor.Context, n WakeNotice, by string) {
	heard := false
	for sink, chat := range s.sinks {
		if chat == n.Chat {
			sink.Notice(n)
			heard = true
		}
	}
	if !heard {
		s.unheard = append(s.unheard, n)
		if len(s.unheard) > 100 {
			s.unheard = s.unheard[len(s.unheard)-100:]
		}
	}
	meta := map[string]any{"termhost.shell": n.ShellID, "termhost.terminal": n.Terminal}
	if n.Monitor != "" {
		meta["termhost.monitor"] = n.Monitor
	}
	ctx.Send(ctx.Parent(), &session.Wake{Chat: n.Chat, Text: n.Text, By: by, Meta: meta})
}

func (s *service) attach(m *Attach) {
	s.sinks[m.Sink] = m.Chat
	var rest []WakeNotice
	for _, n := range s.unheard {
		if n.Chat == m.Chat {
			m.Sink.Notice(n)
		} else {
			rest = append(rest, n)
		}
	}
	s.unheard = rest
}

// discard is a Subscriber that drops what it is given: the service's own dispatches
// have nobody to echo a rejection to.
type discard struct{}

func (discard) Deliver(string, []byte) {}
