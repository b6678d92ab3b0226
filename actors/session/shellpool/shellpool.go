// Package shellpool keeps the account of one session's `!` command shells that run
// no command: the spares started ahead for its next commands, and the shells left
// at their prompt that nobody has used since their command. It says how many spares
// to start, which one a command gets, which idle shells to retire, and when the
// session has gone long enough without a command to end them all. Starting,
// ending and timing them is the session actor's, which owns its pool: a pool is
// not safe for use by several goroutines.
package shellpool

import (
	"sync"
	"time"
)

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
	budget     *Budget // shared with the host's other sessions; nil: none
}

// New is a pool keeping up to spares spares, live idle shells, and either only
// until idleFor has passed without a command. Its spares, ready or being started,
// are also counted against budget, which the host's sessions share (nil: no bound
// but the pool's own).
func New[S Releaser](spares, live int, idleFor time.Duration, budget *Budget) *Pool[S] {
	return &Pool[S]{want: spares, live: live, idleFor: idleFor, budget: budget}
}

// Budget bounds the spares all of a host's sessions hold at once, ready or being
// started. A spare only hides a shell's start from the person waiting when the
// machine has a core free to start it ahead; once more sessions run commands than
// the machine has cores, every command's shell costs the same CPU whether it
// started ahead or not, and the spares beyond one a turn are bashes started for
// nothing (50 sessions that each start two at their first command start 100 at
// once, beside the 50 commands' own). Sessions that find the budget spent start
// their commands' shells with the command, as without spares, and ask again at
// their next command. A Budget is safe for use by several goroutines.
type Budget struct {
	mu          sync.Mutex
	held, limit int
}

// NewBudget is a budget of limit spares (limit ≤ 0: none at all).
func NewBudget(limit int) *Budget { return &Budget{limit: max(limit, 0)} }

// take grants up to n spares, and says how many.
func (b *Budget) take(n int) int {
	if b == nil {
		return n
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, b.limit-b.held)
	if n < 0 {
		n = 0
	}
	b.held += n
	return n
}

// give returns n spares' grants.
func (b *Budget) give(n int) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// Held is how many spares the budget's pools hold, ready or being started.
func (b *Budget) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Commanded notes that a command started at now.
func (p *Pool[S]) Commanded(now time.Time) { p.last = now }

// ToStart is how many spares to start now to have the pool's number ready or being
// started; they count as being started from now on, until Started hears of each.
func (p *Pool[S]) ToStart() int {
	n := p.budget.take(max(p.want-len(p.spares)-p.starting, 0))
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
		p.budget.give(1)
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
	p.budget.give(1) // a command's shell now, no spare
	return s, true
}

// DropSpares takes every spare out of the pool, for the caller to release.
func (p *Pool[S]) DropSpares() []S {
	s := p.spares
	p.spares = nil
	p.budget.give(len(s))
	return s
}

// Stop takes every spare out of the pool, for the caller to release, and gives
// the budget back the spares still being started too: their session is stopping,
// and will not hear of them (the goroutine starting each releases it).
func (p *Pool[S]) Stop() []S {
	s := p.DropSpares()
	p.budget.give(p.starting)
	p.budget = nil
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
	p.budget.give(len(spares))
	return spares, idle
}
