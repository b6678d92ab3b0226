package terminal

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/pty"
)

// DefaultScrollbackLimit is how many characters a terminal keeps when Config says
// nothing else.
const DefaultScrollbackLimit = 200_000

// Config is what every terminal of a host shares: its limits and choices. The zero
// value of each field means the default its comment names.
type Config struct {
	// Journal stamps every envelope the terminal sends; required.
	Journal *delivery.Journal
	// UsePty runs shells under a pseudoterminal; false means pipes.
	UsePty bool
	// ScrollbackLimit caps a terminal's kept content, in characters. Default 200,000.
	ScrollbackLimit int
	// ListTimeout lists a pseudoterminal whose shell printed nothing. Default 10 s.
	ListTimeout time.Duration
	// DrainGrace bounds the wait for output after the process exited, for a background
	// job that holds the pty or pipe open. Default 2 s.
	DrainGrace time.Duration
	// KillGrace is the time between SIGHUP and SIGKILL when a terminal is disposed.
	// Default 2 s.
	KillGrace time.Duration
	// DefaultShell is the system shell: $SHELL, else /bin/sh, when empty.
	DefaultShell string
	// ZshFolderAsFound takes <tmp>/<user>-termhost-zsh for zsh's startup files even
	// when it is a symlink or another user's (--zsh-folder as-found).
	ZshFolderAsFound bool
	// Home is the folder a client's terminal opens in when it names none. Default
	// the host's home folder.
	Home string
	// Logger gets the terminals' logs. Default: they are dropped.
	Logger *slog.Logger
	// Sessions finds the members of a terminal's session when it ends; one for all
	// the host's terminals, so shells ended together share one look at the process
	// table. Default: a scanner of the terminal's own.
	Sessions *pty.SessionScanner
	// Scripts remembers the integration scripts installed and checked, one for all
	// the host's terminals, so that a terminal's start does not check them again.
	// Default: one of the terminal's own.
	Scripts *integration.Installed

	// wrapOutput and wrapInput, set only by this package's tests, stand in front of
	// a process's output and input, so a test can make the output reader or the
	// input pump panic as a bug in them would.
	wrapOutput func(io.Reader) io.Reader
	wrapInput  func(io.Writer) io.Writer
}

// WithDefaults is c with each zero value replaced by its default.
func (c Config) WithDefaults() Config { return c.withDefaults() }

func (c Config) withDefaults() Config {
	if c.ScrollbackLimit <= 0 {
		c.ScrollbackLimit = DefaultScrollbackLimit
	}
	if c.ListTimeout <= 0 {
		c.ListTimeout = 10 * time.Second
	}
	if c.DrainGrace <= 0 {
		c.DrainGrace = 2 * time.Second
	}
	if c.KillGrace <= 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.Home == "" {
		c.Home, _ = os.UserHomeDir()
		if c.Home == "" {
			c.Home = "/"
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Sessions == nil {
		c.Sessions = &pty.SessionScanner{}
	}
	if c.Scripts == nil {
		c.Scripts = &integration.Installed{}
	}
	return c
}
