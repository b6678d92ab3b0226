package session

import (
	"time"

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

type (
	// sentinelLook is time to look whether a command's shell is back at its prompt.
	sentinelLook struct{ toolCallID string }
	// sentinelLooked is what the look found.
	sentinelLooked struct {
		toolCallID string
		back       bool
	}
)

// oweSentinel starts the looks for the shell's prompt after r was typed without its
// sentinel into the shell with pid.
func (s *session) oweSentinel(ctx actor.Context, r *commandRun, pid int) {
	if r.isPty {
		r.owed = integration.Owe(r.sentinel, r.command, pid)
	} else {
		r.owed = integration.OweOnPipes(r.sentinel, r.command, pid)
	}
	s.nextSentinelLook(ctx, r)
}

// written is told that a command's line has reached its shell's pipe: the looks
// for the shell's prompt may start.
func (s *session) written(ctx actor.Context, m *terminal.Written) {
	chatURI, key, ok := toolterm.Parse(m.URI)
	if !ok || s.chats[chatURI] == nil {
		return
	}
	r := s.chats[chatURI].runs[key]
	if r == nil || r.done || r.owed == nil {
		return
	}
	if r.owed.Wrote() && r.lookTimer != nil && r.lookTimer.Stop() {
		s.nextSentinelLook(ctx, r)
	}
}

func (s *session) nextSentinelLook(ctx actor.Context, r *commandRun) {
	self, system, id := ctx.Self(), ctx.ActorSystem(), r.toolCallID
	r.lookTimer = time.AfterFunc(r.owed.Next(), func() { system.Root.Send(self, &sentinelLook{toolCallID: id}) })
}

// sentinelSoon looks now when the command prints after the looks drew apart (see
// the agent tools' own: a timer under a millisecond takes about one).
func (s *session) sentinelSoon(ctx actor.Context, r *commandRun) {
	if r.owed.Printed() && r.lookTimer != nil && r.lookTimer.Stop() {
		s.sentinelLook(ctx, &sentinelLook{toolCallID: r.toolCallID})
	}
}

func (s *session) sentinelLook(ctx actor.Context, m *sentinelLook) {
	r := s.findRun(m.toolCallID)
	if r == nil || r.owed == nil {
		return
	}
	if !r.owed.MayLook(r.output.String()) {
		s.nextSentinelLook(ctx, r)
		return
	}
	self, system, owed := ctx.Self(), ctx.ActorSystem(), r.owed
	go func() {
		system.Root.Send(self, &sentinelLooked{toolCallID: m.toolCallID, back: owed.Look()})
	}()
}

func (s *session) sentinelLooked(ctx actor.Context, m *sentinelLooked) {
	r := s.findRun(m.toolCallID)
	if r == nil || r.owed == nil {
		return
	}
	if !m.back {
		s.nextSentinelLook(ctx, r)
		return
	}
	line := r.owed.Line()
	r.owed = nil
	ctx.Send(s.root, &terminal.Write{URI: r.terminal, Data: line})
}
