package session

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/session/shellpool"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
)

// A `!` command's shell sits on at its prompt once its command is done, so that a
// person who opens the call's terminal finds it live and can go on in it. A session
// that lives for days makes thousands of commands, though, and a bash left behind
// by each would pile up: every later turn then runs beside all of them (the root's
// list of terminals, a process table to scan at each end). What a person opens
// later is served just as well from what was kept of it: a tool call's terminal
// whose process is gone opens rebuilt, exited, from the output kept when its
// command ended (the seed's retained terminal). So the session keeps live only the
// shells a person may still be about to use:
//
//   - the newest Config.LiveShells (4) shells of its commands that nobody has used
//     since their command ended; an older one is retired (disposed) as a newer one
//     joins them;
//   - none of those, nor its spares, once no command has come for
//     Config.ShellIdle: a session idle for a while holds no bash;
//   - every shell somebody used after its command: typed into, resized, claimed,
//     or that ran another command (a person's), which is theirs now and stays
//     until its chat or the session goes, as before.
//
// Only a shell whose command ended at its prompt (its end mark, or its sentinel
// line) is retired: what was kept of it is then exactly what it showed. One whose
// command timed out, opened the alternate screen or went to the background has a
// command still in it, and stays.

// shellsIdle: Config.ShellIdle may have passed since the session's last command.
type shellsIdle struct{}

// shellAtPrompt lists the terminal of a command that ended at its prompt as idle,
// and retires the oldest beyond Config.LiveShells.
func (s *session) shellAtPrompt(ctx actor.Context, c *chat, uri string) {
	for _, old := range s.shells.AtPrompt(shellpool.Shell{Chat: c.uri, URI: uri}) {
		s.retire(ctx, old)
	}
	s.armIdle(ctx)
}

// retire ends an idle shell and takes its terminal off the root's list; its call
// still opens it, rebuilt from what was kept.
func (s *session) retire(ctx actor.Context, sh shellpool.Shell) {
	if c := s.chats[sh.Chat]; c != nil {
		for i, u := range c.shells {
			if u == sh.URI {
				c.shells = append(c.shells[:i], c.shells[i+1:]...)
				break
			}
		}
	}
	ctx.Send(s.root, &terminal.Dispose{URI: sh.URI})
}

// usedBy says whether an action on a command's shell after its command is
// somebody using the shell, which is then theirs and stays.
func usedBy(a *messages.Action) bool {
	switch a.Type {
	case messages.TerminalInput, messages.TerminalResized, messages.TerminalClaimed, messages.TerminalCommandExecuted:
		return true
	}
	return false
}

// armIdle makes sure the idle check runs while there is a spare or an idle shell
// to end.
func (s *session) armIdle(ctx actor.Context) {
	if s.idleTimer != nil || !s.shells.Holding() {
		return
	}
	s.armIdleIn(ctx, s.shells.IdleLeft(time.Now()))
}

func (s *session) armIdleIn(ctx actor.Context, d time.Duration) {
	self, system := ctx.Self(), ctx.ActorSystem()
	s.idleTimer = time.AfterFunc(max(d, 0), func() { system.Root.Send(self, &shellsIdle{}) })
}

// checkIdle ends the spares and the idle shells once no command has come for
// Config.ShellIdle, or looks again when one has come meanwhile.
func (s *session) checkIdle(ctx actor.Context) {
	s.idleTimer = nil
	if left := s.shells.IdleLeft(time.Now()); left > 0 {
		if s.shells.Holding() {
			s.armIdleIn(ctx, left)
		}
		return
	}
	spares, idle := s.shells.Expire()
	for _, sp := range spares {
		go sp.Release()
	}
	for _, sh := range idle {
		s.retire(ctx, sh)
	}
}

// stopIdle stops the idle check (the session is stopping).
func (s *session) stopIdle() {
	if s.idleTimer != nil {
		s.idleTimer.Stop()
		s.idleTimer = nil
	}
}
