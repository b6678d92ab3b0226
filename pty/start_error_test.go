//go:build linux

package pty

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A shell file that is there but whose #! interpreter is not: exec says "no such
// file", and the error says which file is missing.
func TestShellWithAMissingInterpreter(t *testing.T) {
	shell := filepath.Join(t.TempDir(), "shell")
	if err := os.WriteFile(shell, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	modes(t, func(t *testing.T, usePty bool) {
		p, err := Start(Spec{Shell: shell, UsePty: usePty})
		if err == nil {
			p.Wait()
			_ = p.Close()
			t.Fatal("Start succeeded")
		}
		want := "cannot start " + shell + ": the interpreter its #! line names, or its loader: no such file or directory"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if !errors.Is(err, ErrNoShell) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v: want ErrNoShell and fs.ErrNotExist in the chain", err)
		}
	})
}
