package terminal

import (
	"errors"
	"slices"
	"time"

	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/pty"
)

// Spare is a shell started ahead of the terminal that will show it, so that a
// terminal's shell is at its prompt when the terminal is made (a session's next `!`
// command, which otherwise waits for a shell to start: a fork, an exec, the shell's
// startup files and our integration). It is no terminal yet: no URI, no row on the
// root's list, no subscriber; nobody reads its output, which waits in the
// pseudoterminal for the terminal that adopts it (Create.Spare). Whoever holds one
// either hands it to a Create or ends it with Release.
type Spare struct {
	spec  pty.Spec // as started, with the integration's arguments
	base  pty.Spec // as a terminal would make it before the integration (fits)
	nonce string
	proc  pty.Process
	grace time.Duration
	scan  *pty.SessionScanner
}

// Prestart starts the shell a terminal made by m would start, under a
// pseudoterminal and with our integration, and returns it running. It forks, so it
// runs off any mailbox. m must name its shell (Spec.Shell) and be a shell to sit
// in (no Spec.Command); a host on pipes has no spares.
func Prestart(cfg Config, m *Create) (*Spare, error) {
	cfg = cfg.withDefaults()
	if !cfg.UsePty || m.Spec.Shell == "" || m.Spec.Command != "" {
		return nil, errors.New("terminal: a spare is a named shell to sit in, under a pseudoterminal")
	}
	dir, err := resolveDir(cfg, m)
	if err != nil {
		return nil, err
	}
	cols, rows, _ := clampSize(m.Cols, m.Rows)
	base := baseSpec(m, m.Spec.Shell, dir, cols, rows, true)
	spec := base
	nonce := integration.NewNonce()
	if err := inject(cfg, &spec, nonce); err != nil {
		return nil, err
	}
	proc, err := pty.Start(spec)
	if err != nil {
		return nil, err
	}
	spec.ExtraFiles = nil // closed by Start; the child has its own
	// Reaped as soon as it exits, adopted or not: Done then says so (fits,
	// Release); the terminal's own wait gets the same exit.
	go proc.Wait()
	return &Spare{spec: spec, base: base, nonce: nonce, proc: proc, grace: cfg.KillGrace, scan: cfg.Sessions}, nil
}

// Pid is the spare shell's process id.
func (s *Spare) Pid() int { return s.proc.Pid() }

// Release ends the spare shell and every process of its session, and returns once
// it is reaped (it blocks up to the kill grace).
func (s *Spare) Release() { release(s.proc, s.grace, s.scan) }

// fits says whether the spare is the shell a terminal would start with spec, and
// is still running.
func (s *Spare) fits(spec pty.Spec) bool {
	select {
	case <-s.proc.Done():
		return false
	default:
	}
	b := s.base
	return b.Shell == spec.Shell && b.Command == "" && spec.Command == "" && b.Dir == spec.Dir &&
		slices.Equal(b.Env, spec.Env) && b.Cols == spec.Cols && b.Rows == spec.Rows && b.UsePty == spec.UsePty &&
		b.PreventShellHistory == spec.PreventShellHistory && b.NonInteractive == spec.NonInteractive &&
		len(spec.ShellArgs) == 0 && len(spec.ExtraFiles) == 0
}
