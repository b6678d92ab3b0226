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
	self, system := s.self, ctx.ActorSystem()
	c.owed.Start(sh.id, func(m any) { system.Root.Send(self, m) })
}

// owing is the command whose sentinel a look's message is about, while it is still
// owed: the shell's current command, not ended, owing that very sentinel.
func (s *service) owing(key any, owed *integration.OwedSentinel) (*shell, *command) {
	id, _ := key.(string)
	sh := s.shells[id]
	if sh == nil || sh.cmd == nil || sh.cmd.done || sh.cmd.owed == nil || sh.cmd.owed != owed {
		return nil, nil
	}
	return sh, sh.cmd
}

// written is told that a command's line has reached its shell's pipe: the looks
// for the shell's prompt may start.
func (s *service) written(m *terminal.Written) {
	if sh := s.byURI[m.URI]; sh != nil && sh.cmd != nil && !sh.cmd.done {
		sh.cmd.owed.Wrote()
	}
}

// sentinelDue hands a due look back to its sentinel with what the command printed.
func (s *service) sentinelDue(m *integration.SentinelDue) {
	if _, c := s.owing(m.Key, m.Owed); c != nil {
		c.owed.Due(c.raw.String())
	}
}

// sentinelLooked types the sentinel once the shell itself reads its terminal; its
// OwedSentinel otherwise looks again later.
func (s *service) sentinelLooked(ctx actor.Context, m *integration.SentinelLooked) {
	sh, c := s.owing(m.Key, m.Owed)
	if c == nil {
		return
	}
	if line, ok := c.owed.Looked(m); ok {
		c.owed = nil
		ctx.Send(s.spec.Root, &terminal.Write{URI: sh.uri, Data: line})
	}
}
