// Package channel holds the messages every channel actor answers, whatever its kind
// (the root list, a terminal, a session or a chat): subscribe, unsubscribe and a
// client's dispatch, and the host's shutdown. A connection speaks to any channel
// through them alone.
//
// Every message is sent as a pointer and never changed after it is sent; a byte
// slice in a message belongs to the receiver.
package channel

import (
	"encoding/json"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// RequestTimeout bounds a wait on another actor; createTerminal waits for a listing,
// which takes up to ten seconds.
const RequestTimeout = 30 * time.Second

// Subscribe asks a channel actor for its snapshot and registers Sub for every action
// after it. The answer is a *SubscribeResult.
type Subscribe struct {
	Channel string
	Sub     delivery.Subscriber
	// Turns is a chat subscriber's view.turns: about how many of the newest
	// completed turns its snapshot should hold at least. Nil asks for every turn
	// the host keeps, as a subscribe without a view does.
	Turns *int
}

// SubscribeResult answers Subscribe: a snapshot, or an error for the client.
type SubscribeResult struct {
	Snapshot *messages.Snapshot
	Err      *messages.Error
	// Terminal is the answering terminal's own actor, set only by a live terminal: a
	// connection dispatches its terminal/* actions there directly, not through the
	// root, whose one mailbox would otherwise carry every keystroke of every client.
	Terminal *actor.PID
}

// Unsubscribe stops a subscriber's stream on a channel.
type Unsubscribe struct {
	Channel string
	Sub     delivery.Subscriber
}

// Dispatch is a client's dispatchAction, already decoded. Raw is the action as the
// client sent it, echoed back unchanged when accepted. Sub is the sender's queue, for
// a rejection that goes to the sender alone. By is the signed-in user who sent it
// ("" for nobody): whose turn a chat/turnStarted is. Principal is who that is, as
// the connection checked it: a cluster node carries it to the node that acts.
type Dispatch struct {
	Channel   string
	Action    *messages.Action
	Raw       json.RawMessage
	Origin    messages.Origin
	Sub       delivery.Subscriber
	By        string
	Principal auth.Principal
}

// Reject echoes d to its sender alone with the reason it was refused.
func (d *Dispatch) Reject(journal *delivery.Journal, reason string) {
	journal.Reject(d.Sub, d.Channel, d.Raw, d.Origin, reason)
}

// Shutdown ends what a channel actor runs; the answer (*ShutdownDone) comes once
// every process has been ended and reaped, and what must be kept is written.
type Shutdown struct{}

// ShutdownDone answers Shutdown.
type ShutdownDone struct{}

// Inline is the dispatcher of the actors on a keystroke's path (a connection and a
// terminal): their mailbox runs on the goroutine that finds it idle (a socket's
// reader with a frame, a pty's reader with a chunk) instead of waking a goroutine of
// its own for every message, a hand-off that costs several microseconds on a small
// VM (issue 13). The mailbox is the same, so messages are still handled one at a
// time and in order. It suits only an actor whose Receive never blocks: whoever runs
// the mailbox is held as long as the handling takes.
var Inline = actor.NewSynchronizedDispatcher(300)
