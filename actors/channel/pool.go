package channel

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Pool is a dispatcher for actors whose handling may block (a session, the root,
// a shell's owner): like protoactor's default, each burst of a mailbox runs on a
// goroutine apart from the sender, but the goroutine that ran a burst waits a
// moment for the next one instead of ending. A goroutine made per burst starts on
// a small stack and grows it again for every burst (a tenth of the host's CPU in a
// 1-session profile went to making goroutines and growing their stacks); a kept
// one has its stack already grown. A burst finds an idle goroutine or starts one,
// so no burst waits for another: the pool is as concurrent as the default.
type Pool struct {
	throughput int
	work       chan func()
}

// NewPool makes a pool dispatcher that runs up to throughput messages a burst.
func NewPool(throughput int) *Pool {
	return &Pool{throughput: throughput, work: make(chan func())}
}

// poolIdle is how long a goroutine of a Pool waits for another burst.
const poolIdle = 2 * time.Second

var _ actor.Dispatcher = (*Pool)(nil)

// Schedule runs fn on an idle goroutine of the pool, or on a new one.
func (p *Pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
	default:
		go p.run(fn)
	}
}

// Throughput is how many messages a mailbox handles a burst.
func (p *Pool) Throughput() int { return p.throughput }

func (p *Pool) run(fn func()) {
	idle := time.NewTimer(poolIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(poolIdle)
		select {
		case fn = <-p.work:
		case <-idle.C:
			return
		}
	}
}

// Pooled is the Pool the host's blocking actors share (sessions, the root, the
// shells' owners), as Inline is the dispatcher of the keystroke path's.
var Pooled = NewPool(300)
