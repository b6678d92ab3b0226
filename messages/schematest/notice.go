package schematest

import (
	"fmt"
	"io"
	"os"
)

// NoteIfMissing says once, for a package's TestMain, that the package's schema tests
// will skip because shared/ahp-0.8.0 is not there; it says nothing when it is. pkg
// names the package in the line.
//
// `go test ./...` shows a passing package's output, stderr included, only under -v,
// so a skip that only t.Skip or the test binary's own stderr reports goes unseen. The
// line therefore goes to the stderr of the go command that runs the test binary, where
// that is somewhere else than the binary's own (Linux, through /proc), and otherwise
// to the binary's own stderr: once either way.
func NoteIfMissing(pkg string) {
	if _, ok := FindAHPDir(); ok {
		return
	}
	w := goCommandStderr()
	if w == nil {
		w = os.Stderr
	} else {
		defer w.Close()
	}
	writeMissing(w, pkg)
}

// writeMissing writes the line NoteIfMissing says.
func writeMissing(w io.Writer, pkg string) {
	fmt.Fprintf(w, "%s: schema tests skipped: ../shared/ahp-%s not found\n", pkg, Version)
}
