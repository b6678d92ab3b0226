package session

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/terminal"
)

// A session that runs `!` commands keeps one spare shell: started ahead, at its
// prompt by the time the next command comes, and adopted by that command's terminal
// (terminal.Create.Spare), which then skips the shell's start. One per session, not
// a pool of the host's: a spare must be the very shell the command would get (the
// session's shell, its working folder, the host's environment, the default size),
// and those are the session's; a session that never runs a command has none, and
// one that runs them back to back needs no more than one, since the next spare
// starts as soon as this one is adopted, while the command runs and is kept.
//
// A spare is no terminal until its command's terminal adopts it: nothing is listed
// and no client sees it. It is ended when the session stops (disposed, or the host
// shutting down), and a spare that no longer fits (the session's folder changed)
// is ended by the terminal that was offered it, which starts a shell of its own.

// spareReady brings a started spare into the mailbox; the session answers
// spareTaken, so that a spare whose session is gone (the request goes to dead
// letters) is ended by the goroutine that started it.
type spareReady struct{ spare *terminal.Spare }

type spareTaken struct{}

// startSpare starts a spare shell for commands made like create, off the mailbox,
// unless the session has one or is starting one.
func (s *session) startSpare(ctx actor.Context, create *terminal.Create) {
	if s.cfg.Prestart == nil || s.closed || s.disposed || s.spare != nil || s.sparing {
		return
	}
	s.sparing = true
	m := &terminal.Create{Cwd: create.Cwd, Cols: create.Cols, Rows: create.Rows, Spec: create.Spec}
	prestart, self, system, logger := s.cfg.Prestart, ctx.Self(), ctx.ActorSystem(), s.cfg.Logger
	go func() {
		sp, err := prestart(m)
		if err != nil {
			logger.Debug("no spare shell", "session", self.Id, "err", err)
			sp = nil
		}
		_, err = system.Root.RequestFuture(self, &spareReady{spare: sp}, channel.RequestTimeout).Result()
		if err != nil && sp != nil {
			sp.Release()
		}
	}()
}

func (s *session) spareReady(ctx actor.Context, m *spareReady) {
	s.sparing = false
	ctx.Respond(&spareTaken{})
	if m.spare == nil {
		return
	}
	if s.closed || s.disposed || s.spare != nil {
		go m.spare.Release()
		return
	}
	s.spare = m.spare
	s.armIdle(ctx)
}

// takeSpare hands the spare, if any, to a command's terminal.
func (s *session) takeSpare() *terminal.Spare {
	sp := s.spare
	s.spare = nil
	return sp
}

// dropSpare ends the spare, if any.
func (s *session) dropSpare() {
	if sp := s.takeSpare(); sp != nil {
		go sp.Release()
	}
}
