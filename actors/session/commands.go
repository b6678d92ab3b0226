package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session/commandcall"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
)

// commandRun is one `!` command from typing to its completed tool call.
type commandRun struct {
	chat       *chat
	turnID     string
	toolCallID string
	command    string
	text       string
	terminal   string
	started    time.Time
	isPty      bool
	marks      bool // its end is read from the integration's finished mark
	sentinel   string
	typed      bool
	output     strings.Builder
	done       bool
	commandID  string
	timer      *time.Timer
	stopAlt    chan struct{}
	// prepared is closed once the file its output will be kept in is made
	// (persistence.PrepareTerminal), or could not be.
	prepared chan struct{}
	steps    turnSteps
	// create is how its terminal was asked for, which a spare shell copies.
	create *terminal.Create
	// atPrompt says the command ended and left its shell at its prompt, and nobody
	// has used the shell since: it may be retired (retire.go).
	atPrompt bool
	// owed is the sentinel not typed yet, until the shell reads its terminal
	// again (sentinel.go).
	owed *integration.OwedSentinel
}

// turnSteps are when a command's turn passed each step, for the debug log that says
// where a turn's time goes (Config.Logger at debug level).
type turnSteps struct {
	listed   time.Time // its terminal answered: the shell started and printed
	executed time.Time // the command's start mark (or its first output, without marks)
	finished time.Time // its end mark, or the sentinel line
	snapshot time.Time // the terminal's scrollback, to keep, arrived
	kept     time.Time // the output and the turn were written and fsynced
	// spare says how its shell came: "ready" (a spare at its prompt, or on its way
	// there), "starting" (a spare was still being started: a shell of its own), or
	// "none".
	spare string
}

// startTurn runs a turn that has started with msg, by is whose turn it is ("" when
// unknown): in a session with an agent, anything but a `!` command goes to the agent
// (agentside.go), wakes included. Without one, a system notification (a Wake)
// completes at once, being its own content, and anything but a `!` command ends at
// once with the no-agent error; then the next queued message starts. A `!` command
// runs in a terminal. A wake is told from a person's text by its origin, never by its
// text.
func (s *session) startTurn(ctx actor.Context, c *chat, turnID string, msg messages.Message, by string) {
	c.busy = turnID
	if s.agentTakes(msg) {
		s.promptAgent(ctx, c, turnID, msg, by)
		return
	}
	if msg.OriginKind() == messages.OriginSystemNotification {
		s.chatAction(c, messages.ChatTurnCompleteAction{TurnID: turnID, Duration: 0})
		c.lastTurn = turnID
		c.busy = ""
		s.drainQueue(ctx, c)
		return
	}
	text := msg.Text()
	command, isCommand := commandcall.Parse(text)
	if !isCommand {
		s.chatAction(c, messages.ChatErrorAction{TurnID: turnID, Duration: 0, Error: messages.ErrorInfo{ErrorType: "noAgent", Message: noAgent}})
		c.lastTurn = turnID
		c.busy = ""
		s.drainQueue(ctx, c)
		return
	}
	s.runCommand(ctx, c, turnID, text, command)
}

// drainQueue starts the first queued message once the chat is idle: no turn runs,
// and the agent is not still ending a turn a `!` command took the place of. What the
// chat has to say of its agent goes first.
func (s *session) drainQueue(ctx actor.Context, c *chat) {
	if c.busy != "" {
		return
	}
	s.flushNotices(c)
	if c.agentTurn != "" {
		return
	}
	id, msg, ok := c.state.FirstQueued()
	if !ok {
		return
	}
	by := c.queuedBy[id]
	delete(c.queuedBy, id)
	s.chatAction(c, messages.ChatPendingMessageRemovedAction{Kind: messages.PendingQueued, ID: id})
	s.seq++
	turnID := fmt.Sprintf("turn-%d-%d", time.Now().UnixNano(), s.seq)
	s.chatAction(c, messages.ChatTurnStartedAction{TurnID: turnID, StartedAt: isoTime(time.Now()), Message: msg, QueuedMessageID: id})
	s.startTurn(ctx, c, turnID, msg, by)
}

// runCommand shows the command as a running tool call and asks the root for its
// terminal; opened goes on once the terminal is listed.
func (s *session) runCommand(ctx actor.Context, c *chat, turnID, text, command string) {
	s.seq++
	s.shells.Commanded(time.Now())
	toolCallID := fmt.Sprintf("cmd-%d-%d", time.Now().UnixNano(), s.seq)
	r := &commandRun{chat: c, turnID: turnID, toolCallID: toolCallID, command: command, text: text, started: time.Now(),
		terminal: toolterm.URI(c.uri, toolCallID), sentinel: strconv.FormatInt(time.Now().UnixNano(), 36), stopAlt: make(chan struct{})}
	c.runs[toolCallID] = r
	c.shells = append(c.shells, r.terminal)
	s.prepare(r)
	s.chatAction(c, messages.ChatToolCallStartAction{TurnID: turnID, ToolCallID: toolCallID,
		ToolName: commandcall.ToolName, DisplayName: commandcall.DisplayName, Intention: command})
	s.chatAction(c, messages.ChatToolCallReadyAction{TurnID: turnID, ToolCallID: toolCallID,
		InvocationMessage: command, ToolInput: command, Intention: command, Confirmed: messages.ConfirmedNotNeeded})
	if s.closed {
		s.finish(ctx, r, commandcall.Ending{How: commandcall.Failed, Failure: errors.New(ClosingHost)})
		return
	}
	cwd := ""
	if len(s.record.WorkingDirectories) > 0 {
		cwd = s.record.WorkingDirectories[0]
	}
	shell := s.cfg.DefaultShell
	if shell == "" {
		shell = pty.DefaultShell()
	}
	create := &terminal.Create{
		URI:     r.terminal,
		Claim:   messages.Claim{Kind: messages.ClaimSession, Session: s.uri, Chat: c.uri, TurnID: turnID, ToolCallID: toolCallID},
		Name:    commandcall.Title,
		Cwd:     cwd,
		Spec:    terminal.Spec{Shell: shell, PreventShellHistory: true, NonInteractive: true, StrictCwd: true},
		Watcher: ctx.Self(),
		Spare:   s.takeSpare(),
	}
	r.create = create
	switch {
	case create.Spare != nil:
		r.steps.spare = "ready"
	case s.shells.Starting():
		r.steps.spare = "starting"
	default:
		r.steps.spare = "none"
	}
	f := ctx.RequestFuture(s.root, create, channel.RequestTimeout)
	if create.Spare != nil {
		// The command's shell is started already: the next spare starts now,
		// beside the command rather than beside a shell's start.
		s.startSpare(ctx, create)
	}
	ctx.ReenterAfter(f, func(res any, err error) {
		cr, _ := res.(*terminal.CreateResult)
		s.opened(ctx, toolCallID, cr, err)
	})
}

// prepare makes the file the command's output will be kept in while the command
// starts and runs, off the mailbox, so that keeping it after the command ends is one
// write and one fsync (persistence.PrepareTerminal).
func (s *session) prepare(r *commandRun) {
	r.prepared = make(chan struct{})
	store, logger, sessionURI, chatURI, key := s.store, s.cfg.Logger, s.uri, r.chat.uri, r.toolCallID
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer close(r.prepared)
		if err := store.PrepareTerminal(sessionURI, chatURI, key); err != nil {
			// Keeping the output then makes its file whole, as it would unprepared.
			logger.Debug("a command's output file could not be prepared", "session", sessionURI, "key", key, "err", err)
		}
	}()
}

// opened types the command once its terminal is listed (it runs inside the actor,
// as ReenterAfter's continuation), or fails the call when the terminal did not start.
func (s *session) opened(ctx actor.Context, toolCallID string, res *terminal.CreateResult, err error) {
	r := s.findRun(toolCallID)
	if r == nil {
		return
	}
	if err != nil || res == nil || res.Err != nil {
		reason := "the terminal did not start"
		if res != nil && res.Err != nil {
			reason = res.Err.Message
		} else if err != nil {
			reason = err.Error()
		}
		s.finish(ctx, r, commandcall.Ending{How: commandcall.Failed, Failure: errors.New(reason)})
		return
	}
	r.steps.listed = time.Now()
	r.isPty = res.IsPty
	if r.isPty && r.create != nil {
		// The shell this command waited for has started: a spare for the next.
		s.startSpare(ctx, r.create)
	}
	r.marks = res.Detection
	s.chatAction(r.chat, messages.ChatToolCallContentChangedAction{TurnID: r.turnID, ToolCallID: r.toolCallID,
		Content: []messages.TerminalContent{commandcall.Block(r.terminal, r.isPty)}})
	// A leading space keeps the command out of a POSIX shell's history.
	line := " " + r.command
	owed := !r.marks && res.Pid > 0 && integration.SentinelsOwed
	if !r.marks && !owed {
		line += "\n " + integration.SentinelEcho(r.sentinel) // the space: out of the history too
	}
	r.typed = true
	w := &terminal.Write{URI: r.terminal, Data: line + "\r"}
	if owed && !r.isPty {
		w.Written = ctx.Self()
	}
	ctx.Send(s.root, w)
	if owed {
		s.oweSentinel(ctx, r, res.Pid)
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	timeout := s.cfg.CommandTimeout
	r.timer = time.AfterFunc(timeout, func() { system.Root.Send(self, &runTimedOut{toolCallID: r.toolCallID}) })
	if r.isPty {
		fq := system.Root.RequestFuture(s.root, &terminal.ScreenQuery{URI: r.terminal}, channel.RequestTimeout)
		go func() {
			res, err := fq.Result()
			info, _ := res.(*terminal.ScreenInfo)
			if err != nil || info == nil || !info.IsPty {
				return
			}
			select {
			case <-info.WhenAltBuffer:
				system.Root.Send(self, &runAltScreen{toolCallID: r.toolCallID})
			case <-r.stopAlt:
			}
		}()
	}
}

// endRun finishes the command with that tool call id, unless it has finished.
func (s *session) endRun(ctx actor.Context, toolCallID string, end commandcall.Ending) {
	if r := s.findRun(toolCallID); r != nil {
		s.finish(ctx, r, end)
	}
}

// findRun is the command with that tool call id, in any chat, while it runs.
func (s *session) findRun(id string) *commandRun {
	for _, c := range s.chats {
		if r := c.runs[id]; r != nil && !r.done {
			return r
		}
	}
	return nil
}

// terminalEvent reads a command's terminal as a client reads it.
func (s *session) terminalEvent(ctx actor.Context, m *terminal.Event) {
	chatURI, key, ok := toolterm.Parse(m.URI)
	if !ok {
		return
	}
	c := s.chats[chatURI]
	if c == nil {
		return
	}
	r := c.runs[key]
	if r == nil || r.done {
		if r != nil {
			r.atPrompt = r.atPrompt && !usedBy(m.Action)
		} else {
			if usedBy(m.Action) {
				s.shells.Used(m.URI)
			}
		}
		return
	}
	a := m.Action
	switch a.Type {
	case messages.TerminalData:
		if !r.typed || a.Data == nil {
			return
		}
		if r.steps.executed.IsZero() && !r.marks {
			r.steps.executed = time.Now()
		}
		before := r.output.Len()
		r.output.WriteString(*a.Data)
		r.owed.Output(r.output.String())
		if !r.marks {
			if code, ok := integration.SentinelCodeSince(r.output.String(), before, r.sentinel); ok {
				s.finish(ctx, r, commandcall.Exited(code))
			}
		}
	case messages.TerminalCommandExecuted:
		if r.marks && r.typed && r.commandID == "" {
			r.commandID = a.CommandID
			r.output.Reset()
			r.steps.executed = time.Now()
		}
	case messages.TerminalCommandFinished:
		if r.marks && r.commandID != "" && a.CommandID == r.commandID {
			code := 0
			if a.ExitCode != nil {
				code = *a.ExitCode
			}
			s.finish(ctx, r, commandcall.Exited(code))
		}
	case messages.TerminalExited:
		s.finish(ctx, r, commandcall.Ending{How: commandcall.ShellExited})
	case messages.TerminalClaimed:
		if a.Claim != nil && a.Claim.Kind == messages.ClaimSession && a.Claim.Session == s.uri && a.Claim.ToolCallID == "" {
			s.finish(ctx, r, commandcall.Ending{How: commandcall.InBackground, Success: true})
		}
	}
}

// outputRead is what the command's terminal printed once it was typed, as the run
// read it.
func (r *commandRun) outputRead() commandcall.Output {
	return commandcall.Output{Raw: r.output.String(), Marks: r.marks, Command: r.command, Sentinel: r.sentinel}
}

// finish completes a command's tool call and its turn, however it ended.
func (s *session) finish(ctx actor.Context, r *commandRun, end commandcall.Ending) {
	if r.done {
		return
	}
	r.done = true
	r.atPrompt = end.Failure == nil && end.Exit != nil
	r.steps.finished = time.Now()
	if r.timer != nil {
		r.timer.Stop()
	}
	r.owed.Stop()
	close(r.stopAlt)
	c := r.chat
	result := end.Result(commandcall.Block(r.terminal, r.isPty), r.typed, r.outputRead())
	s.chatAction(c, messages.ChatToolCallCompleteAction{TurnID: r.turnID, ToolCallID: r.toolCallID, Result: result})
	anchor := c.lastTurn
	c.lastTurn = r.turnID
	// The turn completes once it is kept (turnKept): a turn a client was told is
	// complete survives the host being killed right after.
	s.keep(ctx, r, anchor, result, end.Exit)
}

// keeping reports whether the turn's command has ended and its turn is being kept.
func (c *chat) keeping(turnID string) bool {
	for _, r := range c.runs {
		if r.turnID == turnID && r.done {
			return true
		}
	}
	return false
}

// turnKept completes a command's turn once what it printed and the turn itself are
// on disk, and starts the next queued message.
func (s *session) turnKept(ctx actor.Context, m *turnKept) {
	c := s.chats[m.run.chat.uri]
	if c == nil || c != m.run.chat {
		return // the chat was disposed meanwhile
	}
	r := m.run
	r.steps.snapshot, r.steps.kept = m.snapshot, m.kept
	// What the run read is dropped with it: the chat keeps the turn, the store its
	// output, and the shell its terminal.
	delete(c.runs, r.toolCallID)
	if r.atPrompt {
		s.shellAtPrompt(ctx, c, r.terminal)
	}
	s.chatAction(c, messages.ChatTurnCompleteAction{TurnID: r.turnID, Duration: time.Since(r.started).Milliseconds()})
	if c.busy == r.turnID {
		c.busy = ""
	}
	if m.whole && s.store.Keeps() {
		// On disk whole, it can come back from there: the chat may let it go.
		c.window.Kept(r.turnID)
		s.letGo(c)
	}
	s.logSteps(r)
	s.drainQueue(ctx, c)
}

// logSteps says at debug level where a command's turn spent its time, each step
// from the one before: its shell starting and printing (listed), the command
// starting once typed (executed), running (finished), its scrollback read back
// (snapshot), its output and turn written (kept), and its completion sent.
func (s *session) logSteps(r *commandRun) {
	if !s.cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	st := r.steps
	step := func(from, to time.Time) time.Duration {
		if from.IsZero() || to.IsZero() {
			return 0
		}
		return to.Sub(from)
	}
	s.cfg.Logger.Debug("turn steps", "turn", r.turnID, "spare", st.spare, "total", time.Since(r.started),
		"listed", step(r.started, st.listed), "executed", step(st.listed, st.executed), "finished", step(st.executed, st.finished),
		"snapshot", step(st.finished, st.snapshot), "kept", step(st.snapshot, st.kept), "completed", step(st.kept, time.Now()))
}

// keep records a finished command off the mailbox: what its terminal printed, the
// session's dates and title, and its turn as a local turn of its chat, in that order
// (persistence.KeepTurn), so a host killed at any moment never leaves a turn naming
// output that was never written. The writes of one session go one after another, in
// the order the commands finished, so no turn lands before the turn it is anchored to.
func (s *session) keep(ctx actor.Context, r *commandRun, anchor string, result messages.ToolCallResult, exit *int) {
	raw, _ := json.Marshal(result)
	turn := persistence.LocalTurn{ID: r.turnID, AnchorTurnID: anchor, Text: r.text, StartedAt: r.started, EndedAt: time.Now(),
		ToolCallID: r.toolCallID, TerminalURI: r.terminal, TerminalKey: r.toolCallID, Result: raw, State: persistence.TurnComplete}
	if s.record.FirstStart.IsZero() {
		s.record.FirstStart = r.started
		if !s.record.Renamed && s.record.Title == "" {
			s.record.Title = persistence.TitleFromCommand(r.command)
			s.sessionAction(messages.SessionTitleChangedAction{Title: s.record.Title})
		}
	}
	s.record.LastEnd = turn.EndedAt
	rec := s.record

	// The terminal's scrollback is what is kept of it; should the terminal not answer
	// (it is gone, or the host is closing), what the run read of it is kept instead,
	// so the turn's terminal still opens with the command's whole output.
	var snapshot *actor.Future
	var printed string
	if r.typed {
		snapshot = ctx.RequestFuture(s.root, &terminal.SnapshotQuery{URI: r.terminal}, channel.RequestTimeout)
		printed = r.outputRead().Printed()
	}
	store, logger, sessionURI, chatURI := s.store, s.cfg.Logger, s.uri, r.chat.uri
	uri, isPty, prepared := r.terminal, r.isPty, r.prepared
	before, done := s.lastWrite, make(chan struct{})
	s.lastWrite = done
	self, system := ctx.Self(), ctx.ActorSystem()
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer close(done)
		f := persistence.FinishedTurn{Record: &rec, Turn: turn}
		if snapshot != nil {
			output := printed
			if res, err := snapshot.Result(); err == nil {
				if st, _ := res.(*messages.TerminalState); st != nil {
					output = st.Text()
				}
			}
			f.Terminal = &persistence.RetainedTerminal{URI: uri, Title: commandcall.Title, Output: output, ExitCode: exit, IsPty: isPty,
				Session: sessionURI, Chat: chatURI, ToolCallID: turn.ToolCallID, Saved: time.Now()}
		}
		snapshotAt := time.Now()
		if before != nil {
			<-before
		}
		<-prepared
		err := store.KeepTurn(sessionURI, chatURI, f)
		if err != nil {
			logger.Warn("a command's turn was not wholly kept", "session", sessionURI, "terminal", uri, "err", err)
		}
		system.Root.Send(self, &turnKept{run: r, snapshot: snapshotAt, kept: time.Now(), whole: err == nil})
	}()
}
