package root

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
)

// Drain makes the root refuse every new terminal from now on; the answer, a
// *Drained, comes once no shell of this host runs any more (each terminal exited or
// gone). `serve --drain` sends it on SIGTERM and waits for the answer up to a
// deadline before shutting down.
type Drain struct{}

// Drained answers Drain.
type Drained struct{}

// drainRefusal is the sentence a create gets on a draining host.
const drainRefusal = "This host is draining: it starts nothing new and ends once its shells have; open the terminal on another node"

func (h *rootActor) drain(ctx actor.Context) {
	h.draining = true
	h.drainWaiters = append(h.drainWaiters, ctx.Sender())
	h.checkDrained(ctx)
}

// refuseWhileDraining answers a create on a draining host, and reports whether it did.
// On a cluster node it is asked only for a create placed here.
func (h *rootActor) refuseWhileDraining(ctx actor.Context, m *terminal.Create) bool {
	if !h.draining {
		return false
	}
	ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInternalError, "%s", drainRefusal)})
	return true
}

// checkDrained answers the drain once every terminal of this host has exited.
func (h *rootActor) checkDrained(ctx actor.Context) {
	if !h.draining || len(h.drainWaiters) == 0 {
		return
	}
	for _, e := range h.entries {
		if !e.listed || e.info.Lifecycle == nil || e.info.Lifecycle.Status != messages.StatusExited {
			return
		}
	}
	for _, w := range h.drainWaiters {
		ctx.Send(w, &Drained{})
	}
	h.drainWaiters = nil
}
