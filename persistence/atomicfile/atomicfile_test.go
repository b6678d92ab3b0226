package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// names lists what a folder holds, so a failure shows any temporary file left behind.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

func TestWriteWritesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.json")
	for _, data := range []string{"first\n", "second, longer\n", ""} {
		if err := Write(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("after writing %q the file holds %q, %v", data, got, err)
		}
		if ns := names(t, dir); len(ns) != 1 {
			t.Fatalf("the folder holds %v, want the file alone", ns)
		}
	}
}

// The mode is the caller's, whatever the umask and whatever mode the old file had.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, perm := range []os.FileMode{0o600, 0o640, 0o666} {
		if err := Write(path, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != perm {
			t.Fatalf("written with %v, the file's mode is %v", perm, fi.Mode().Perm())
		}
	}
}

// The hook sees the whole temporary file beside the target, under a name every reader
// ignores; its error leaves the old file whole and no temporary file behind.
func TestWriteFailureBeforeRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "turns.json")
	if err := Write(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	var seen string
	err := Write(path, []byte("new"), 0o600, BeforeRename(func(tmp string) error {
		seen = tmp
		if b, err := os.ReadFile(tmp); err != nil || string(b) != "new" {
			t.Errorf("temporary file before the rename: %q, %v", b, err)
		}
		return crash
	}))
	if !errors.Is(err, crash) {
		t.Fatalf("Write = %v, want the hook's error", err)
	}
	base := filepath.Base(seen)
	if filepath.Dir(seen) != dir || !strings.HasPrefix(base, ".turns.json.") || !strings.HasSuffix(base, TempSuffix) {
		t.Fatalf("temporary file %q: want .turns.json.<random>%s in %s", seen, TempSuffix, dir)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
		t.Fatalf("after a failed write the file holds %q, %v; want the old one", b, err)
	}
	if ns := names(t, dir); len(ns) != 1 {
		t.Fatalf("after a failed write the folder holds %v", ns)
	}
}

// A rename that fails (the target is a folder with something in it) leaves no
// temporary file either.
func TestWriteFailedRenameCleansUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("x"), 0o600); err == nil {
		t.Fatal("a write over a folder that holds something succeeded")
	}
	if ns := names(t, dir); len(ns) != 1 || ns[0] != "taken" {
		t.Fatalf("after a failed rename the folder holds %v", ns)
	}
}

func TestWriteMissingFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "f")
	if err := Write(path, []byte("x"), 0o600); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a write into a missing folder = %v, want not exist", err)
	}
}

func TestWriteModifiedAfter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.json")
	// An hour ahead: the clock has not got there, so the time must be set past it.
	after := time.Now().Add(time.Hour)
	if err := Write(path, []byte("x"), 0o600, ModifiedAfter(after)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().After(after) {
		t.Fatalf("modified at %v, not after %v", fi.ModTime(), after)
	}
}

// Inside a root, the write stays there: a link or ".." out of it is refused, and
// nothing is written or left outside.
func TestWriteInRoot(t *testing.T) {
	base := t.TempDir()
	inside, outside := filepath.Join(base, "inside"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(inside, "sub"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(inside, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(inside)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	var seen string
	hook := BeforeRename(func(tmp string) error { seen = tmp; return nil })
	if err := Write("sub/script.sh", []byte("echo hi\n"), 0o600, InRoot(root), hook); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(inside, "sub", "script.sh")); err != nil || string(b) != "echo hi\n" {
		t.Fatalf("inside the root: %q, %v", b, err)
	}
	if filepath.Dir(seen) != "sub" {
		t.Fatalf("temporary file %q is not beside sub/script.sh", seen)
	}
	if ns := names(t, filepath.Join(inside, "sub")); len(ns) != 1 {
		t.Fatalf("sub holds %v", ns)
	}
	for _, name := range []string{"out/escaped", "../outside/escaped", "../escaped"} {
		if err := Write(name, []byte("x"), 0o600, InRoot(root)); err == nil {
			t.Errorf("a write to %s inside the root succeeded", name)
		}
	}
	if ns := names(t, outside); len(ns) != 0 {
		t.Fatalf("writes inside the root left %v outside it", ns)
	}
	if ns := names(t, base); len(ns) != 2 {
		t.Fatalf("writes inside the root left %v beside it", ns)
	}
}

// The folder is fsynced after the rename; a folder that cannot be opened is an error,
// not silence.
func TestSyncRootDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, d := range []string{".", "sub"} {
		if err := syncRootDir(root, d); err != nil {
			t.Fatalf("syncing %s: %v", d, err)
		}
	}
	if err := syncRootDir(root, "missing"); err == nil {
		t.Fatal("syncing a missing folder succeeded")
	}
}
