package session

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages/toolterm"
)

// A `!` command typed into a shell without marks has its sentinel owed where its
// shell can be seen (its process known): the line that echoes the sentinel is typed
// once the shell itself reads its terminal again (integration.OwedSentinel), so that
// a command reading the terminal (head, apt-get's question, a REPL) reads only what
// a person types into it, and the turn ends when the command does instead of at its
// two minutes. On pipes the terminal is the pipe the shell reads, and the looks
// start once the command's line has been written to it (terminal.Written).

// oweSentinel starts the looks for the shell's prompt after r was typed without its
// sentinel into the shell with pid.
func (s *session) oweSentinel(ctx actor.Context, r *commandRun, pid int) {
	if r.isPty {
		r.owed = integration.Owe(r.sentinel, r.command, pid)
	} else {
		r.owed = integration.OweOnPipes(r.sentinel, r.command, pid)
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	r.owed.Start(r.toolCallID, func(m any) { system.Root.Send(self, m) })
}

// owing is the command whose sentinel a look's message is about, while it is still
// owed: a run not ended, owing that very sentinel.
func (s *session) owing(key any, owed *integration.OwedSentinel) *commandRun {
	id, _ := key.(string)
	if r := s.findRun(id); r != nil && r.owed != nil && r.owed == owed {
		return r
	}
	return nil
}

// written is told that a command's line has reached its shell's pipe: the looks
// for the shell's prompt may start.
func (s *session) written(m *terminal.Written) {
	chatURI, key, ok := toolterm.Parse(m.URI)
	if !ok || s.chats[chatURI] == nil {
		return
	}
	if r := s.chats[chatURI].runs[key]; r != nil && !r.done {
		r.owed.Wrote()
	}
}

// sentinelDue hands a due look back to its sentinel with what the command printed.
func (s *session) sentinelDue(m *integration.SentinelDue) {
	if r := s.owing(m.Key, m.Owed); r != nil {
		r.owed.Due(r.output.String())
	}
}

// sentinelLooked types the sentinel once the shell itself reads its terminal; its
// OwedSentinel otherwise looks again later.
func (s *session) sentinelLooked(ctx actor.Context, m *integration.SentinelLooked) {
	r := s.owing(m.Key, m.Owed)
	if r == nil {
		return
	}
	if line, ok := r.owed.Looked(m); ok {
		r.owed = nil
		ctx.Send(s.root, &terminal.Write{URI: r.terminal, Data: line})
	}
}
