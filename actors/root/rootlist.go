package root

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/messages"
)

// The root list goes out whole with every change (PROTOCOL.md 5.3: root/terminalsChanged
// carries the full list). With hundreds of live shells, encoding that list again for
// every terminal that opens was a fifth of the host's CPU; so each terminal's row is
// encoded once, when it changes (terminalEntry.encoded), and a broadcast only joins
// the rows. The list is made only when it goes out, at most once a window, and the
// window widens with its size (below).

// encodeRow is a terminal's row as it goes into the list; nil when it does not
// encode, which terminalsChangedJSON then encodes again (and fails the same way
// messages.EncodeAction does).
func encodeRow(info messages.TerminalInfo) json.RawMessage {
	b, err := json.Marshal(info)
	if err != nil {
		return nil
	}
	return b
}

// terminalsChangedJSON is root/terminalsChanged carrying infos, encoded as
// messages.EncodeAction encodes it, from rows[i], infos[i] encoded (encodeRow).
func terminalsChangedJSON(infos []messages.TerminalInfo, rows []json.RawMessage) json.RawMessage {
	const head = `{"type":"` + messages.RootTerminalsChanged + `","terminals":[`
	n := len(head) + 2
	for _, r := range rows {
		n += len(r) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(head)
	for i, r := range rows {
		if r == nil {
			r = messages.EncodeAction(&messages.Action{Type: messages.RootTerminalsChanged, Terminals: &[]messages.TerminalInfo{infos[i]}})
			r = r[len(head) : len(r)-2]
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// rootWindow throttles root/terminalsChanged. It carries the whole list (PROTOCOL.md
// 5.3), so a burst of changes - a thousand terminals opened at once - would send a
// thousand ever longer lists to every root subscriber, quadratic in the burst. The
// first change after a quiet window goes at once; the changes after it within the
// window go as one list at its end. A snapshot is taken from the entries as they are
// at that moment, whether or not their list has gone out yet.
const rootWindow = 10 * time.Millisecond

// A list of many terminals widens the window, so the lists a root subscriber is
// sent stay within rootListRate bytes a second up to rootWindowMax: at every change
// on a host of a thousand shells, 10 ms apart, a browser would be handed a quarter
// of a megabyte a hundred times a second.
const (
	rootListRate  = 4 << 20 // bytes a second
	rootWindowMax = 250 * time.Millisecond
)

// listWindow is the window after a list of size bytes went out.
func listWindow(size int) time.Duration {
	w := time.Duration(size) * time.Second / rootListRate
	return min(max(w, rootWindow), rootWindowMax)
}

// rootFlush is the throttle's timer firing.
type rootFlush struct{}

func (h *rootActor) publishTerminals(ctx actor.Context) {
	if h.clustered() {
		// The other nodes hear of this node's rows as they change (clusterList).
		h.root.Terminals = h.listTerminals(ctx)
	} else {
		h.listStale = true
	}
	h.checkDrained(ctx)
	if h.rootTimer != nil {
		return // the list goes, as it is then, when the window ends
	}
	if wait := max(h.rootSpacing, rootWindow) - time.Since(h.rootSent); wait > 0 {
		self, system := ctx.Self(), ctx.ActorSystem()
		h.rootTimer = time.AfterFunc(wait, func() { system.Root.Send(self, &rootFlush{}) })
		return
	}
	h.sendTerminals()
}

// listTerminals makes the root list from the listed entries, in order, and (in a
// cluster) the other nodes' rows after them. The list is new: a snapshot that holds
// an older one keeps it as it was.
func (h *rootActor) listTerminals(ctx actor.Context) *[]messages.TerminalInfo {
	list := make([]messages.TerminalInfo, 0, len(h.order))
	var encoded []json.RawMessage
	if h.clustered() {
		encoded = make([]json.RawMessage, 0, len(h.order))
	}
	for _, uri := range h.order {
		if e := h.entries[uri]; e != nil && e.listed {
			list = append(list, e.info)
			if encoded != nil {
				encoded = append(encoded, e.encoded)
			}
		}
	}
	list = h.clusterList(ctx, list, encoded)
	return &list
}

// freshenList brings root.Terminals up to the entries where a change left it stale
// (only ever on one node, where the list needs no context to make).
func (h *rootActor) freshenList() {
	if h.listStale {
		h.root.Terminals = h.listTerminals(nil)
		h.listStale = false
	}
}

// sendTerminals broadcasts the root list as this actor's root state holds it now.
func (h *rootActor) sendTerminals() {
	if h.rootTimer != nil {
		h.rootTimer.Stop()
		h.rootTimer = nil
	}
	h.rootSent = time.Now()
	h.freshenList()
	if h.root.Terminals == nil {
		a := &messages.Action{Type: messages.RootTerminalsChanged}
		h.deliver(h.journal.StampReplacing(&messages.Envelope{Channel: messages.RootURI, Action: messages.EncodeAction(a)}))
		return
	}
	// The list as publishTerminals last made it: the listed entries, in order.
	infos := *h.root.Terminals
	rows := make([]json.RawMessage, len(infos))
	for i, info := range infos {
		if e := h.entries[info.Resource]; e != nil && e.listed {
			rows[i] = e.encoded
		} else {
			rows[i] = h.remoteURIs[info.Resource]
		}
	}
	// Each list replaces the one before it, in the replay ring too.
	frame := h.journal.StampReplacing(&messages.Envelope{Channel: messages.RootURI, Action: terminalsChangedJSON(infos, rows)})
	h.rootSpacing = listWindow(len(frame))
	h.deliver(frame)
}
