package shells

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/agenttools"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
)

// Options are what every session's service shares. Zero values mean the defaults named.
type Options struct {
	// Store keeps what a shell printed once it exits or is shut down; nil keeps nothing.
	Store *persistence.Store
	// DefaultShell is the shell a tool opens: $SHELL, else /bin/sh, when empty.
	DefaultShell string
	// Window is how long a command call waits before the command goes on in the
	// background (60 s); PollWindow the same for a command that sleeps and polls (5 s).
	Window, PollWindow time.Duration
	// MaxShells is how many shells one session keeps (32): past it, the least
	// recently used exited ones go.
	MaxShells int
	// LogChars is how much of each shell's output is held for bash_output (1,000,000).
	LogChars int
	// Policy is the monitors' delivery rules.
	Policy agenttools.Policy
	// Settle is how long a shell must be quiet before a write's answer says what it
	// printed in reply (300 ms); SettleMax bounds that wait (3 s).
	Settle, SettleMax time.Duration
	// KillGrace is how long kill_bash waits after SIGTERM before SIGKILL (5 s).
	KillGrace time.Duration
	// InputPoll is how often a command a call waits on is looked at, once it has
	// printed nothing since the last look, for a foreground job blocked reading the
	// terminal (pty.ForegroundInput): two looks in a row that find it answer the
	// call at once, as the window's end would, with what the command printed (the
	// question it asks). 200 ms; negative: never looked at (the window decides).
	InputPoll time.Duration
	// DetectWait is how long a new pseudoterminal shell's first command waits for
	// the shell to mark its prompt (2 s); past it, commands end by a sentinel.
	DetectWait time.Duration
	Logger     *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 60 * time.Second
	}
	if o.PollWindow <= 0 {
		o.PollWindow = 5 * time.Second
	}
	if o.MaxShells <= 0 {
		o.MaxShells = 32
	}
	if o.LogChars <= 0 {
		o.LogChars = 1_000_000
	}
	if o.Settle <= 0 {
		o.Settle = 300 * time.Millisecond
	}
	if o.SettleMax <= 0 {
		o.SettleMax = 3 * time.Second
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 5 * time.Second
	}
	if o.InputPoll == 0 {
		o.InputPoll = 200 * time.Millisecond
	}
	if o.DetectWait <= 0 {
		o.DetectWait = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Default monitor timeouts.
const (
	DefaultMonitorTimeout = 5 * time.Minute
	MaxMonitorTimeout     = time.Hour
)

// Default size of a shell a tool opens.
const (
	DefaultCols = 120
	DefaultRows = 40
)

// NewProps is the session's factory for its service (session.Config.ToolService).
func NewProps(o Options) func(session.ToolServiceSpec) *actor.Props {
	o = o.withDefaults()
	return func(spec session.ToolServiceSpec) *actor.Props {
		return actor.PropsFromProducer(func() actor.Actor {
			return &service{opts: o, spec: spec, shells: map[string]*shell{}, byURI: map[string]*shell{}, gone: map[string]*shell{}, sinks: map[Sink]string{}, monitors: map[string]*monitor{}}
		})
	}
}

// service is one session's shells.
type service struct {
	opts Options
	spec session.ToolServiceSpec
	self *actor.PID

	shells map[string]*shell
	byURI  map[string]*shell // the same shells by terminal URI, for their events
	order  []string          // shell ids, oldest first
	// gone are shells shut down or pruned, held for calls that still name them.
	gone      map[string]*shell
	goneOrder []string
	monitors  map[string]*monitor
	seq       int // numbers commands and monitors
	shellSeq  int // numbers shells
	// sinks are the attached agent connections, each with its chat.
	sinks map[Sink]string
	// unheard are wakes that came while no sink was attached, for the next to attach.
	unheard []WakeNotice
	closing bool
	// ownWrites counts the outputs on their way to the store when the session gave
	// no group of its own (spec.Writes), which it waits for once the service stops.
	ownWrites sync.WaitGroup
}

// writes is the group a write to the store joins: the session's, so that its
// shutdown and dispose wait for what its shells printed to be kept.
func (s *service) writes() *sync.WaitGroup {
	if s.spec.Writes != nil {
		return s.spec.Writes
	}
	return &s.ownWrites
}

// shell is one terminal a tool opened.
type shell struct {
	id, uri, chat string
	opened        bool // listed: commands may be typed
	isPty, marks  bool
	cols, rows    int
	pid           int // the shell's process, 0 when not known
	cwd           string
	lastUsed      time.Time
	by            string // the person whose call opened it

	log     strings.Builder // the output held for reads, from logStart on
	logBase int             // bytes dropped from the front of log
	readAt  int             // absolute offset of the last read's end
	// shownAt is the absolute offset up to which some answer has shown the agent
	// what the shell printed (a read, a write's answer, a command's answer).
	shownAt int

	cmd    *command // the command running, nil when idle
	last   *command // the newest command that ended
	exited bool
	exit   *int
	kept   bool
	gone   bool // shut down: off the list, its output still readable

	// writer waits for the shell to quiet down after a write.
	writer *settle
}

// command is one command typed into a shell.
type command struct {
	seq       int
	line      string
	family    Family
	by        string
	started   time.Time
	sentinel  string
	commandID string
	typed     bool
	raw       strings.Builder
	done      bool
	exit      *int
	how       string // how it ended, when not by its own exit
	// waiter is the call waiting for it, nil once answered.
	waiter *actor.PID
	timer  *time.Timer
	// outBytes counts every byte the command printed (raw is trimmed); lookedAt is
	// the count when the foreground was last looked at, and readingLooks how many
	// looks in a row found it reading the terminal.
	outBytes, lookedAt int
	readingLooks       int
	// lookEvery is the gap before the next look; toldWaiting is outBytes when the
	// agent was last told the command waits for input (-1: never), so one quiet
	// question is told once.
	// droppedLines and droppedBytes are what raw let go of its start.
	droppedLines, droppedBytes int
	lookEvery                  time.Duration
	lookTimer                  *time.Timer
	toldWaiting                int
	// owed is the sentinel not typed yet, until the shell reads its terminal
	// again (sentinel.go).
	owed *integration.OwedSentinel
	// background: the command outlives its call (async, run_in_background, or past
	// its wait); its end wakes the session. work is its background row's id.
	background bool
	work       string
}

// marked reports whether the command ends at the shell's marks: typed into a shell
// with shell integration, it has no sentinel.
func (c *command) marked() bool { return c.typed && c.sentinel == "" }

// executed reports whether the shell marked the command's start: what it prints
// from then on is the command's, not the prompt's or the typed line's. A command
// that ends by its sentinel is never marked.
func (c *command) executed() bool { return c.commandID != "" }

// settle is a write waiting for the shell to answer.
type settle struct {
	waiter  *actor.PID
	from    int // absolute log offset at the write
	since   time.Time
	lastOut time.Time
	family  Family
}

// Messages the service sends itself from timers.
type (
	waitOver struct {
		shell string
		seq   int
	}
	deadlineOver struct {
		shell string
		seq   int
	}
	settleCheck struct{ shell string }
	monitorDue  struct{ id string }
	monitorEnd  struct{ id string }
	detectOver  struct{ shell string }
	// inputLook is time to look at a command's foreground job; inputLooked is
	// what the look found, with the command's printed count when it began.
	inputLook struct {
		shell string
		seq   int
	}
	inputLooked struct {
		shell   string
		seq     int
		printed int
		wait    pty.InputWait
	}
	// opened is a shell's terminal answering its create.
	opened struct {
		shell string
		res   *terminal.CreateResult
		err   error
	}
)

// Receive handles the service's messages.
func (s *service) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.self = ctx.Self()
	case *Run:
		s.acted(m.Chat)
		s.run(ctx, m)
	case *Read:
		s.acted(m.Chat)
		s.read(ctx, m)
	case *Write:
		s.acted(m.Chat)
		s.write(ctx, m)
	case *Resize:
		s.acted(m.Chat)
		s.resize(ctx, m)
	case *Kill:
		s.acted(m.Chat)
		s.kill(ctx, m)
	case *List:
		ctx.Respond(&Result{Shells: s.list()})
	case *Watch:
		s.acted(m.Chat)
		s.watch(ctx, m)
	case *Stop:
		s.acted(m.Chat)
		s.stop(ctx, m)
	case *session.StopBackgroundWork:
		s.stopWork(ctx, m)
	case *Attach:
		s.attach(m)
	case *Detach:
		delete(s.sinks, m.Sink)
	case *opened:
		s.openedShell(ctx, m)
	case *terminal.Event:
		s.event(ctx, m)
	case *waitOver:
		s.waitOver(ctx, m)
	case *deadlineOver:
		s.deadlineOver(ctx, m)
	case *settleCheck:
		s.settleCheck(ctx, m)
	case *monitorDue:
		s.monitorDue(ctx, m.id)
	case *monitorEnd:
		s.monitorTimedOut(ctx, m.id)
	case *inputLook:
		s.inputLook(ctx, m)
	case *inputLooked:
		s.inputLooked(ctx, m)
	case *integration.SentinelDue:
		s.sentinelDue(m)
	case *integration.SentinelLooked:
		s.sentinelLooked(ctx, m)
	case *terminal.Written:
		s.written(m)
	case *detectOver:
		if sh := s.shells[m.shell]; sh != nil {
			s.ready(ctx, sh)
		}
	case *actor.Stopping:
		s.stopping(ctx)
	}
}

// refused is the tool error for a grant the caller does not hold.
func refused(p auth.Principal, grant string) error {
	return errors.New(p.Refusal(grant))
}

// shellKey is what a shell's output is kept under in its chat, and its URI names
// it after its chat and that key, as a `!` command's terminal is named: a subscribe
// once the shell is gone is answered from what was kept (session.retained).
func shellKey(id string) string { return toolterm.AgentShellKeyPrefix + id }

func shellURI(chat, id string) string { return toolterm.URI(chat, shellKey(id)) }

// find resolves a shell id, or the chat's most recently used shell for "".
func (s *service) find(chat, id string) (*shell, error) {
	if id != "" {
		if sh := s.shells[id]; sh != nil {
			return sh, nil
		}
		if sh := s.gone[id]; sh != nil {
			return sh, nil
		}
		// The ids are named here: the PTY family has no tool that lists them.
		ids := make([]string, 0, len(s.shells))
		for id := range s.shells {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("no shell %q: this session has no shell yet", id)
		}
		// sh-2 before sh-10.
		slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
		return nil, fmt.Errorf("no shell %q in this session; its shells are %s", id, strings.Join(ids, ", "))
	}
	var best *shell
	for _, sh := range s.shells {
		if sh.chat == chat && (best == nil || sh.lastUsed.After(best.lastUsed)) {
			best = sh
		}
	}
	if best == nil {
		return nil, errors.New("this chat has no shell yet: run a command with bash first")
	}
	return best, nil
}

// idleShell is the chat's most recently used shell that is open, alive and idle.
func (s *service) idleShell(chat string) *shell {
	var best *shell
	for _, sh := range s.shells {
		if sh.chat != chat || sh.exited || sh.cmd != nil || !sh.opened {
			continue
		}
		if best == nil || sh.lastUsed.After(best.lastUsed) {
			best = sh
		}
	}
	return best
}

// open asks the root for a new shell of the chat; commands wait on it until listed.
func (s *service) open(ctx actor.Context, c Caller, cols, rows int) (*shell, error) {
	if !c.Principal.Can(auth.GrantTerminalCreate) {
		return nil, refused(c.Principal, auth.GrantTerminalCreate)
	}
	if s.closing {
		return nil, errors.New(session.ClosingHost)
	}
	if c.Chat == "" {
		return nil, errors.New("this connection is bound to no chat")
	}
	s.prune(ctx)
	if len(s.shells) >= s.opts.MaxShells {
		return nil, fmt.Errorf("this session has %d shells open, its limit: end one with kill_bash or bash_shutdown", len(s.shells))
	}
	if cols <= 0 {
		cols = DefaultCols
	}
	if rows <= 0 {
		rows = DefaultRows
	}
	s.shellSeq++
	id := "sh-" + strconv.Itoa(s.shellSeq)
	sh := &shell{id: id, uri: shellURI(c.Chat, id), chat: c.Chat, cols: cols, rows: rows, lastUsed: time.Now(), by: c.Principal.User}
	s.shells[id] = sh
	s.byURI[sh.uri] = sh
	s.order = append(s.order, id)
	cwd := ""
	if len(s.spec.WorkingDirectories) > 0 {
		cwd = s.spec.WorkingDirectories[0]
	}
	sh.cwd = cwd
	shellPath := s.opts.DefaultShell
	if shellPath == "" {
		shellPath = pty.DefaultShell()
	}
	create := &terminal.Create{
		URI:     sh.uri,
		Claim:   messages.Claim{Kind: messages.ClaimSession, Session: s.spec.Session, Chat: c.Chat, ToolCallID: c.ToolCallID},
		Name:    "Agent shell " + id,
		Cwd:     cwd,
		Cols:    cols,
		Rows:    rows,
		Spec:    terminal.Spec{Shell: shellPath, PreventShellHistory: true, NonInteractive: true},
		Watcher: ctx.Self(),
	}
	f := ctx.RequestFuture(s.spec.Root, create, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		cr, _ := res.(*terminal.CreateResult)
		s.openedShell(ctx, &opened{shell: id, res: cr, err: err})
	})
	return sh, nil
}

// openedShell types the command waiting on a shell once it is listed, or fails it.
func (s *service) openedShell(ctx actor.Context, m *opened) {
	sh := s.shells[m.shell]
	if sh == nil {
		return
	}
	if m.err != nil || m.res == nil || m.res.Err != nil {
		reason := "the shell did not start"
		if m.res != nil && m.res.Err != nil {
			reason = m.res.Err.Message
		} else if m.err != nil {
			reason = m.err.Error()
		}
		if c := sh.cmd; c != nil && c.waiter != nil {
			ctx.Send(c.waiter, &Result{Err: errors.New(reason)})
			c.waiter = nil
		}
		delete(s.shells, sh.id)
		delete(s.byURI, sh.uri)
		s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == sh.id })
		return
	}
	sh.isPty, sh.marks, sh.pid = m.res.IsPty, m.res.Detection, m.res.Pid
	s.opts.Logger.Debug("agent shell opened", "session", s.spec.Session, "shell", sh.id, "pty", sh.isPty, "marks", sh.marks)
	if sh.isPty && !sh.marks {
		// A shell with integration marks its first prompt a moment after it first
		// prints. A command typed before that would end by a sentinel line typed
		// after it, which a command reading the terminal (read, a REPL) takes as its
		// own input; so the first command waits for the marks, or for DetectWait.
		s.after(ctx, s.opts.DetectWait, &detectOver{shell: sh.id})
		return
	}
	s.ready(ctx, sh)
}

// ready lets commands into a shell, typing the one waiting.
func (s *service) ready(ctx actor.Context, sh *shell) {
	if sh.opened {
		return
	}
	sh.opened = true
	s.opts.Logger.Debug("agent shell ready", "session", s.spec.Session, "shell", sh.id, "marks", sh.marks, "waiting", sh.cmd != nil)
	if sh.cmd != nil {
		s.typeCommand(ctx, sh, sh.cmd)
	}
}

// prune lets the least recently used exited shells go while the session is at its limit.
func (s *service) prune(ctx actor.Context) {
	for len(s.shells) >= s.opts.MaxShells {
		var oldest *shell
		for _, sh := range s.shells {
			if sh.exited && (oldest == nil || sh.lastUsed.Before(oldest.lastUsed)) {
				oldest = sh
			}
		}
		if oldest == nil {
			return
		}
		s.forget(ctx, oldest)
	}
}

// forget disposes a shell's terminal (its output kept first) and drops it; the
// channel is closed once its output is kept and its terminal is off the list.
func (s *service) forget(ctx actor.Context, sh *shell) <-chan struct{} {
	kept := s.keep(ctx, sh)
	disposed := ctx.RequestFuture(s.spec.Root, &terminal.Dispose{URI: sh.uri}, channel.RequestTimeout)
	done := make(chan struct{})
	go func() {
		<-kept
		_, _ = disposed.Result()
		close(done)
	}()
	for _, m := range s.monitors {
		if m.shell == sh.id {
			s.endMonitor(ctx, m, "its shell was shut down")
		}
	}
	delete(s.shells, sh.id)
	delete(s.byURI, sh.uri)
	s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == sh.id })
	// A call that still names it is answered from what it printed; the newest
	// MaxShells of them are held.
	sh.gone, sh.exited = true, true
	s.gone[sh.id] = sh
	s.goneOrder = append(s.goneOrder, sh.id)
	if len(s.goneOrder) > s.opts.MaxShells {
		delete(s.gone, s.goneOrder[0])
		s.goneOrder = s.goneOrder[1:]
	}
	return done
}

// keep puts what the shell printed in the store, once, off the mailbox; the channel
// is closed once it is there (or there was nothing to keep).
func (s *service) keep(ctx actor.Context, sh *shell) <-chan struct{} {
	done := make(chan struct{})
	store := s.opts.Store
	if store == nil || sh.kept || !sh.opened {
		close(done)
		return done
	}
	sh.kept = true
	f := ctx.RequestFuture(s.spec.Root, &terminal.SnapshotQuery{URI: sh.uri}, channel.RequestTimeout)
	rec := persistence.RetainedTerminal{URI: sh.uri, Title: "Agent shell " + sh.id, ExitCode: sh.exit, IsPty: sh.isPty,
		Session: s.spec.Session, Chat: sh.chat, ToolCallID: shellKey(sh.id)}
	sessionURI, logger := s.spec.Session, s.opts.Logger
	writes := s.writes()
	writes.Add(1)
	go func() {
		defer writes.Done()
		defer close(done)
		res, err := f.Result()
		st, _ := res.(*messages.TerminalState)
		if err != nil || st == nil {
			return
		}
		rec.Output, rec.Saved = st.Text(), time.Now()
		if err := store.SaveTerminal(sessionURI, rec.Chat, rec.ToolCallID, rec); err != nil {
			logger.Warn("an agent shell's output was not kept", "session", sessionURI, "terminal", rec.URI, "err", err)
		}
	}()
	return done
}

// list is every shell of the session, oldest first.
func (s *service) list() []ShellInfo {
	out := make([]ShellInfo, 0, len(s.order))
	for _, id := range s.order {
		sh := s.shells[id]
		info := ShellInfo{ID: sh.id, Terminal: sh.uri, Chat: sh.chat, Running: sh.cmd != nil, Exited: sh.exited, ExitCode: sh.exit,
			Cwd: sh.cwd, Cols: sh.cols, Rows: sh.rows}
		if sh.cmd != nil {
			info.Command = sh.cmd.line
		}
		out = append(out, info)
	}
	return out
}

// status is one line on where a shell stands.
func (s *service) status(sh *shell) string {
	switch {
	case sh.gone:
		return fmt.Sprintf("[%s: shut down; this is what it printed]", sh.id)
	case sh.exited && sh.exit != nil:
		return fmt.Sprintf("[%s: the shell exited with code %d]", sh.id, *sh.exit)
	case sh.exited:
		return fmt.Sprintf("[%s: the shell exited]", sh.id)
	case sh.cmd != nil:
		return fmt.Sprintf("[%s: running `%s` for %s]", sh.id, firstLine(sh.cmd.line), time.Since(sh.cmd.started).Round(time.Second))
	case sh.last != nil && sh.last.exit != nil:
		return fmt.Sprintf("[%s: idle; `%s` exited with code %d]", sh.id, firstLine(sh.last.line), *sh.last.exit)
	default:
		return fmt.Sprintf("[%s: idle]", sh.id)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// event reads a shell's terminal as a client does.
func (s *service) event(ctx actor.Context, m *terminal.Event) {
	sh := s.byURI[m.URI]
	if sh == nil {
		return
	}
	a := m.Action
	switch a.Type {
	case messages.TerminalData:
		if a.Data == nil {
			return
		}
		s.output(ctx, sh, *a.Data)
	case messages.TerminalCommandDetectionAvailable:
		// A command already typed with its sentinel still ends by it; the next ones
		// end at the marks.
		if sh.cmd == nil || !sh.cmd.typed {
			sh.marks = true
		}
		s.ready(ctx, sh)
	case messages.TerminalCommandExecuted:
		if c := sh.cmd; c != nil && sh.marks && c.typed && c.sentinel == "" && c.commandID == "" {
			c.commandID = a.CommandID
			c.raw.Reset()
		}
	case messages.TerminalCommandFinished:
		if c := sh.cmd; c != nil && c.commandID != "" && a.CommandID == c.commandID {
			code := 0
			if a.ExitCode != nil {
				code = *a.ExitCode
			}
			s.ended(ctx, sh, &code, "")
		}
	case messages.TerminalCwdChanged:
		if a.Cwd != nil && *a.Cwd != "" {
			sh.cwd = *a.Cwd
		}
	case messages.TerminalResized:
		if a.Cols != nil && a.Rows != nil {
			sh.cols, sh.rows = *a.Cols, *a.Rows
		}
	case messages.TerminalExited:
		sh.exited = true
		sh.exit = a.ExitCode
		if sh.cmd != nil {
			s.ended(ctx, sh, a.ExitCode, "the shell exited")
		}
		for _, mon := range s.monitors {
			if mon.shell == sh.id {
				s.endMonitor(ctx, mon, s.status(sh))
			}
		}
		s.keep(ctx, sh)
	}
}

// output holds what a shell printed for reads, its command and its monitors.
func (s *service) output(ctx actor.Context, sh *shell, data string) {
	sh.log.WriteString(data)
	if over := sh.log.Len() - s.opts.LogChars; over > sh.log.Len()/4 && over > 0 {
		// Trim in steps, not per write: a flood would otherwise copy the log each time.
		rest := sh.log.String()[over:]
		sh.log.Reset()
		sh.log.WriteString(rest)
		sh.logBase += over
	}
	if sh.writer != nil {
		sh.writer.lastOut = time.Now()
	}
	// The monitors read the output first, while the shell is as it was when the output
	// came: a sentinel in it ends the command below, and the lines before the sentinel
	// are still the command's (and the echo before them still an echo).
	for _, mon := range s.monitors {
		if mon.shell == sh.id {
			s.monitorOutput(ctx, mon, sh, data)
		}
	}
	if c := sh.cmd; c != nil && c.typed {
		before := c.raw.Len()
		c.raw.WriteString(data)
		c.outBytes += len(data)
		s.lookSoon(ctx, sh, c)
		c.owed.Output(c.raw.String())
		if c.sentinel != "" {
			if code, ok := integration.SentinelCodeSince(c.raw.String(), before, c.sentinel); ok {
				s.ended(ctx, sh, &code, "")
			}
		}
		if c := sh.cmd; c != nil && c.waiter != nil && sh.isPty && enteredAltScreen(c.raw.String(), before) {
			s.fullScreen(ctx, sh, c)
		}
		if over := c.raw.Len() - s.opts.LogChars; over > c.raw.Len()/4 && over > 0 {
			// A command's own output is held like the shell's log: a background build
			// printing for hours keeps its last LogChars, which is more than an answer shows.
			// It is let go up to a line's end, so what is held starts a line and the
			// lines let go can be counted for the answer's marker.
			raw := c.raw.String()
			if nl := strings.IndexByte(raw[over:], '\n'); nl >= 0 && nl < 4096 {
				over += nl + 1
			}
			// Counted as an answer shows text: cleaned (a pseudoterminal's CRLF is one
			// byte there). It costs one pass over what goes, once per LogChars/4 printed.
			gone := agenttools.Clean(raw[:over])
			c.droppedLines += strings.Count(gone, "\n")
			c.droppedBytes += len(gone)
			rest := raw[over:]
			c.raw.Reset()
			c.raw.WriteString(rest)
		}
	}
}

// altScreenEnter are the ways a program switches to the alternate screen.
var altScreenEnter = []string{"\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h"}

// enteredAltScreen reports whether raw, from a little before offset from on (a
// sequence may be split across two reads), switches to the alternate screen.
func enteredAltScreen(raw string, from int) bool {
	from = max(from-8, 0)
	for _, seq := range altScreenEnter {
		if strings.Contains(raw[from:], seq) {
			return true
		}
	}
	return false
}

// logEnd is the absolute offset of the end of what the shell printed.
func (sh *shell) logEnd() int { return sh.logBase + sh.log.Len() }

// logSince is the held output from absolute offset from on, and the offset of its end.
func (sh *shell) logSince(from int) (string, int) {
	end := sh.logBase + sh.log.Len()
	if from < sh.logBase {
		from = sh.logBase
	}
	return sh.log.String()[from-sh.logBase:], end
}

// shape shapes text for the family that asked.
func shape(f Family, raw string) string {
	if f == HostFamily {
		return agenttools.HostOutput(raw)
	}
	return agenttools.ForModel(raw, 0, 0)
}

// stopping ends the session's shells with it: each is kept and disposed.
func (s *service) stopping(ctx actor.Context) {
	s.closing = true
	for _, sh := range s.shells {
		if c := sh.cmd; c != nil && c.waiter != nil {
			ctx.Send(c.waiter, &Result{ShellID: sh.id, Err: errors.New("the session ended")})
			c.waiter = nil
		}
		if c := sh.cmd; c != nil && c.timer != nil {
			c.timer.Stop()
		}
		if c := sh.cmd; c != nil && c.lookTimer != nil {
			c.lookTimer.Stop()
		}
		s.keep(ctx, sh)
		ctx.Send(s.spec.Root, &terminal.Dispose{URI: sh.uri})
	}
	for _, m := range s.monitors {
		m.stopTimers()
	}
}

// after sends msg to the service after d.
func (s *service) after(ctx actor.Context, d time.Duration, msg any) *time.Timer {
	self, system := s.self, ctx.ActorSystem()
	return time.AfterFunc(d, func() { system.Root.Send(self, msg) })
}
