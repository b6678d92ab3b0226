//go:build unix

package integration

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkParent refuses a parent folder in which other users can rename or remove
// what this user puts there: one writable by all without the sticky bit.
func checkParent(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s is writable by all users and not sticky", dir)
	}
	return nil
}

// checkOwner refuses a folder another user owns.
func checkOwner(dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot tell its owner", dir)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not by this user (uid %d)", dir, st.Uid, uid)
	}
	return nil
}

// checkPrivate refuses a folder that is not this user's or that others can write.
func checkPrivate(dir string, fi fs.FileInfo) error {
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by other users (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}
