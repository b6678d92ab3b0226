package session

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

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

// idleShell is a command's shell at its prompt that nobody has used since.
type idleShell struct {
	chat, uri string
}

// shellsIdle: Config.ShellIdle may have passed since the session's last command.
type shellsIdle struct{}

// shellAtPrompt lists the terminal of a command that ended at its prompt as idle,
// and retires the oldest beyond Config.LiveShells.
func (s *session) shellAtPrompt(ctx actor.Context, c *chat, uri string) {
	s.idle = append(s.idle, idleShell{chat: c.uri, uri: uri})
	for len(s.idle) > s.cfg.LiveShells {
		old := s.idle[0]
		s.idle = s.idle[1:]
		s.retire(ctx, old)
	}
	s.armIdle(ctx)
}

// retire ends an idle shell and takes its terminal off the root's list; its call
// still opens it, rebuilt from what was kept.
func (s *session) retire(ctx actor.Context, sh idleShell) {
	if c := s.chats[sh.chat]; c != nil {
		for i, u := range c.shells {
			if u == sh.uri {
				c.shells = append(c.shells[:i], c.shells[i+1:]...)
				break
			}
		}
	}
	ctx.Send(s.root, &terminal.Dispose{URI: sh.uri})
}

// used takes a shell off the idle list once somebody uses it after its command:
// it is theirs, and stays.
func (s *session) used(uri string, a *messages.Action) {
	if !usedBy(a) {
		return
	}
	for i, sh := range s.idle {
		if sh.uri == uri {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			return
		}
	}
}

// usedBy says whether an action on a command's shell after its command is
// somebody using the shell.
func usedBy(a *messages.Action) bool {
	switch a.Type {
	case messages.TerminalInput, messages.TerminalResized, messages.TerminalClaimed, messages.TerminalCommandExecuted:
		return true
	}
	return false
}

// forgetShells drops a chat's shells from the idle list (the chat is going, and
// ends them itself).
func (s *session) forgetShells(c *chat) {
	kept := s.idle[:0]
	for _, sh := range s.idle {
		if sh.chat != c.uri {
			kept = append(kept, sh)
		}
	}
	s.idle = kept
}

// armIdle makes sure the idle check runs while there is a spare or an idle shell
// to end.
func (s *session) armIdle(ctx actor.Context) {
	if s.idleTimer != nil || (len(s.spares) == 0 && len(s.idle) == 0) {
		return
	}
	s.armIdleIn(ctx, s.cfg.ShellIdle-time.Since(s.lastCommand))
}

func (s *session) armIdleIn(ctx actor.Context, d time.Duration) {
	self, system := ctx.Self(), ctx.ActorSystem()
	s.idleTimer = time.AfterFunc(max(d, 0), func() { system.Root.Send(self, &shellsIdle{}) })
}

// checkIdle ends the spares and the idle shells once no command has come for
// Config.ShellIdle, or looks again when one has come meanwhile.
func (s *session) checkIdle(ctx actor.Context) {
	s.idleTimer = nil
	if left := s.cfg.ShellIdle - time.Since(s.lastCommand); left > 0 {
		if len(s.spares) > 0 || len(s.idle) > 0 {
			s.armIdleIn(ctx, left)
		}
		return
	}
	s.dropSpare()
	for _, sh := range s.idle {
		s.retire(ctx, sh)
	}
	s.idle = nil
}

// stopIdle stops the idle check (the session is stopping).
func (s *session) stopIdle() {
	if s.idleTimer != nil {
		s.idleTimer.Stop()
		s.idleTimer = nil
	}
}
