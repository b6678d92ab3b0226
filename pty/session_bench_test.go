//go:build linux

package pty

import (
	"testing"
)

// BenchmarkSessionWalk is one look at the members of a live shell's session with
// one job in it, as Terminate makes before it signals and again once the shell
// has gone.
func BenchmarkSessionWalk(b *testing.B) {
	if !Available() || !childrenListed() {
		b.Skip("no pseudoterminal or no children lists")
	}
	p, err := Start(Spec{Shell: testShell, Command: "sleep 1000 & read line", UsePty: true})
	if err != nil {
		b.Fatal(err)
	}
	out := collect(p.Output())
	go p.Wait()
	b.Cleanup(func() {
		Terminate(p, testTimeout, nil)
		_ = p.CloseOutput()
		<-out.done
		_ = p.Close()
	})
	// The job is forked once the shell has read its line: wait for it.
	for {
		ms, _ := sessionOf(p.Pid())
		if len(ms) == 1 {
			break
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if ms, ok := sessionOf(p.Pid()); !ok || len(ms) != 1 {
			b.Fatalf("sessionOf = %v, %v; want the one job", ms, ok)
		}
	}
}
