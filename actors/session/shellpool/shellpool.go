// Package shellpool keeps the account of one session's `!` command shells that run
// no command: the spares started ahead for its next commands, and the shells left
// at their prompt that nobody has used since their command. It says how many spares
// to start, which one a command gets, which idle shells to retire, and when the
// session has gone long enough without a command to end them all. Starting,
// ending and timing them is the session actor's, which owns its pool: a pool is
// not safe for use by several goroutines.
package shellpool

import "time"

// Releaser is a spare shell: Release ends it.
type Releaser interface{ Release() }

// Shell is a command's shell at its prompt: its chat and its terminal.
type Shell struct{ Chat, URI string }

// Pool is one session's spares of type S and idle shells.
type Pool[S Releaser] struct {
	spares   []S // ready, oldest first
	starting int // being started
	idle     []Shell
	last     time.Time // the last command's start

	want, live int
	idleFor    time.Duration
}

// New is a pool keeping up to spares spares, live idle shells, and either only
// until idleFor has passed without a command.
func New[S Releaser](spares, live int, idleFor time.Duration) *Pool[S] {
	return &Pool[S]{want: spares, live: live, idleFor: idleFor}
}

// Commanded notes that a command started at now.
func (p *Pool[S]) Commanded(now time.Time) { p.last = now }

// ToStart is how many spares to start now to have the pool's number ready or being
// started; they count as being started from now on, until Started hears of each.
func (p *Pool[S]) ToStart() int {
	n := max(p.want-len(p.spares)-p.starting, 0)
	p.starting += n
	return n
}

// Starting reports whether a spare is being started.
func (p *Pool[S]) Starting() bool { return p.starting > 0 }

// Started takes a spare whose start ended (ok false: it failed). It reports whether
// the pool kept it; one it did not keep is the caller's to release.
func (p *Pool[S]) Started(s S, ok bool) bool {
	p.starting--
	if !ok || len(p.spares) >= p.want {
		return false
	}
	p.spares = append(p.spares, s)
	return true
}

// Take hands out the oldest spare, the one most likely at its prompt by now.
func (p *Pool[S]) Take() (S, bool) {
	var none S
	if len(p.spares) == 0 {
		return none, false
	}
	s := p.spares[0]
	p.spares[0] = none
	p.spares = p.spares[1:]
	return s, true
}

// DropSpares takes every spare out of the pool, for the caller to release.
func (p *Pool[S]) DropSpares() []S {
	s := p.spares
	p.spares = nil
	return s
}

// AtPrompt lists a command's shell left at its prompt as idle, and returns the
// oldest idle shells beyond the pool's number, to retire.
func (p *Pool[S]) AtPrompt(sh Shell) (retire []Shell) {
	p.idle = append(p.idle, sh)
	if over := len(p.idle) - p.live; over > 0 {
		retire = append(retire, p.idle[:over]...)
		p.idle = append(p.idle[:0:0], p.idle[over:]...)
	}
	return retire
}

// Used takes a shell off the idle list: somebody used it after its command, so it
// is theirs, and stays.
func (p *Pool[S]) Used(uri string) {
	for i, sh := range p.idle {
		if sh.URI == uri {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return
		}
	}
}

// ForgetChat drops a chat's shells from the idle list (the chat is going, and ends
// them itself).
func (p *Pool[S]) ForgetChat(chat string) {
	kept := p.idle[:0]
	for _, sh := range p.idle {
		if sh.Chat != chat {
			kept = append(kept, sh)
		}
	}
	p.idle = kept
}

// Holding reports whether the pool holds a spare or an idle shell: something an
// idle session would end.
func (p *Pool[S]) Holding() bool { return len(p.spares) > 0 || len(p.idle) > 0 }

// IdleLeft is how long, from now, until the session has gone the pool's idle time
// without a command (0 or less: it has).
func (p *Pool[S]) IdleLeft(now time.Time) time.Duration { return p.idleFor - now.Sub(p.last) }

// Expire empties the pool: the spares to release and the idle shells to retire.
func (p *Pool[S]) Expire() ([]S, []Shell) {
	spares, idle := p.spares, p.idle
	p.spares, p.idle = nil, nil
	return spares, idle
}
