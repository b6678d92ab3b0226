package integration

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Installed remembers the scripts Inject has written and checked, for a host that
// starts many shells: a shell's start then costs one lstat of its script, where
// installing it afresh opens and checks the private folder and reads the script
// back to compare (0.15 ms of a terminal's opening here, 0.3–0.5 ms on a loaded
// machine). A host makes one and hands it to every Inject (InjectOptions.Installed);
// it is safe for concurrent use.
//
// A script is taken as installed while the path names the very file that was
// written or checked (same device and inode), still a regular file of the same size
// and time. Anything else (a temp-folder cleaner removed it, somebody replaced it)
// installs it afresh, checks and all. So does the hourly touch that keeps a script
// in use from being swept as stale.
type Installed struct {
	mu      sync.Mutex
	scripts map[string]installedScript // by folder and script source
}

type installedScript struct {
	path    string
	info    os.FileInfo
	checked time.Time
}

// lookup is the path of the script src installed in dir, if it was installed or
// checked within touchScript and is still the same file.
func (in *Installed) lookup(dir, src string, now time.Time) (string, bool) {
	if in == nil {
		return "", false
	}
	in.mu.Lock()
	s, ok := in.scripts[dir+"\x00"+src]
	in.mu.Unlock()
	if !ok || now.Sub(s.checked) > touchScript {
		return "", false
	}
	fi, err := os.Lstat(s.path)
	if err != nil || !fi.Mode().IsRegular() || !os.SameFile(fi, s.info) || fi.Size() != s.info.Size() || !fi.ModTime().Equal(s.info.ModTime()) {
		return "", false
	}
	return s.path, true
}

// remember records that the script src is installed in dir under name, as root
// (that folder, just checked) sees it now.
func (in *Installed) remember(root *os.Root, dir, src, name string, now time.Time) {
	if in == nil {
		return
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.scripts == nil {
		in.scripts = map[string]installedScript{}
	}
	in.scripts[dir+"\x00"+src] = installedScript{path: filepath.Join(dir, name), info: fi, checked: now}
}
