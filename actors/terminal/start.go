package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/pty"
	"github.com/termhost/termhost/screen"
)

// Starting a terminal: its process spec (shell, folder, size, the integration
// injected), the shell actor that runs it, its screen, and a start that failed.

// start makes the process spec from the create (shell, folder, size, integration),
// then spawns the claim actor and the shell actor that runs it.
func (t *terminal) start(ctx actor.Context) {
	t.system = ctx.ActorSystem()
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
	spec := baseSpec(m, shellPath, dir, cols, rows, t.usePty)
	self := ctx.Self()
	var adopted pty.Process
	if t.usePty {
		t.listTimer = time.AfterFunc(t.cfg.ListTimeout, func() { ctx.ActorSystem().Root.Send(self, &listTimeout{}) })
		nonce := ""
		if sp := m.Spare; sp != nil && dirErr == nil && sp.fits(spec) {
			// The spare started with this very spec and has been at its prompt,
			// or on its way there, since: its output waits in the pty.
			adopted, nonce, spec = sp.proc, sp.nonce, sp.spec
			t.cfg.Logger.Debug("spare shell adopted", "terminal", t.uri, "pid", sp.Pid())
		} else if sp != nil {
			t.cfg.Logger.Debug("spare shell does not fit; a shell of its own starts", "terminal", t.uri, "pid", sp.Pid())
			go sp.Release()
		}
		t.prepareIntegration(&spec, nonce)
		t.modes = new(screen.Modes)
	}
	// The shell actor is spawned last: its goroutine, which starts the process, is
	// then the next to run, ahead of anything else this start made runnable.
	t.claim = ctx.Spawn(newClaimProps(m.Claim, ctx.Parent()))
	props, input := newShell(t.cfg, spec, dirErr, self, adopted)
	t.input = input
	t.shell = ctx.Spawn(props)
	// The shell actor's goroutine, which forks, is next on this CPU: the goroutine
	// running this start (the root's) steps aside for it rather than go on to
	// its next message first.
	runtime.Gosched()
}

// ensureScreen makes the headless screen the first time it is needed: a program asked
// the terminal something, or a caller wants the screen's text. It is fed what the
// terminal kept so far (the scrollback), so it stands where a screen fed from the start
// would, within the 200,000-character cap; an idle shell never pays for one.
func (t *terminal) ensureScreen(ctx actor.Context) {
	if t.scr != nil || !t.usePty {
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
	self := ctx.Self()
	t.feeder = newScreenFeeder(t.scr, func(f *screenFeeder, reason any) {
		system.Root.Send(self, &screenFailed{feeder: f, reason: reason})
	})
}

// screenFailed says the goroutine feeding the screen panicked: the screen is dropped,
// and the next thing that needs one makes it afresh from the scrollback, as the first
// time. The terminal, its process and its subscribers go on.
type screenFailed struct {
	feeder *screenFeeder
	reason any
}

func (t *terminal) screenFailed(m *screenFailed) {
	if t.feeder != m.feeder {
		return
	}
	t.cfg.Logger.Error("the terminal's screen failed; it is made again when next needed", "terminal", t.uri, "panic", m.reason)
	m.feeder.abandon()
	t.feeder, t.scr = nil, nil
}

// prepareIntegration gives a pseudoterminal's shell its nonce and, for a shell with
// no command, our integration script (seed: "One command, or a shell to sit in"). An
// injection that fails leaves the shell starting as it would have.
//
// nonce is that of a spare shell being adopted, whose injection is in spec already;
// "" for a shell about to start.
func (t *terminal) prepareIntegration(spec *pty.Spec, nonce string) {
	adopting := nonce != ""
	if !adopting {
		nonce = integration.NewNonce()
	}
	seq := 0
	t.tracker = integration.NewTracker(nonce, time.Now, func() string {
		seq++
		return fmt.Sprintf("%s#%d", t.uri, seq)
	})
	if spec.Command != "" || adopting {
		return
	}
	if err := inject(t.cfg, spec, nonce); err != nil {
		t.cfg.Logger.Warn("shell integration not injected", "terminal", t.uri, "shell", spec.Shell, "err", err)
	}
}

// inject puts our integration with nonce into spec (a shell to sit in); a shell
// with no script, or whose injection failed, is left to start as it would have.
func inject(cfg Config, spec *pty.Spec, nonce string) error {
	inj, ok, err := integration.Inject(spec.Shell, spec.ShellArgs, integration.InjectOptions{Nonce: nonce, ZshFolderAsFound: cfg.ZshFolderAsFound, Environ: append(os.Environ(), spec.Env...), Installed: cfg.Scripts})
	if !ok {
		return err
	}
	spec.ShellArgs = inj.Args
	spec.Env = append(append([]string(nil), spec.Env...), inj.Env...)
	spec.ExtraFiles = inj.Files // pty.Start closes them
	return err
}

// baseSpec is what m starts, before any integration: the one place a terminal and
// a spare shell (Prestart) make it, so that a spare fits exactly when it would
// have been started the same.
func baseSpec(m *Create, shellPath, dir string, cols, rows int, usePty bool) pty.Spec {
	return pty.Spec{
		Shell:               shellPath,
		Command:             m.Spec.Command,
		Args:                m.Spec.Args,
		Dir:                 dir,
		Env:                 m.Spec.Env,
		Cols:                cols,
		Rows:                rows,
		UsePty:              usePty,
		PreventShellHistory: m.Spec.PreventShellHistory,
		NonInteractive:      m.Spec.NonInteractive,
	}
}

// resolveDir decides where the shell starts. A client's terminal opens in the home
// folder when it names none or one that is not a folder here; a terminal a program
// opens (StrictCwd) fails to start instead, with the reason in its output.
func (t *terminal) resolveDir(m *Create) (string, error) { return resolveDir(t.cfg, m) }

func resolveDir(cfg Config, m *Create) (string, error) {
	if m.Cwd == "" {
		return cfg.Home, nil
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
		cfg.Logger.Info("terminal folder unusable; opening in the home folder", "terminal", m.URI, "cwd", m.Cwd, "err", err)
		return cfg.Home, nil
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

// startFailed takes the shell actor's word that the process could not be started.
func (t *terminal) startFailed(ctx actor.Context, m *shellFailed) {
	if !m.folder {
		// The process itself could not be started (the shell cannot be executed, no
		// pseudoterminal, no descriptor left): the create fails, and there is no
		// terminal to list.
		t.behavior.Become(t.failed)
		t.startErr = messages.Errorf(messages.CodeInternalError, "%s", capitalize(m.err.Error()))
		t.subs = map[delivery.Subscriber]bool{}
		t.stopTimers()
		t.reportStartFailure(ctx)
		return
	}
	// A folder that is not there is a shell that fails to start, not a refusal: the
	// failure is written into the terminal's own output, with exit code 127 as a
	// shell reports a command it cannot run (seed: "Where it runs").
	t.output(ctx, fmt.Sprintf("termhost: %v\r\n", m.err))
	t.recordExit(pty.Exit{Code: 127})
	t.announceExit(ctx)
}

// reportStartFailure hands the failed start to the root, which answers the create
// with its error and stops this terminal, once the create has arrived (it may come
// after the failure). The root takes the terminal off its registry before the
// answer goes, so a subscribe sent after it finds no channel.
func (t *terminal) reportStartFailure(ctx actor.Context) {
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
