package pty

import (
	"os"

	cpty "github.com/creack/pty"
)

// openPtyPortable is creack/pty's open, its master made pollable.
func openPtyPortable() (master, tty *os.File, err error) {
	master, tty, err = cpty.Open()
	if err != nil {
		return nil, nil, err
	}
	master, err = pollable(master)
	if err != nil {
		_ = tty.Close()
		return nil, nil, err
	}
	return master, tty, nil
}
