package root

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
)

// The root's terminals: each one's entry (its actor and its row on the list), making
// and disposing them, and what the root hears of them as they start, change and end.

// terminalEntry is a terminal the root holds: its actor and its row on the list.
type terminalEntry struct {
	pid  *actor.PID
	info messages.TerminalInfo
	// encoded is info as it goes into the list (rootlist.go).
	encoded json.RawMessage
	listed  bool
}

// terminalSupervisor keeps a Terminal whose Receive panicked: its state is what the
// clients see, so the message that failed is dropped and the actor resumes.
func terminalSupervisor() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(reason interface{}) actor.Directive {
		return actor.ResumeDirective
	})
}

// forwardToTerminal forwards the message being handled to the terminal of uri, and
// reports whether there is one.
func (h *rootActor) forwardToTerminal(ctx actor.Context, uri string) bool {
	e := h.entries[uri]
	if e == nil {
		return false
	}
	ctx.Forward(e.pid)
	return true
}

// disposeTerminal takes the terminal off the registry and the list before the
// answer goes, then lets it end its process.
func (h *rootActor) disposeTerminal(ctx actor.Context, m *terminal.Dispose) {
	if e := h.entries[m.URI]; e != nil {
		h.unregister(ctx, m.URI, e)
		ctx.Send(e.pid, m)
	} else if h.toCluster(ctx, m.URI) {
		return
	}
	ctx.Respond(&terminal.DisposeResult{})
}

// startFailed answers the create of a terminal whose process could not be started,
// and stops it. It goes off the registry first: the client that hears of the
// failure may ask for the channel at once.
func (h *rootActor) startFailed(ctx actor.Context, m *terminal.StartFailed) {
	if e := h.entries[m.URI]; e != nil && e.pid.Id == m.Terminal.Id {
		h.unregister(ctx, m.URI, e)
	}
	ctx.Send(m.Waiter, &terminal.CreateResult{Err: m.Err})
	ctx.Stop(m.Terminal)
}

func (h *rootActor) row(ctx actor.Context, m *terminal.Row) {
	e := h.entries[m.Info.Resource]
	if e == nil || e.pid.Id != m.PID.Id {
		return
	}
	info := h.withNode(m.Info)
	e.info, e.encoded, e.listed = info, encodeRow(info), true
	h.publishTerminals(ctx)
}

// terminated takes a terminal that stopped off the registry and the list.
func (h *rootActor) terminated(ctx actor.Context, m *actor.Terminated) {
	if uri, ok := h.byActor[m.Who.Id]; ok {
		if e := h.entries[uri]; e != nil && e.pid.Id == m.Who.Id {
			h.unregister(ctx, uri, e)
		}
	}
}

func (h *rootActor) unregister(ctx actor.Context, uri string, e *terminalEntry) {
	delete(h.entries, uri)
	delete(h.byActor, e.pid.Id)
	h.released(ctx, uri)
	h.removeOrder(uri)
	if e.listed {
		h.publishTerminals(ctx)
	}
}

// removeOrder takes uri out of the list's order. It is linear in the terminals: a
// thousand disposed one by one cost about a million string compares in all, far less
// than the lists their disposal sends.
func (h *rootActor) removeOrder(uri string) {
	for i, u := range h.order {
		if u == uri {
			h.order = append(h.order[:i], h.order[i+1:]...)
			return
		}
	}
}

func (h *rootActor) create(ctx actor.Context, m *terminal.Create) {
	// A spare shell offered to a terminal that is not made here is ended.
	spawned := false
	if m.Spare != nil {
		defer func() {
			if !spawned {
				go m.Spare.Release()
			}
		}()
	}
	if m.URI == messages.RootURI {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInvalidParams, "Invalid params: %s is the root channel", m.URI)})
		return
	}
	_, taken := h.entries[m.URI]
	_, remote := h.remoteURIs[m.URI]
	if taken || remote {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeAlreadyExists, "Terminal already exists: %s", m.URI)})
		return
	}
	if h.sessions[m.URI] != nil || h.chats[m.URI] != nil {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeInvalidParams, "%s is a session or chat here, not a terminal", m.URI)})
		return
	}
	// A terminal a tool result names cannot be opened as a shell of a client's own.
	if _, _, named := toolterm.Parse(m.URI); named && m.Watcher == nil {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "%s names a command's terminal; it cannot be created", m.URI)})
		return
	}
	if h.placeInCluster(ctx, m) || h.refuseWhileDraining(ctx, m) {
		return
	}
	if m.Watcher == nil && m.Spare == nil && h.reserveFirst(ctx, m.URI, func() { h.create(ctx, m) }, func() {
		ctx.Respond(&terminal.CreateResult{Err: messages.Errorf(messages.CodeAlreadyExists, "Terminal already exists: %s", m.URI)})
	}) {
		return
	}
	props := terminal.NewProps(h.opts.terminalConfig(h.journal), m, h.defaultShell())
	// The name carries a number of its own: a terminal disposed under the same URI
	// may still be winding down, or gone with its Terminated not yet here, and a
	// reused actor id would make that Terminated, or a connection's cached actor,
	// stand for the new terminal.
	h.spawned++
	pid, err := ctx.SpawnNamed(props, fmt.Sprintf("terminal-%s-%d", sanitizeName(m.URI), h.spawned))
	if err != nil {
		pid = ctx.Spawn(props)
	}
	ctx.Watch(pid)
	h.entries[m.URI] = &terminalEntry{pid: pid}
	h.byActor[pid.Id] = m.URI
	h.order = append(h.order, m.URI)
	spawned = true
	ctx.Forward(pid)
}

// defaultShell is the root config's defaultShell where this machine can run it.
func (h *rootActor) defaultShell() string {
	if s, _ := h.root.Config.Values[ConfigDefaultShell].(string); s != "" && isExecutable(s) {
		return s
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
