package terminal

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/internal/echotrace"
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
// clients' reducer), the capped scrollback and the subscribers, and supervises its
// two children: the shell actor, which owns the process, and the claim actor, which
// decides who holds the terminal.
//
// Its phases are behaviours (actor.Behavior), each a function below: starting (the
// shell actor is starting the process), running, draining (one of the process's two
// ends, its exit status and the end of its output, has come; the other completes
// it), exited (terminal/exited has gone out), and, from any of them, disposed (the
// process is being ended; the actor stops once it is) or failed (the process could
// not be started; the root stops the actor).
type terminal struct {
	cfg      Config
	journal  *delivery.Journal
	create   *Create
	behavior actor.Behavior
	// configShell is root config's defaultShell when this machine can run it.
	configShell string

	uri        string
	state      messages.TerminalState
	scrollback messages.Scrollback
	subs       map[delivery.Subscriber]bool
	usePty     bool

	shell *actor.PID
	// input is the shell actor's input pump. Typed input is pushed into it from
	// here, not sent through the shell actor's mailbox: a keystroke then costs one
	// non-blocking write on this goroutine rather than a hand-off to the shell
	// actor's goroutine first (BenchmarkTerminalKeystrokeEcho measures the round
	// trip). The shell actor still owns the pump: it attaches it to the process,
	// starts its goroutine again after a panic, and closes it; a panic in a write
	// made from here is recovered by the pump and fails the shell actor, not this
	// one.
	input *inputPump
	claim *actor.PID

	// listed says the terminal is on the root list and its create answered. It is
	// not a phase: every phase handles the channel the same before and after it.
	listed       bool
	createWaiter *actor.PID
	// startErr is why the process could not be started (the failed phase), for the
	// create's answer once the create has reached this actor.
	startErr *messages.Error
	// pid is the process's id once it has started.
	pid int
	// exit is how the process ended, once known.
	exit       *pty.Exit
	listTimer  *time.Timer
	drainTimer *time.Timer

	// deciding is the terminal/claimed the claim actor is deciding, and held the
	// dispatches that came after it, applied in order once it is decided.
	deciding *channel.Dispatch
	held     []*channel.Dispatch

	// Under a pseudoterminal: the headless screen (fed in order on its own goroutine)
	// and the shell integration's command tracker. Both nil on pipes.
	scr     *screen.Screen
	feeder  *screenFeeder
	modes   *screen.Modes
	tracker *integration.Tracker

	system *actor.ActorSystem
	// watcher is the session that opened this terminal, if one did.
	watcher *actor.PID
}

// NewProps makes the props of a terminal for m, spawned by the root, which it
// reports its row and a failed start to. defaultShell is the root config's, where
// this machine can run it.
func NewProps(cfg Config, m *Create, defaultShell string) *actor.Props {
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		t := &terminal{cfg: cfg, journal: cfg.Journal, create: m, configShell: defaultShell, uri: m.URI, subs: map[delivery.Subscriber]bool{}}
		t.behavior.Become(t.starting)
		return t
	}, actor.WithSupervisor(childSupervisor()), actor.WithDispatcher(channel.Inline))
}

// A terminal runs on channel.Inline: a chunk the output reader sends while a
// keystroke is being handled waits until its echo has gone out. Nothing in Receive
// blocks (the pty write is the pump's non-blocking one; slow work goes to goroutines
// as messages). The shell actor keeps a goroutine of its own: its start forks.

// childSupervisor restarts a child that panicked, up to ten times a minute, then
// stops it. A restarted shell actor keeps the process and a restarted claim actor
// the claim: both live in a record the child's producer closes over.
func childSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(reason interface{}) actor.Directive {
		return actor.RestartDirective
	})
}

func (t *terminal) Receive(ctx actor.Context) { t.behavior.Receive(ctx) }

// starting: the shell actor is starting the process.
func (t *terminal) starting(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		t.start(ctx)
	case *shellStarted:
		t.pid = m.pid
		t.behavior.Become(t.running)
		if !t.usePty || t.create.Spec.Command != "" {
			// A shell on pipes prints nothing until it is given something to run, so it
			// is listed at once (seed: "Who opens one"); so is a one-command terminal,
			// which has no prompt to wait for and may print nothing at all.
			t.list(ctx)
		}
	case *shellFailed:
		t.startFailed(ctx, m)
	default:
		t.live(ctx)
	}
}

// running: the process runs and its output is read.
func (t *terminal) running(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *shellOutput:
		t.output(ctx, m.data)
		t.list(ctx)
	case *shellExited:
		t.behavior.Become(t.draining)
		t.recordExit(m.exit)
		self, system := ctx.Self(), ctx.ActorSystem()
		t.drainTimer = time.AfterFunc(t.cfg.DrainGrace, func() { system.Root.Send(self, &drainTimeout{}) })
	case *shellDrained:
		t.behavior.Become(t.draining)
	default:
		t.live(ctx)
	}
}

// draining: the process has exited and its output is still read (a background job
// may hold the terminal open; DrainGrace bounds the wait), or its output has ended
// and its exit status is on the way. The other end completes it.
func (t *terminal) draining(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *shellOutput:
		t.output(ctx, m.data)
		t.list(ctx)
	case *shellExited:
		t.recordExit(m.exit)
		t.announceExit(ctx)
	case *shellDrained:
		t.announceExit(ctx)
	case *drainTimeout:
		t.cfg.Logger.Info("output still open after the shell exited; closing it", "terminal", t.uri, "grace", t.cfg.DrainGrace)
		ctx.Send(t.shell, &shellCloseOutput{})
	default:
		t.live(ctx)
	}
}

// exited: terminal/exited has gone out; nothing more comes from the process.
func (t *terminal) exited(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *shellOutput, *shellExited, *shellDrained, *drainTimeout:
	case *actor.Terminated:
		t.claimStopped(ctx, m)
	default:
		t.live(ctx)
	}
}

// disposed: gone for its clients; the shell actor is ending the process, and the
// terminal stops once it has.
func (t *terminal) disposed(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Terminated:
		if samePID(t.shell, m.Who) {
			ctx.Stop(ctx.Self())
		}
	case *channel.Subscribe:
		t.subscribe(ctx, m)
	case *SnapshotQuery:
		t.snapshotQuery(ctx)
	case *ScreenQuery:
		t.screenQuery(ctx, m, false)
	case *actor.Stopping:
		t.stopping()
	}
}

// failed: the process could not be started; the root answers the create with why
// and stops the terminal. Nothing else happens on it meanwhile.
func (t *terminal) failed(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *Create:
		t.createWaiter = ctx.Sender()
		t.reportStartFailure(ctx)
	case *channel.Subscribe:
		// Reached before the root let go of it: there is no terminal to read.
		ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", t.uri)})
	case *SnapshotQuery:
		t.snapshotQuery(ctx)
	case *ScreenQuery:
		t.screenQuery(ctx, m, false)
	case *actor.Stopping:
		t.stopping()
	}
}

// live handles what every phase but disposed and failed handles alike.
func (t *terminal) live(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *channel.Dispatch:
		t.dispatch(ctx, m)
	case *channel.Subscribe:
		t.subscribe(ctx, m)
	case *channel.Unsubscribe:
		delete(t.subs, m.Sub)
	case *Write:
		if t.exit == nil {
			t.writeInput(ctx, m.Data)
			if m.Written != nil {
				system, uri := ctx.ActorSystem(), t.uri
				t.input.control(func(processControl) { system.Root.Send(m.Written, &Written{URI: uri}) })
			}
		}
	case *screenFailed:
		t.screenFailed(m)
	case *claimVerdict:
		t.claimDecided(ctx, m)
	case *claimReleased:
		t.applyRelease(ctx, m)
	case *Create:
		t.createWaiter = ctx.Sender()
		if t.listed {
			t.answerCreate(ctx)
		}
	case *listTimeout:
		t.list(ctx)
	case *SnapshotQuery:
		t.snapshotQuery(ctx)
	case *ScreenQuery:
		t.screenQuery(ctx, m, true)
	case *Kill:
		if t.exit == nil {
			ctx.Send(t.shell, &shellKill{signal: m.Signal, grace: m.Grace})
		}
	case *Dispose:
		t.dispose(ctx)
	case *actor.Terminated:
		t.childStopped(ctx, m)
	case *actor.Stopping:
		t.stopping()
	}
}

// stopping: the actor stops (disposed, failed, or its parent stopping); its
// children's ends are no news any more.
func (t *terminal) stopping() {
	t.behavior.Become(func(actor.Context) {})
	t.stopTimers()
	if t.feeder != nil {
		t.feeder.close()
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

func (t *terminal) subscribe(ctx actor.Context, m *channel.Subscribe) {
	t.scrollback.Settle(&t.state)
	t.subs[m.Sub] = true
	ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: t.uri, State: t.state.Clone(), FromSeq: t.journal.Current()}, Terminal: ctx.Self()})
}

func (t *terminal) snapshotQuery(ctx actor.Context) {
	t.scrollback.Settle(&t.state)
	st := t.state.Clone()
	ctx.Respond(&st)
}

// screenQuery answers m; live says the screen may be made for the text.
func (t *terminal) screenQuery(ctx actor.Context, m *ScreenQuery, live bool) {
	info := &ScreenInfo{IsPty: t.usePty, WhenAltBuffer: Settled}
	if t.modes != nil {
		info.AltBuffer, info.BracketedPaste, info.WhenAltBuffer = t.modes.AltScreen(), t.modes.BracketedPaste(), t.modes.WhenAltScreen()
	}
	if m.Text {
		if live {
			t.ensureScreen(ctx)
		}
		info.Text = t.scr.Text()
	}
	ctx.Respond(info)
}

// list puts the terminal on the root list, once.
func (t *terminal) list(ctx actor.Context) {
	if t.listed {
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
		ctx.Send(t.createWaiter, &CreateResult{IsPty: t.usePty, Detection: detected, Pid: t.pid})
		t.createWaiter = nil
	}
}

func (t *terminal) publishRow(ctx actor.Context) {
	if !t.listed {
		return
	}
	info := messages.TerminalInfo{Resource: t.uri, Title: t.state.Title, Claim: t.state.Claim, Lifecycle: t.state.Lifecycle, ExitCode: t.state.ExitCode, Meta: t.state.Meta}
	ctx.Send(ctx.Parent(), &Row{PID: ctx.Self(), Info: info})
}

// apply folds a host action into the state and sends it to every subscriber.
func (t *terminal) apply(a *messages.Action) {
	t.scrollback.Apply(&t.state, a)
	if a.Type == messages.TerminalData && a.Data != nil && a.Meta == nil {
		// Output, the flood's path: the frame is encoded in one pass, with no
		// action encoded apart first.
		t.deliver(t.journal.StampData(t.uri, *a.Data))
	} else {
		t.broadcast(&messages.Envelope{Channel: t.uri, Action: messages.EncodeAction(a)})
	}
	t.tellWatcher(a)
}

func (t *terminal) tellWatcher(a *messages.Action) {
	if t.watcher != nil {
		t.system.Root.Send(t.watcher, &Event{URI: t.uri, Action: a})
	}
}

func (t *terminal) broadcast(env *messages.Envelope) {
	t.deliver(t.journal.Stamp(env))
}

// deliver hands a stamped frame to every subscriber.
func (t *terminal) deliver(frame []byte) {
	for s := range t.subs {
		// A sole subscriber may have even a flood's chunk written on this
		// goroutine (delivery.directAloneBytes).
		if a, ok := s.(delivery.AloneSubscriber); ok && len(t.subs) == 1 {
			a.DeliverAlone(t.uri, frame)
			continue
		}
		s.Deliver(t.uri, frame)
	}
}

// output takes a chunk the shell printed: the screen is given it first, then the
// integration's marks are taken out of it and each event goes out where its mark
// stood, after the output before it.
func (t *terminal) output(ctx actor.Context, data string) {
	if data == "" {
		return
	}
	if t.modes.Scan(data) && t.scr == nil {
		t.ensureScreen(ctx)
	}
	if t.feeder != nil {
		t.feeder.feed([]byte(data))
	}
	echotrace.Mark("term output")
	if t.tracker == nil {
		t.apply(&messages.Action{Type: messages.TerminalData, Data: &data})
		return
	}
	for _, a := range t.tracker.Output(data) {
		t.apply(&a)
	}
}

// recordExit keeps how the process ended: from now on input is refused.
func (t *terminal) recordExit(exit pty.Exit) { t.exit = &exit }

// announceExit sends terminal/exited, once the process has exited and its output
// ended: the terminal is over.
func (t *terminal) announceExit(ctx actor.Context) {
	t.behavior.Become(t.exited)
	if t.drainTimer != nil {
		t.drainTimer.Stop()
	}
	// A mark still held when the shell exits goes out as output.
	if t.tracker != nil {
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
	// An exit before anything was printed lists the terminal too.
	if !t.listed {
		t.list(ctx)
	} else {
		t.publishRow(ctx)
	}
}

// childStopped hears that a child stopped for good before the terminal was
// disposed: its supervisor gave up on it after repeated failures.
func (t *terminal) childStopped(ctx actor.Context, m *actor.Terminated) {
	if !samePID(t.shell, m.Who) {
		t.claimStopped(ctx, m)
		return
	}
	// The shell actor ended the process as it stopped; the terminal is over.
	t.cfg.Logger.Warn("the shell actor failed too often and was stopped; its process was ended", "terminal", t.uri)
	if t.exit == nil {
		t.exit = &pty.Exit{Code: -1}
	}
	t.announceExit(ctx)
}

// claimStopped: with no claim actor, a claim can no longer be decided, and is
// refused.
func (t *terminal) claimStopped(ctx actor.Context, m *actor.Terminated) {
	if !samePID(t.claim, m.Who) {
		return
	}
	t.cfg.Logger.Warn("the claim actor failed too often and was stopped; claims are refused", "terminal", t.uri)
	t.claim = nil
	if t.deciding != nil {
		t.claimDecided(ctx, &claimVerdict{refusal: "the terminal's claim cannot be changed now"})
	}
}

func samePID(a, b *actor.PID) bool { return a != nil && b != nil && a.Id == b.Id }

func (t *terminal) dispose(ctx actor.Context) {
	t.behavior.Become(t.disposed)
	t.subs = map[delivery.Subscriber]bool{}
	t.deciding, t.held = nil, nil
	t.stopTimers()
	t.answerCreate(ctx)
	// The shell actor ends the process group (SIGHUP, then SIGKILL after the grace),
	// reaps it and stops; its Terminated stops this terminal.
	ctx.Send(t.shell, &shellTerminate{})
}
