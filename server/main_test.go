package server_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/termhost/termhost/messages/schematest"
)

// realHome is HOME as the tests found it, before TestMain gave the shells their own:
// the go command, which builds the real binary for some tests, keeps its caches there.
var realHome string

// TestMain gives the shells these tests start a home folder of their own: the
// machine's own rc files (a slow pyenv init in root's .bashrc, say) are not what the
// tests are about, and a person's prompt must not decide whether they pass.
//
// It also says once when the schema tests will skip (schematest.NoteIfMissing).
func TestMain(m *testing.M) {
	schematest.NoteIfMissing("server")
	realHome = os.Getenv("HOME")
	home, err := os.MkdirTemp("", "termhost-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("ZDOTDIR")
	os.Unsetenv("XDG_CONFIG_HOME")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
