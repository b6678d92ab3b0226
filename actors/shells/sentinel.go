package shells

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
)

// A command typed into a shell without marks has its sentinel owed, not typed,
// where the shell's foreground can be seen (a pseudoterminal, the shell's process
// known, the looks on): the line that echoes the sentinel is typed once the shell
// itself reads the terminal again (integration.ShellReadsAgain, paced by
// integration.PromptLooks), so that a command reading the terminal cannot read it.
// A command that reads the terminal meanwhile is the one seen reading, is answered
// as waiting for input, and reads only what somebody types. On pipes, or with the
// looks turned off, the sentinel is typed after the command as before.
//
// The looks start once the typed line has come back (integration.Echoed): before
// that, the shell seen reading may not have read the line.

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
		back  bool
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
	c.sentinelOwed, c.typedAt = true, time.Now()
	s.nextSentinelLook(ctx, sh, c)
}

func (s *service) nextSentinelLook(ctx actor.Context, sh *shell, c *command) {
	c.sentinelTimer = s.after(ctx, c.sentinelLooks.Next(), &sentinelLook{shell: sh.id, seq: c.seq})
}

// sentinelSoon brings the next look near again when the command prints: a shell
// back at its prompt prints it.
func (s *service) sentinelSoon(ctx actor.Context, sh *shell, c *command) {
	if c.sentinelOwed && c.sentinelLooks.Printed() && c.sentinelTimer != nil && c.sentinelTimer.Stop() {
		s.nextSentinelLook(ctx, sh, c)
	}
}

// sentinelLook looks, off the mailbox, whether the shell reads its terminal again.
func (s *service) sentinelLook(ctx actor.Context, m *sentinelLook) {
	sh := s.shells[m.shell]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != m.seq || sh.cmd.done || !sh.cmd.sentinelOwed {
		return
	}
	c := sh.cmd
	if !integration.Echoed(c.raw.String(), c.line) && time.Since(c.typedAt) < integration.EchoWait {
		s.nextSentinelLook(ctx, sh, c) // the shell may not have read the line yet
		return
	}
	self, system, pid := s.self, ctx.ActorSystem(), sh.pid
	looked := &sentinelLooked{shell: sh.id, seq: c.seq}
	go func() {
		looked.back = integration.ShellReadsAgain(pid)
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
	if !m.back {
		s.nextSentinelLook(ctx, sh, c)
		return
	}
	c.sentinelOwed = false
	ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: " " + integration.SentinelEcho(c.sentinel) + "\r"})
}
