package pty

import (
	"errors"
	"io"
	"syscall"
	"testing"
)

// BenchmarkKeystrokePtyWrite is the keystroke path's write into the pseudoterminal: one
// byte, the caller's non-blocking write, to a process in raw mode that reads it (see
// server/ahp's keystroke benchmarks for the other hops).
func BenchmarkKeystrokePtyWrite(b *testing.B) {
	if !Available() {
		b.Skip("this machine cannot open a pseudoterminal")
	}
	p, err := Start(Spec{Shell: testShell, Command: "stty raw -echo; exec cat >/dev/null", UsePty: true, Cols: 80, Rows: 24})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { Terminate(p, 0, nil); p.Wait(); _ = p.Close() }()
	go func() { _, _ = io.Copy(io.Discard, p.Output()) }()
	w := p.(interface {
		TryWrite([]byte) (int, error)
	})
	key := []byte("l")
	b.ReportAllocs()
	for b.Loop() {
		// A full buffer (cat behind) is EAGAIN: the host queues then; here, try again.
		if _, err := w.TryWrite(key); err != nil && !errors.Is(err, syscall.EAGAIN) {
			b.Fatal(err)
		}
	}
}
