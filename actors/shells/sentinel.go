package shells

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
)

// A command typed into a shell without marks has its sentinel owed, not typed,
// where the shell can be seen (its process known, the looks on): the line that
// echoes the sentinel is typed once the shell itself reads the terminal again
// (integration.OwedSentinel), so that a command reading the terminal cannot read
// it. A command that reads the terminal meanwhile is the one seen reading, is
// answered as waiting for input, and reads only what somebody types. On pipes the
// terminal is the pipe the shell reads, and the looks start once the command's
// line has been written to it (terminal.Written). With the looks turned off, or
// where /proc cannot be read (integration.SentinelsOwed), the sentinel is typed
// after the command as before.

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
	return !sh.marks && sh.pid > 0 && s.opts.InputPoll > 0 && integration.SentinelsOwed
}

// oweSentinel starts the looks for the shell's prompt after c was typed without
// its sentinel.
func (s *service) oweSentinel(ctx actor.Context, sh *shell, c *command) {
	if sh.isPty {
		c.owed = integration.Owe(c.sentinel, c.line, sh.pid)
	} else {
		c.owed = integration.OweOnPipes(c.sentinel, c.line, sh.pid)
	}
	s.nextSentinelLook(ctx, sh, c)
}

// written is told that a command's line has reached its shell's pipe: the looks
// for the shell's prompt may start.
func (s *service) written(ctx actor.Context, m *terminal.Written) {
	sh := s.byURI[m.URI]
	if sh == nil || sh.cmd == nil || sh.cmd.done || sh.cmd.owed == nil {
		return
	}
	if c := sh.cmd; c.owed.Wrote() && c.sentinelTimer != nil && c.sentinelTimer.Stop() {
		s.nextSentinelLook(ctx, sh, c)
	}
}

func (s *service) nextSentinelLook(ctx actor.Context, sh *shell, c *command) {
	c.sentinelTimer = s.after(ctx, c.owed.Next(), &sentinelLook{shell: sh.id, seq: c.seq})
}

// sentinelSoon looks now when the command prints after the looks drew apart: a
// shell back at its prompt prints it. Now, not after the first gap: in an idle Go
// process a timer under a millisecond takes about one (the poller sleeps in whole
// milliseconds), and the output is itself the news.
func (s *service) sentinelSoon(ctx actor.Context, sh *shell, c *command) {
	if c.owed.Printed() && c.sentinelTimer != nil && c.sentinelTimer.Stop() {
		s.sentinelLook(ctx, &sentinelLook{shell: sh.id, seq: c.seq})
	}
}

// owing is the command of a sentinel look or its answer, while its sentinel is owed.
func (s *service) owing(id string, seq int) (*shell, *command) {
	sh := s.shells[id]
	if sh == nil || sh.cmd == nil || sh.cmd.seq != seq || sh.cmd.done || sh.cmd.owed == nil {
		return nil, nil
	}
	return sh, sh.cmd
}

// sentinelLook looks, off the mailbox, whether the shell reads its terminal again.
func (s *service) sentinelLook(ctx actor.Context, m *sentinelLook) {
	sh, c := s.owing(m.shell, m.seq)
	if c == nil {
		return
	}
	if !c.owed.MayLook(c.raw.String()) {
		s.nextSentinelLook(ctx, sh, c)
		return
	}
	self, system, owed := s.self, ctx.ActorSystem(), c.owed
	looked := &sentinelLooked{shell: sh.id, seq: c.seq}
	go func() {
		looked.back = owed.Look()
		system.Root.Send(self, looked)
	}()
}

// sentinelLooked types the sentinel once the shell itself reads its terminal, and
// otherwise looks again later.
func (s *service) sentinelLooked(ctx actor.Context, m *sentinelLooked) {
	sh, c := s.owing(m.shell, m.seq)
	if c == nil {
		return
	}
	if !m.back {
		s.nextSentinelLook(ctx, sh, c)
		return
	}
	line := c.owed.Line()
	c.owed = nil
	ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: line})
}
