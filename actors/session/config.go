package session

import (
	"log/slog"
	"time"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/persistence"
)

// Config is what every session of a host shares. The zero value of each field means
// the default its comment names.
type Config struct {
	// Journal stamps every envelope a session or chat sends; required.
	Journal *delivery.Journal
	// Store keeps sessions, their local turns and retained terminals; nil keeps
	// nothing.
	Store *persistence.Store
	// DefaultShell runs `!` commands: $SHELL, else /bin/sh, when empty.
	DefaultShell string
	// CommandTimeout ends a `!` command still running after it. Default 2 minutes.
	CommandTimeout time.Duration
	Logger         *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
