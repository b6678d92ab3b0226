// Package atomicfile writes a file whole or not at all: a reader, another process
// included, sees the old file or the new one and never part of one, and a crash leaves
// one of the two whole. It is the host's one way of replacing a file: the session
// store's files, the users file and the shell integration scripts are all written
// through it, so none of those packages needs the others for it.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Option adjusts Write for a caller that needs more than the plain write. The
// zero set of options writes path on the file system as it is.
type Option func(*options)

type options struct {
	root         *os.Root               // nil: path is a path, not a name in a root
	after        time.Time              // zero: the modification time is left as the write made it
	beforeRename func(tmp string) error // nil: nothing runs between the sync and the rename
}

// InRoot makes path a name inside root, resolved by it, so that neither a symbolic
// link nor ".." can lead the write, its temporary file or its cleanup outside root:
// for folders that somebody else may be able to change, such as one under /tmp.
func InRoot(root *os.Root) Option {
	return func(o *options) { o.root = root }
}

// ModifiedAfter makes the new file's modification time later than t, even when the
// clock has not moved past t or the file system keeps coarse times: a reader that
// tells versions apart by size and modification time then never mistakes the new
// file for one it saw at t. A zero t does nothing.
func ModifiedAfter(t time.Time) Option {
	return func(o *options) { o.after = t }
}

// BeforeRename runs hook once the temporary file is written, synced and closed, just
// before it is renamed over path. An error from hook aborts the write as a crash at
// that moment would, except that the temporary file is removed. tmp is the temporary
// file's path (its name inside the root, with InRoot). For tests.
func BeforeRename(hook func(tmp string) error) Option {
	return func(o *options) { o.beforeRename = hook }
}

// TempSuffix ends the name of every temporary file Write makes
// (".<name>.<random>.tmp"). One that a crash left behind can be told by it and swept.
const TempSuffix = ".tmp"

// tempAttempts bounds the tries for a temporary name nobody holds; with 64 random
// bits each, a second try is already a sign that something else is wrong.
const tempAttempts = 100

// Write makes path hold data, so that a reader - another process included -
// sees the old file or the new one and never part of one, and a crash leaves one of
// the two whole. The data goes into a new temporary file in path's own folder, named
// ".<name>.<random>.tmp", which is written, fsynced and closed, then renamed over
// path; then the folder is fsynced so that the rename itself survives a crash. On
// any error before the rename the temporary file is removed and path is untouched.
//
// The new file's mode is perm exactly, whatever the umask: the callers keep private
// files and say so.
func Write(path string, data []byte, perm os.FileMode, opts ...Option) (err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	root, name := o.root, path
	if root == nil {
		// The folder as a root, so that one code path serves both kinds of caller.
		r, err := os.OpenRoot(filepath.Dir(path))
		if err != nil {
			return err
		}
		defer r.Close()
		root, name = r, filepath.Base(path)
	}
	dir := filepath.Dir(name)

	tmp, f, err := createTemp(root, dir, filepath.Base(name))
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil && !renamed {
			root.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if !o.after.IsZero() {
		if err = modifiedAfter(root, tmp, f, o.after); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	err = f.Close()
	f = nil
	if err != nil {
		return err
	}
	if o.beforeRename != nil {
		shown := tmp
		if o.root == nil {
			shown = filepath.Join(filepath.Dir(path), tmp)
		}
		if err = o.beforeRename(shown); err != nil {
			return err
		}
	}
	if err = root.Rename(tmp, name); err != nil {
		return err
	}
	renamed = true
	return syncRootDir(root, dir)
}

// createTemp makes a new file ".<base>.<random>.tmp" in dir inside root; os.CreateTemp
// has no form that works inside an os.Root.
func createTemp(root *os.Root, dir, base string) (string, *os.File, error) {
	var rnd [8]byte
	for range tempAttempts {
		_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails (Go 1.24)
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+TempSuffix)
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return tmp, f, err
	}
	return "", nil, fmt.Errorf("no free temporary name for %s in %s", base, filepath.Join(root.Name(), dir))
}

// modifiedAfter sets the file's modification time to now, or if the clock has not
// moved past after (or the file system keeps coarser times), to just after it.
func modifiedAfter(root *os.Root, name string, f *os.File, after time.Time) error {
	for _, step := range []time.Duration{0, time.Microsecond, time.Millisecond, time.Second} {
		mt := time.Now()
		if step > 0 {
			mt = after.Add(step)
		}
		if err := root.Chtimes(name, time.Time{}, mt); err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.ModTime().After(after) {
			return nil
		}
	}
	return fmt.Errorf("could not make %s newer than %s", name, after)
}

// SyncDir fsyncs the folder dir, so that an entry made, renamed or removed in it is
// durable: what Write does after its rename, for a caller that changed a folder
// otherwise (made it, or moved a file into it).
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // Windows cannot sync a folder; NTFS journals its metadata
	}
	return syncOpened(os.Open(dir))
}

// syncRootDir is SyncDir for dir inside root.
func syncRootDir(root *os.Root, dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	return syncOpened(root.Open(dir))
}

// syncOpened fsyncs and closes a folder just opened.
func syncOpened(d *os.File, err error) error {
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
