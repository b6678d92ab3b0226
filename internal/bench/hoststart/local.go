package hoststart

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/server"
)

// LocalOptions are how an in-process host is started. The zero value works.
type LocalOptions struct {
	// UsePty runs terminals under a pseudoterminal; false means pipes.
	UsePty bool
	// Shell is the host's default shell; "" means the host's own default ($SHELL,
	// else /bin/sh), as `termhost serve` would pick.
	Shell string
	// Logger receives the host's logs; nil discards them.
	Logger *slog.Logger
	// EmptyHome sets this process's HOME to an empty folder in the host's state
	// folder until Close, so shells read no rc files of the person running the bench
	// (an rc file can take any time, and its time is not the host's). It is
	// process-wide on purpose: the raw baselines then run with the same HOME.
	EmptyHome bool
}

// Local is a host serving in this process on a free loopback port, with a state
// folder of its own that Close removes.
type Local struct {
	URL   string
	Token string

	stateDir string
	cancel   context.CancelFunc
	done     chan error
	// restoreHome puts HOME back; nil when EmptyHome was not asked for.
	restoreHome func()
}

// StartLocal starts a host on 127.0.0.1:0 with a fresh state folder and its owner
// token, the way `termhost serve` would on a new machine.
func StartLocal(opts LocalOptions) (*Local, error) {
	dir, err := os.MkdirTemp("", "termhost-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: state folder: %w", err)
	}
	h, err := startLocal(dir, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return h, nil
}

func startLocal(dir string, opts LocalOptions) (*Local, error) {
	var restoreHome func()
	if opts.EmptyHome {
		var err error
		if restoreHome, err = useEmptyHome(dir); err != nil {
			return nil, err
		}
	}
	h, err := serveLocal(dir, opts)
	if err != nil {
		if restoreHome != nil {
			restoreHome()
		}
		return nil, err
	}
	h.restoreHome = restoreHome
	return h, nil
}

func serveLocal(dir string, opts LocalOptions) (*Local, error) {
	store, err := auth.Open(dir)
	if err != nil {
		return nil, err
	}
	path, _, err := store.EnsureOwner()
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: reading the owner token: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Sessions are kept as `termhost serve` keeps them, so a `!` turn measured here
	// writes what it writes there.
	sessions, err := persistence.Open(filepath.Join(dir, "sessions"))
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{
		Root:   root.Options{UsePty: opts.UsePty, DefaultShell: opts.Shell, Store: sessions},
		Auth:   store,
		Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return &Local{
		URL:      "ws://" + ln.Addr().String() + "/",
		Token:    strings.TrimSpace(string(tok)),
		stateDir: dir,
		cancel:   cancel,
		done:     done,
	}, nil
}

// Close shuts the host down (every terminal is ended and reaped) and removes its
// state folder.
func (h *Local) Close() error {
	h.cancel()
	var err error
	select {
	case err = <-h.done:
	case <-time.After(30 * time.Second):
		err = errors.New("bench: the in-process host did not shut down within 30 s")
	}
	return leaveState(h.stateDir, h.restoreHome, err)
}

// leaveState puts HOME back (restoreHome may be nil) and removes a started host's
// state folder once it has stopped; err is how the stop went, and comes first.
func leaveState(stateDir string, restoreHome func(), err error) error {
	if restoreHome != nil {
		restoreHome()
	}
	if rmErr := os.RemoveAll(stateDir); err == nil {
		err = rmErr
	}
	return err
}

// useEmptyHome points this process's HOME at a new empty folder in dir, for the host's
// shells and the raw baselines alike, and returns what puts it back.
func useEmptyHome(dir string) (restore func(), err error) {
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, fmt.Errorf("bench: empty home: %w", err)
	}
	old, had := os.LookupEnv("HOME")
	if err := os.Setenv("HOME", home); err != nil {
		return nil, err
	}
	return func() {
		if had {
			_ = os.Setenv("HOME", old)
		} else {
			_ = os.Unsetenv("HOME")
		}
	}, nil
}
