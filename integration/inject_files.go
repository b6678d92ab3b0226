package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/termhost/termhost/persistence/atomicfile"
)

// userName is the current user's name as it goes into a folder name: letters,
// digits, '.', '_' and '-' kept, anything else '_'.
func userName() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = os.Getenv("USERNAME")
	}
	if i := strings.LastIndexByte(name, '\\'); i >= 0 {
		name = name[i+1:] // DOMAIN\user
	}
	b := []byte(name)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	name = string(b)
	if strings.Trim(name, ".") == "" {
		return "user"
	}
	return name
}

// openPrivateFolder opens dir, creating it (0700) when it is not there, and makes
// sure it is the current user's own: a real folder rather than a link, owned by
// this user, writable by nobody else, in a parent where nobody else can move it.
// The Root returned is the very folder that was checked.
func openPrivateFolder(dir string) (*os.Root, error) {
	if err := checkParent(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	created := false
	switch err := os.Mkdir(dir, 0o700); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link", dir)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	if err := checkOwner(dir, fi); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	opened, err := root.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("%s was replaced while it was opened", dir)
	}
	if err == nil && created {
		// Mkdir's mode went through the umask; the folder is made 0700 exactly.
		if err = root.Chmod(".", 0o700); err == nil {
			opened, err = root.Stat(".")
		}
	}
	if err == nil {
		err = checkPrivate(dir, opened)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// openFolderAsFound opens dir whatever it is - a link, another user's folder -
// creating it when it is not there.
func openFolderAsFound(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// writeAtomic makes name in root hold data. A file that holds it already is left
// as it is, and modified is its time; otherwise data goes into a new file of a name
// of its own, renamed over name, so that a shell starting at the same time reads the
// old file or the new one and never half of one, and modified is zero.
func writeAtomic(root *os.Root, name string, data []byte) (modified time.Time, err error) {
	if fi, err := root.Lstat(name); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		if cur, err := root.ReadFile(name); err == nil && bytes.Equal(cur, data) {
			return fi.ModTime(), nil
		}
	}
	// Inside root: the folder may be under /tmp, where a link planted by someone
	// else must not lead the write elsewhere.
	if err := atomicfile.Write(name, data, 0o600, atomicfile.InRoot(root)); err != nil {
		return time.Time{}, fmt.Errorf("writing %s: %w", filepath.Join(root.Name(), name), err)
	}
	return time.Time{}, nil
}
