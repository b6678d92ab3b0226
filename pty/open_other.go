//go:build !linux

package pty

import "os"

// openPty opens a new pseudoterminal with creack/pty, its master made pollable.
func openPty() (master, tty *os.File, err error) { return openPtyPortable() }
