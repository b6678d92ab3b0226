package session

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/terminal"
)

// A session that runs `!` commands keeps spare shells (Config.Spares, two by
// default): started ahead, at their prompt by the time a command comes, and
// adopted by that command's terminal (terminal.Create.Spare), which then skips the
// shell's start. The session's own, not a pool of the host's: a spare must be the
// very shell the command would get (the session's shell, its working folder, the
// host's environment, the default size), and those are the session's; a session
// that never runs a command has none. A new spare starts as soon as one is
// adopted, while the command runs and is kept; with commands back to back a bash
// under load takes about as long to start as a turn takes, so with one spare the
// next command often found it still starting, and with two each has two turns.
// All the host's sessions together hold no more than Config.SpareBudget allows
// (shellpool.Budget): on a machine busy with more sessions than cores, a spare
// hides nothing, and starting two for each session is CPU spent for nothing.
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

// startSpare starts spare shells for commands made like create, off the mailbox,
// until the session has Config.Spares of them, ready or being started.
func (s *session) startSpare(ctx actor.Context, create *terminal.Create) {
	if s.cfg.Prestart == nil || s.closed || s.disposed {
		return
	}
	for range s.shells.ToStart() {
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
}

func (s *session) spareReady(ctx actor.Context, m *spareReady) {
	ctx.Respond(&spareTaken{})
	if s.closed || s.disposed {
		s.shells.Started(nil, false)
		if m.spare != nil {
			go m.spare.Release()
		}
		return
	}
	if !s.shells.Started(m.spare, m.spare != nil) {
		if m.spare != nil {
			go m.spare.Release()
		}
		return
	}
	s.armIdle(ctx)
}

// takeSpare hands the oldest spare, if any, to a command's terminal: the one most
// likely at its prompt by now.
func (s *session) takeSpare() *terminal.Spare {
	sp, _ := s.shells.Take()
	return sp
}

// dropSpare ends the spares, if any.
func (s *session) dropSpare() {
	for _, sp := range s.shells.DropSpares() {
		go sp.Release()
	}
}
