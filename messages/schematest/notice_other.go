//go:build !linux

package schematest

import "io"

// goCommandStderr finds no other stderr where there is no /proc to find it through.
func goCommandStderr() io.WriteCloser { return nil }
