package terminal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
	"github.com/termhost/termhost/screen"
)

// Size bounds: a client may ask for any size; the host clamps it to these and says so.
const (
	minCols, maxCols = 2, 1000
	minRows, maxRows = 1, 1000
	DefaultCols      = 80 // the size of a terminal made without one
	DefaultRows      = 24
)

// terminal is one terminal channel. It owns the TerminalState (folded with the
// clients' reducer), the capped scrollback, the subscribers, and supervises the shell
// actor that owns the process.
type terminal struct {
	cfg     Config
	journal *delivery.Journal
	create  *Create
	// configShell is root config's defaultShell when this machine can run it.
	configShell string

	uri        string
	state      messages.TerminalState
	scrollback messages.Scrollback
	subs       map[delivery.Subscriber]bool
	shell      *actor.PID
	usePty     bool

	listed       bool
	createWaiter *actor.PID
	// startErr is why the process could not be started, for the create's answer
	// once the create has reached this actor.
	startErr *messages.Error

	exit       *pty.Exit
	drained    bool
	announced  bool
	disposed   bool
	listTimer  *time.Timer
	drainTimer *time.Timer

	// Under a pseudoterminal: the headless screen (fed in order on its own goroutine)
	// and the shell integration's command tracker. Both nil on pipes.
	scr    *screen.Screen
	feeder *screenFeeder
	modes  *modeTracker
	// queryCarry is the unfinished escape at the end of the last chunk, while the
	// terminal has no screen yet.
	queryCarry string
	tracker    *integration.Tracker

	system *actor.ActorSystem
	// handle is the shell actor's process and input pump; typed input goes to the
	// pump directly (see send), everything else through the shell actor.
	handle *shellHandle
	// watcher is the session that opened this terminal, if one did.
	watcher *actor.PID
}

// NewProps makes the props of a terminal for m, spawned by the root, which it
// reports its row and a failed start to. defaultShell is the root config's, where
// this machine can run it.
func NewProps(cfg Config, m *Create, defaultShell string) *actor.Props {
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		return &terminal{cfg: cfg, journal: cfg.Journal, create: m, configShell: defaultShell, uri: m.URI, subs: map[delivery.Subscriber]bool{}}
	}, actor.WithSupervisor(shellSupervisor()))
}

// shellSupervisor restarts a shell actor that panicked; the new instance re-attaches
// to the same process, which lives in the handle the producer closes over.
func shellSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(reason interface{}) actor.Directive {
		return actor.RestartDirective
	})
}

func (t *terminal) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		t.system = ctx.ActorSystem()
		t.start(ctx)
	case *Create:
		t.createWaiter = ctx.Sender()
		if t.startErr != nil {
			t.reportStartFailure(ctx)
		} else if t.listed {
			t.answerCreate(ctx)
		}
	case *channel.Subscribe:
		if t.startErr != nil {
			// Reached before the host let go of it: there is no terminal to read.
			ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", t.uri)})
			return
		}
		t.scrollback.Settle(&t.state)
		t.subs[m.Sub] = true
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: t.uri, State: t.state.Clone(), FromSeq: t.journal.Current()}, Terminal: ctx.Self()})
	case *channel.Unsubscribe:
		delete(t.subs, m.Sub)
	case *channel.Dispatch:
		t.dispatch(ctx, m)
	case *shellStarted:
		if !t.usePty {
			// A shell on pipes prints nothing until it is given something to run, so it
			// is listed at once (seed: "Who opens one").
			t.list(ctx)
		}
	case *shellOutput:
		t.output(ctx, m.data)
		t.list(ctx)
	case *shellDrained:
		t.drained = true
		t.maybeAnnounceExit(ctx)
	case *shellExited:
		if t.exit == nil {
			e := m.exit
			t.exit = &e
			if !t.drained {
				self := ctx.Self()
				t.drainTimer = time.AfterFunc(t.cfg.DrainGrace, func() { ctx.ActorSystem().Root.Send(self, &drainTimeout{}) })
			}
		}
		t.maybeAnnounceExit(ctx)
	case *shellFailed:
		if !t.disposed && !t.isFolderFailure(m.err) {
			// The process itself could not be started (the shell cannot be executed,
			// no pseudoterminal, no descriptor left): the create fails, and there is
			// no terminal to list.
			t.startErr = messages.Errorf(messages.CodeInternalError, "%s", capitalize(m.err.Error()))
			t.reportStartFailure(ctx)
			return
		}
		// A folder that is not there is a shell that fails to start, not a refusal:
		// the failure is written into the terminal's own output, with exit code 127 as
		// a shell reports a command it cannot run (seed: "Where it runs").
		t.output(ctx, fmt.Sprintf("termhost: %v\r\n", m.err))
		t.exit = &pty.Exit{Code: 127}
		t.drained = true
		t.maybeAnnounceExit(ctx)
	case *drainTimeout:
		if !t.drained {
			t.cfg.Logger.Info("output still open after the shell exited; closing it", "terminal", t.uri, "grace", t.cfg.DrainGrace)
			ctx.Send(t.shell, &shellCloseOutput{})
		}
	case *listTimeout:
		t.list(ctx)
	case *Dispose:
		t.dispose(ctx)
	case *actor.Terminated:
		if t.disposed {
			ctx.Stop(ctx.Self())
		}
	case *actor.Stopping:
		t.stopTimers()
		if t.feeder != nil {
			t.feeder.close()
		}
	case *Kill:
		if t.exit == nil {
			ctx.Send(t.shell, &shellKill{})
		}
	case *Write:
		if t.exit == nil && !t.disposed {
			t.writeInput(ctx, m.Data)
		}
	case *SnapshotQuery:
		t.scrollback.Settle(&t.state)
		st := t.state.Clone()
		ctx.Respond(&st)
	case *childrenQuery:
		ctx.Respond(ctx.Children())
	case *ScreenQuery:
		info := &ScreenInfo{IsPty: t.usePty, WhenAltBuffer: Settled}
		if t.modes != nil {
			info.AltBuffer, info.BracketedPaste, info.WhenAltBuffer = t.modes.alt, t.modes.paste, t.modes.whenAlt
		}
		if m.Text {
			t.ensureScreen(ctx)
			info.Text = t.scr.Text()
		}
		ctx.Respond(info)
	}
}

func (t *terminal) stopTimers() {
	if t.listTimer != nil {
		t.listTimer.Stop()
	}
	if t.drainTimer != nil {
		t.drainTimer.Stop()
	}
}

func (t *terminal) start(ctx actor.Context) {
	m := t.create
	t.usePty = t.cfg.UsePty
	t.watcher = m.Watcher
	t.scrollback.Limit = t.cfg.ScrollbackLimit
	cols, rows, _ := clampSize(m.Cols, m.Rows)
	shellPath := m.Spec.Shell
	if shellPath == "" {
		shellPath = t.configShell
	}
	if shellPath == "" {
		shellPath = t.cfg.DefaultShell
	}
	if shellPath == "" {
		shellPath = pty.DefaultShell()
	}
	dir, dirErr := t.resolveDir(m)
	title := m.Name
	if title == "" {
		title = filepath.Base(shellPath)
	}
	t.state = messages.TerminalState{
		Title:                    title,
		Cols:                     messages.Ptr(cols),
		Rows:                     messages.Ptr(rows),
		Content:                  []messages.ContentPart{},
		Claim:                    m.Claim,
		Lifecycle:                &messages.Lifecycle{Status: messages.StatusRunning},
		SupportsCommandDetection: messages.Ptr(false),
		IsPty:                    messages.Ptr(t.usePty),
	}
	if dir != "" {
		t.state.Cwd = messages.FileURI(dir)
	}
	spec := pty.Spec{
		Shell:               shellPath,
		Command:             m.Spec.Command,
		Args:                m.Spec.Args,
		Dir:                 dir,
		Env:                 m.Spec.Env,
		Cols:                cols,
		Rows:                rows,
		UsePty:              t.usePty,
		PreventShellHistory: m.Spec.PreventShellHistory,
		NonInteractive:      m.Spec.NonInteractive,
	}
	self := ctx.Self()
	if t.usePty {
		t.listTimer = time.AfterFunc(t.cfg.ListTimeout, func() { ctx.ActorSystem().Root.Send(self, &listTimeout{}) })
		t.prepareIntegration(&spec)
	}
	t.handle = &shellHandle{spec: spec, startErr: dirErr, logger: t.cfg.Logger, killGrace: t.cfg.KillGrace, sessions: t.cfg.Sessions,
		input: newInputPump(t.cfg.Logger)}
	t.shell = ctx.Spawn(newShellProps(t.handle, self))
	if t.usePty {
		t.modes = newModeTracker()
	}
}

// ensureScreen makes the headless screen the first time it is needed: a program asked
// the terminal something, or a caller wants the screen's text. It is fed what the
// terminal kept so far (the scrollback), so it stands where a screen fed from the start
// would, within the 200,000-character cap; an idle shell never pays for one.
func (t *terminal) ensureScreen(ctx actor.Context) {
	if t.scr != nil || !t.usePty || t.disposed {
		return
	}
	// The screen's answers to the program's queries (ESC[6n and the like) go back to
	// its input through the shell actor.
	system, shellPID := ctx.ActorSystem(), t.shell
	t.scr = screen.New(*t.state.Cols, *t.state.Rows, func(answer []byte) {
		system.Root.Send(shellPID, &shellWrite{data: answer})
	})
	t.scrollback.Settle(&t.state)
	for _, p := range t.state.Content {
		t.scr.Write([]byte(p.Text()))
	}
	t.feeder = newScreenFeeder(t.scr)
}

// prepareIntegration gives a pseudoterminal's shell its nonce and, for a shell with
// no command, our integration script (seed: "One command, or a shell to sit in"). An
// injection that fails leaves the shell starting as it would have.
func (t *terminal) prepareIntegration(spec *pty.Spec) {
	nonce := integration.NewNonce()
	seq := 0
	t.tracker = integration.NewTracker(nonce, time.Now, func() string {
		seq++
		return fmt.Sprintf("%s#%d", t.uri, seq)
	})
	if spec.Command != "" {
		return
	}
	inj, ok, err := integration.Inject(spec.Shell, spec.ShellArgs, integration.InjectOptions{Nonce: nonce, ZshFolderAsFound: t.cfg.ZshFolderAsFound, Environ: append(os.Environ(), spec.Env...)})
	if err != nil {
		t.cfg.Logger.Warn("shell integration not injected", "terminal", t.uri, "shell", spec.Shell, "err", err)
	}
	if !ok {
		return
	}
	spec.ShellArgs = inj.Args
	spec.Env = append(append([]string(nil), spec.Env...), inj.Env...)
}

// resolveDir decides where the shell starts. A client's terminal opens in the home
// folder when it names none or one that is not a folder here; a terminal a program
// opens (StrictCwd) fails to start instead, with the reason in its output.
func (t *terminal) resolveDir(m *Create) (string, error) {
	if m.Cwd == "" {
		return t.cfg.Home, nil
	}
	dir, err := pty.DirFromURI(m.Cwd)
	if err == nil {
		var fi os.FileInfo
		fi, err = os.Stat(dir)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a folder", dir)
		}
	}
	if err != nil {
		if m.Spec.StrictCwd {
			return dir, fmt.Errorf("cannot start the shell in %s: %w", m.Cwd, err)
		}
		t.cfg.Logger.Info("terminal folder unusable; opening in the home folder", "terminal", m.URI, "cwd", m.Cwd, "err", err)
		return t.cfg.Home, nil
	}
	return dir, nil
}

// clampSize bounds a size a client asked for; a create that names none gets 80x24.
func clampSize(cols, rows int) (int, int, bool) {
	if cols == 0 && rows == 0 {
		return DefaultCols, DefaultRows, false
	}
	return boundSize(cols, rows)
}

func boundSize(cols, rows int) (int, int, bool) {
	c, r := min(max(cols, minCols), maxCols), min(max(rows, minRows), maxRows)
	return c, r, c != cols || r != rows
}

// isFolderFailure reports whether a failed start was the working folder's: one that
// resolveDir refused, or one that went away before the start.
func (t *terminal) isFolderFailure(err error) bool {
	return (t.handle != nil && err == t.handle.startErr) || errors.Is(err, pty.ErrNoDir)
}

// reportStartFailure hands the failed start to the host, which answers the create
// with its error and stops this terminal, once the create has arrived (it may come
// after the failure). The host takes the terminal off its registry before the
// answer goes, so a subscribe sent after it finds no channel. Nothing else happens
// on the terminal meanwhile.
func (t *terminal) reportStartFailure(ctx actor.Context) {
	t.disposed = true
	t.subs = map[delivery.Subscriber]bool{}
	t.stopTimers()
	if t.createWaiter == nil {
		return
	}
	ctx.Send(ctx.Parent(), &StartFailed{Terminal: ctx.Self(), URI: t.uri, Waiter: t.createWaiter, Err: t.startErr})
	t.createWaiter = nil
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// list puts the terminal on the root list, once.
func (t *terminal) list(ctx actor.Context) {
	if t.listed || t.disposed {
		return
	}
	t.listed = true
	if t.listTimer != nil {
		t.listTimer.Stop()
	}
	t.publishRow(ctx)
	t.answerCreate(ctx)
}

func (t *terminal) answerCreate(ctx actor.Context) {
	if t.createWaiter != nil {
		detected := t.tracker != nil && t.tracker.Detected()
		ctx.Send(t.createWaiter, &CreateResult{IsPty: t.usePty, Detection: detected})
		t.createWaiter = nil
	}
}

func (t *terminal) publishRow(ctx actor.Context) {
	if !t.listed || t.disposed {
		return
	}
	info := messages.TerminalInfo{Resource: t.uri, Title: t.state.Title, Claim: t.state.Claim, Lifecycle: t.state.Lifecycle, ExitCode: t.state.ExitCode, Meta: t.state.Meta}
	ctx.Send(ctx.Parent(), &Row{PID: ctx.Self(), Info: info})
}

// apply folds a host action into the state and sends it to every subscriber.
func (t *terminal) apply(a *messages.Action) {
	t.scrollback.Apply(&t.state, a)
	t.broadcast(&messages.Envelope{Channel: t.uri, Action: messages.EncodeAction(a)})
	t.tellWatcher(a)
}

func (t *terminal) tellWatcher(a *messages.Action) {
	if t.watcher != nil && t.system != nil {
		t.system.Root.Send(t.watcher, &Event{URI: t.uri, Action: a})
	}
}

func (t *terminal) broadcast(env *messages.Envelope) {
	if t.disposed {
		return
	}
	frame := t.journal.Stamp(env)
	for s := range t.subs {
		s.Deliver(t.uri, frame)
	}
}

// output takes a chunk the shell printed: the screen is given it first, then the
// integration's marks are taken out of it and each event goes out where its mark
// stood, after the output before it.
func (t *terminal) output(ctx actor.Context, data string) {
	if data == "" || t.disposed {
		return
	}
	if t.modes != nil {
		t.modes.scan(data)
		if t.scr == nil {
			// A query split across two reads is seen whole: the tail from the last
			// ESC is kept for the next chunk.
			probe := t.queryCarry + data
			t.queryCarry = ""
			if i := strings.LastIndexByte(probe, 0x1b); i >= 0 && len(probe)-i < 32 {
				t.queryCarry = probe[i:]
			}
			if asksTheTerminal(probe) {
				t.ensureScreen(ctx)
			}
		}
	}
	if t.feeder != nil {
		t.feeder.feed([]byte(data))
	}
	if t.tracker == nil {
		t.apply(&messages.Action{Type: messages.TerminalData, Data: &data})
		return
	}
	for _, a := range t.tracker.Output(data) {
		t.apply(&a)
	}
}

func (t *terminal) maybeAnnounceExit(ctx actor.Context) {
	if t.announced || t.exit == nil || !t.drained {
		return
	}
	t.announced = true
	if t.drainTimer != nil {
		t.drainTimer.Stop()
	}
	// A mark still held when the shell exits goes out as output.
	if t.tracker != nil && !t.disposed {
		for _, a := range t.tracker.Flush() {
			t.apply(&a)
		}
	}
	code := t.exit.Code
	a := &messages.Action{Type: messages.TerminalExited, ExitCode: &code}
	if t.exit.Signal != "" {
		a.Meta = map[string]any{"signal": t.exit.Signal}
		if t.state.Meta == nil {
			t.state.Meta = map[string]any{}
		}
		t.state.Meta["signal"] = t.exit.Signal
	}
	t.apply(a)
	if t.disposed {
		return
	}
	// An exit before anything was printed lists the terminal too.
	if !t.listed {
		t.list(ctx)
	} else {
		t.publishRow(ctx)
	}
}

func (t *terminal) reject(m *channel.Dispatch, reason string) {
	t.journal.Reject(m.Sub, t.uri, m.Raw, m.Origin, reason)
}

func (t *terminal) dispatch(ctx actor.Context, m *channel.Dispatch) {
	if t.disposed {
		// Gone for its clients: as the host ignores a dispatch to a channel it no
		// longer lists, so does a terminal reached directly while it winds down.
		return
	}
	a := m.Action
	if !messages.ClientDispatchable(a.Type) {
		if strings.HasPrefix(a.Type, "terminal/") {
			t.reject(m, fmt.Sprintf("%s is sent by the host, not dispatched by a client", a.Type))
		} else {
			t.reject(m, fmt.Sprintf("%s is not an action of a terminal", a.Type))
		}
		return
	}
	raw := m.Raw
	switch a.Type {
	case messages.TerminalInput:
		if a.Data == nil {
			t.reject(m, "terminal/input needs data")
			return
		}
		if t.exit != nil {
			t.reject(m, "the terminal's process has exited; input is dropped")
			return
		}
		t.writeInput(ctx, *a.Data)
	case messages.TerminalResized:
		if a.Cols == nil || a.Rows == nil {
			t.reject(m, "terminal/resized needs cols and rows")
			return
		}
		cols, rows, clamped := boundSize(*a.Cols, *a.Rows)
		if clamped {
			a = &messages.Action{Type: a.Type, Cols: &cols, Rows: &rows, Meta: map[string]any{
				"termhost": fmt.Sprintf("size %dx%d clamped to %dx%d (columns %d to %d, rows %d to %d)", *m.Action.Cols, *m.Action.Rows, cols, rows, minCols, maxCols, minRows, maxRows),
			}}
			raw = messages.EncodeAction(a)
		}
		if t.exit == nil {
			ctx.Send(t.shell, &shellResize{cols, rows})
		}
		t.scr.Resize(cols, rows)
	case messages.TerminalClaimed:
		if a.Claim == nil {
			t.reject(m, "terminal/claimed needs a claim")
			return
		}
		if err := a.Claim.Validate(); err != nil {
			t.reject(m, err.Error())
			return
		}
		if reason := t.claimRefusal(m.Origin.ClientID, *a.Claim); reason != "" {
			t.reject(m, reason)
			return
		}
	case messages.TerminalTitleChanged:
		if a.Title == nil {
			t.reject(m, "terminal/titleChanged needs a title")
			return
		}
	}
	t.scrollback.Apply(&t.state, a)
	origin := m.Origin
	t.broadcast(&messages.Envelope{Channel: t.uri, Action: raw, Origin: &origin})
	t.tellWatcher(a)
	if a.Type == messages.TerminalClaimed || a.Type == messages.TerminalTitleChanged {
		t.publishRow(ctx)
	}
}

// claimRefusal says why a client may not set this claim, or "" if it may. A client
// holds a terminal whose client claim names it (or names nobody); a session's
// terminal can only be handed on within that session, as backgrounding it does.
func (t *terminal) claimRefusal(clientID string, next messages.Claim) string {
	cur := t.state.Claim
	switch cur.Kind {
	case messages.ClaimClient:
		if cur.ClientID == "" || cur.ClientID == clientID {
			return ""
		}
		return fmt.Sprintf("the terminal is claimed by client %s", cur.ClientID)
	case messages.ClaimSession:
		if next.Kind == messages.ClaimSession && next.Session == cur.Session {
			return ""
		}
		return fmt.Sprintf("the terminal is claimed by session %s", cur.Session)
	}
	return ""
}

// writeInput sends typed input to the process. Pipes have no line discipline, so the
// host does a terminal's two jobs there: ^C becomes SIGINT to the child's process
// group, and Enter's \r becomes \n as ICRNL would (seed: "What a client sees").
func (t *terminal) writeInput(ctx actor.Context, data string) {
	if t.usePty {
		if t.tracker != nil {
			t.tracker.Input(data)
		}
		t.send([]byte(data))
		return
	}
	var b strings.Builder
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case 0x03:
			if b.Len() > 0 {
				t.send([]byte(b.String()))
				b.Reset()
			}
			ctx.Send(t.shell, &shellInterrupt{})
		case '\r':
			b.WriteByte('\n')
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 0 {
		t.send([]byte(b.String()))
	}
}

// send writes input to the process through its pump, skipping the shell actor's
// mailbox: the pump keeps the order of everything pushed to it, from before the
// process started too.
func (t *terminal) send(b []byte) {
	t.handle.input.push(b)
}

func (t *terminal) dispose(ctx actor.Context) {
	if t.disposed {
		return
	}
	t.disposed = true
	t.subs = map[delivery.Subscriber]bool{}
	t.stopTimers()
	t.answerCreate(ctx)
	ctx.Watch(t.shell)
	// The shell actor ends the process group (SIGHUP, then SIGKILL after the grace),
	// reaps it and stops; its Terminated stops this terminal.
	ctx.Send(t.shell, &shellTerminate{})
}
