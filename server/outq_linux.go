package server

import "golang.org/x/sys/unix"

// unsentBytes is what the kernel holds queued and unsent on a socket (SIOCOUTQ).
func unsentBytes(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.SIOCOUTQ) }
