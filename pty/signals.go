package pty

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// inheritedIgnores are the signals a Go program started with them ignored keeps
// ignored (os/signal: SIGHUP and SIGINT; it takes every other one over): `nohup`
// ignores SIGHUP, and `&` in a script ignores SIGINT. An ignored signal survives fork
// and exec, so every shell this process starts would ignore it too: a hung-up
// terminal's jobs would run on until killed, and ^C would stop nothing. In a child, Go
// resets every signal the parent has a handler for to the default, so a handler (on a
// channel nobody reads: the signal is still dropped here, as this process was asked)
// gives every shell the default without changing what this process does.
var inheritedIgnores = []os.Signal{syscall.SIGHUP, syscall.SIGINT}

// restoreDefaultsOnce guards a change of this process's own signal dispositions, made
// once before its first child starts and never undone.
var restoreDefaultsOnce sync.Once

func restoreChildSignalDefaults() {
	restoreDefaultsOnce.Do(func() {
		for _, sig := range inheritedIgnores {
			if signal.Ignored(sig) {
				signal.Notify(make(chan os.Signal, 1), sig)
			}
		}
	})
}
