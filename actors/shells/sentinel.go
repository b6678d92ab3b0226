package shells

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/pty"
)

// A shell that marks no boundaries (sh, dash, a shell the scripts do not know) is
// told to echo a sentinel after each command. Typed straight after the command, the
// sentinel's line sits in the terminal's input queue while the command runs, and a
// command that reads the terminal reads it: `head -n 1` prints it and ends, apt-get
// takes it as the answer to "Do you want to continue?" and aborts, a REPL runs it;
// then the shell, back at its prompt, never prints the sentinel, and the call waits
// out its window. In a shell under a pseudoterminal whose process is known, the
// sentinel is therefore owed, not typed: the service looks at the terminal's
// foreground (pty.ForegroundInput) and types it once the shell itself reads the
// terminal again, back at its prompt. A command that reads the terminal meanwhile
// is the one seen reading, is answered as waiting for input, and reads only what
// somebody types. On pipes, or with the looks turned off, the sentinel is typed
// after the command as before.
//
// The looks start once the typed line has come back (the terminal echoes it as the
// shell reads it; before that the shell seen reading may not have read the line
// yet), close together at first (most commands end within milliseconds), further
// apart while the command runs on, and close again whenever it prints.

const (
	// firstSentinelLook is the first gap before a look for the shell's prompt.
	firstSentinelLook = time.Millisecond
	// maxSentinelLook is the widest gap: how late, at most, a long command's end
	// is seen once the shell is back, beyond the look itself.
	maxSentinelLook = 100 * time.Millisecond
)

type (
	// sentinelLook is time to look whether the shell is back at its prompt.
	sentinelLook struct {
		shell string
		seq   int
	}
	// sentinelLooked is what the look found.
	sentinelLooked struct {
		shell string
		seq   int
		wait  pty.InputWait
	}
)

// owesSentinel says whether a command typed into sh now has its sentinel typed
// later, once the shell reads again, rather than straight after it.
func (s *service) owesSentinel(sh *shell) bool {
	return !sh.marks && sh.isPty && sh.pid > 0 && s.opts.InputPoll > 0
}

// oweSentinel starts the looks for the shell's prompt after c was typed without
// its sentinel.
func (s *service) oweSentinel(ctx actor.Context, sh *shell, c *command) {
	c.sentinelOwed = true
	c.sentinelEvery = firstSentinelLook
	c.sentinelTimer = s.after(ctx, c.sentinelEvery, &sentinelLook{shell: sh.id, seq: c.seq})
}

// sentinelSoon brings the next look near again when the command prints: a shell
// back at its prompt prints it.
func (s *service) sentinelSoon(ctx actor.Context, sh *shell, c *command) {
	if c.sentinelOwed && c.sentinelEvery > firstSentinelLook && c.sentinelTimer != nil && c.sentinelTimer.Stop() {
		c.sentinelEvery = firstSentinelLook
		c.sentinelTimer = s.after(ctx, c.sentinelEvery, &sentinelLook{shell: sh.id, seq: c.seq})
	}
}

// sentinelLook looks, off the mailbox, at who reads the shell's terminal.
func (s *service) sentinelLook(ctx actor.Context, m *sentinelLook) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.done || !sh.cmd.sentinelOwed {
		return
	}
	c := sh.cmd
	if c.outBytes == 0 {
		// The typed line has not come back: the shell may not have read it.
		c.sentinelTimer = s.after(ctx, c.sentinelEvery, &sentinelLook{shell: sh.id, seq: c.seq})
		return
	}
	self, system, pid := s.self, ctx.ActorSystem(), sh.pid
	looked := &sentinelLooked{shell: sh.id, seq: c.seq}
	go func() {
		looked.wait = pty.ForegroundInput(pid)
		system.Root.Send(self, looked)
	}()
}

// sentinelLooked types the sentinel once the shell itself reads its terminal, and
// otherwise looks again later.
func (s *service) sentinelLooked(ctx actor.Context, m *sentinelLooked) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.done || !sh.cmd.sentinelOwed {
		return
	}
	c := sh.cmd
	if m.wait.Waiting && m.wait.Pid == sh.pid {
		s.typeSentinel(ctx, sh, c)
		return
	}
	c.sentinelEvery = min(2*c.sentinelEvery, maxSentinelLook)
	c.sentinelTimer = s.after(ctx, c.sentinelEvery, &sentinelLook{shell: sh.id, seq: c.seq})
}

// typeSentinel types the line that makes the shell echo c's sentinel.
func (s *service) typeSentinel(ctx actor.Context, sh *shell, c *command) {
	c.sentinelOwed = false
	if c.sentinelTimer != nil {
		c.sentinelTimer.Stop()
	}
	ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: " " + integration.SentinelEcho(c.sentinel) + "\r"})
}
