//go:build !linux

package integration

import "os"

// newScratch: no anonymous in-memory file here; bash's script forks to read what
// its builtins print.
func newScratch(string) *os.File { return nil }
