package root

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
)

// The root's sessions: making, listing, restoring and disposing them, and handing a
// message for a chat to the session that holds it. The catalog a root subscriber
// hears (root/sessionAdded and the rest) goes out from here.

// forwardToChat forwards the message being handled to the session holding chat, and
// reports whether there is one; what goes nowhere is logged at debug level.
func (h *rootActor) forwardToChat(ctx actor.Context, chat string) bool {
	pid := h.chats[chat]
	if pid == nil {
		h.opts.Logger.Debug("no chat for a session message; dropped", "chat", chat, "message", fmt.Sprintf("%T", ctx.Message()))
		return false
	}
	ctx.Forward(pid)
	return true
}

func (h *rootActor) createChat(ctx actor.Context, m *session.CreateChat) {
	pid := h.sessions[m.Session]
	if pid == nil {
		if h.toCluster(ctx, m.Session) {
			return
		}
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionNotFound, "No session %s on this host", m.Session)})
		return
	}
	if m.Chat != "" && (h.chats[m.Chat] != nil || h.entries[m.Chat] != nil || h.sessions[m.Chat] != nil) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeAlreadyExists, "Channel already exists: %s", m.Chat)})
		return
	}
	ctx.Forward(pid)
}

// chatsOf takes a session's word for which chats it holds now.
func (h *rootActor) chatsOf(ctx actor.Context, m *session.ChatsOf) {
	for uri, pid := range h.chats {
		if pid.Id == h.sessions[m.Session].GetId() {
			delete(h.chats, uri)
		}
	}
	if pid := h.sessions[m.Session]; pid != nil {
		for _, c := range m.Chats {
			h.chats[c] = pid
		}
	}
	h.sessionsMoved(ctx)
}

func (h *rootActor) disposeSession(ctx actor.Context, m *session.Dispose) {
	pid := h.sessions[m.URI]
	if pid == nil {
		if h.toCluster(ctx, m.URI) {
			return
		}
		ctx.Respond(&session.Result{})
		return
	}
	delete(h.sessions, m.URI)
	delete(h.summaries, m.URI)
	h.released(ctx, m.URI)
	defer h.sessionsMoved(ctx)
	for uri, p := range h.chats {
		if p.Id == pid.Id {
			delete(h.chats, uri)
		}
	}
	ctx.Forward(pid)
	h.tellCatalog("root/sessionRemoved", map[string]any{"channel": messages.RootURI, "session": m.URI})
}

// isSessionURI says uri names a session itself (ahp-session:/<id>), not a chat or
// anything else under one.
func isSessionURI(uri string) bool {
	id, ok := strings.CutPrefix(uri, "ahp-session:/")
	return ok && id != "" && !strings.Contains(id, "/")
}

// sessionOf is the session actor that answers for a session, chat or command terminal
// URI, or nil.
func (h *rootActor) sessionOf(uri string) *actor.PID {
	if pid := h.sessions[uri]; pid != nil {
		return pid
	}
	if pid := h.chats[uri]; pid != nil {
		return pid
	}
	if chat, _, ok := toolterm.Parse(uri); ok {
		return h.chats[chat]
	}
	return nil
}

func (h *rootActor) createSession(ctx actor.Context, m *session.Create) {
	if h.sessions[m.URI] != nil || h.remoteSession(m.URI) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "Session already exists: %s", m.URI)})
		return
	}
	if _, remote := h.remoteURIs[m.URI]; h.entries[m.URI] != nil || h.chats[m.URI] != nil || remote || h.remoteChat(m.URI) {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeInvalidParams, "%s is already a channel here", m.URI)})
		return
	}
	if h.placeSessionInCluster(ctx, m) {
		return
	}
	agent := m.Agent
	if agent == session.HostProvider && !slices.Contains(h.opts.agents(), agent) {
		agent = "" // the provider of a session without an agent
	}
	if agent != "" && !slices.Contains(h.opts.agents(), agent) {
		ctx.Respond(&session.Result{Err: messages.Errorf(session.CodeProviderNotFound, "No agent %q on this host; the agents are listed on root state (agents)", m.Agent)})
		return
	}
	if h.reserveFirst(ctx, m.URI, func() { h.createSession(ctx, m) }, func() {
		ctx.Respond(&session.Result{Err: messages.Errorf(messages.CodeSessionAlreadyExists, "Session already exists: %s", m.URI)})
	}) {
		return
	}
	rec := persistence.SessionRecord{URI: m.URI, WorkingDirectories: m.WorkingDirectories, Created: time.Now(), Agent: agent, Creator: m.By}
	pid := ctx.Spawn(session.NewProps(h.opts.sessionConfig(h.journal), rec, false))
	h.sessions[m.URI] = pid
	h.chats[m.URI+"/chat"] = pid
	ctx.Respond(&session.Result{Chat: m.URI + "/chat"})
	// Every root subscriber that may read sessions hears of it (root/sessionAdded),
	// with the summary listSessions would give: a client keeps its session list from
	// listSessions and these, and never asks again while it is connected.
	ctx.ReenterAfter(ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second), func(res any, err error) {
		if summary, ok := res.(map[string]any); ok && err == nil && h.sessions[m.URI] == pid {
			summary = h.withNodeSummary(summary)
			h.tellCatalog("root/sessionAdded", map[string]any{"channel": messages.RootURI, "summary": summary})
			if h.clustered() {
				h.summaries[m.URI] = summary
				h.sessionsMoved(ctx)
			}
		}
	})
}

// tellCatalog sends a notification of the session catalog to the root's subscribers
// that may read sessions (each connection knows whether its person may).
func (h *rootActor) tellCatalog(method string, params map[string]any) {
	frame, err := messages.NotificationFrame(method, params)
	if err != nil {
		h.opts.Logger.Warn("a session catalog notification could not be encoded", "method", method, "err", err)
		return
	}
	for s := range h.subs {
		if c, ok := s.(delivery.CatalogSubscriber); ok {
			c.DeliverCatalog(frame)
		}
	}
}

// restoreSessions brings back the sessions the store kept: a session whose turns are
// all commands has no transcript anywhere else (seed: "Who opens one").
func (h *rootActor) restoreSessions(ctx actor.Context) {
	records, problems := h.opts.Store.Sessions()
	for _, err := range problems {
		h.opts.Logger.Warn("a kept session could not be read", "err", err)
	}
	for _, rec := range records {
		pid := ctx.Spawn(session.NewProps(h.opts.sessionConfig(h.journal), rec, true))
		h.sessions[rec.URI] = pid
		for _, c := range rec.Chats {
			h.chats[c] = pid
		}
		if h.clustered() {
			// The other nodes list it once its summary is known.
			uri := rec.URI
			ctx.ReenterAfter(ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second), func(res any, err error) {
				if summary, ok := res.(map[string]any); ok && err == nil && h.sessions[uri] == pid {
					h.summaries[uri] = h.withNodeSummary(summary)
					h.sessionsMoved(ctx)
				}
			})
		}
	}
	if h.clustered() {
		h.publishTerminals(ctx) // the other nodes hear of the chats kept here
	}
}

func (h *rootActor) listSessions(ctx actor.Context) {
	futures := make([]*actor.Future, 0, len(h.sessions))
	for _, pid := range h.sessions {
		futures = append(futures, ctx.RequestFuture(pid, &session.SummaryQuery{}, 5*time.Second))
	}
	sender := ctx.Sender()
	system := ctx.ActorSystem()
	// Another node's sessions are listed as it last told this one, each naming its
	// node, after this node's own.
	remote, node := h.remoteSummaries(), h.withNodeSummary
	go func() {
		items := []map[string]any{}
		for _, f := range futures {
			if res, err := f.Result(); err == nil {
				if m, ok := res.(map[string]any); ok {
					items = append(items, node(m))
				}
			}
		}
		system.Root.Send(sender, append(items, remote...))
	}()
}

// disposing reports whether a terminal the root let go of is still ending.
func (h *rootActor) disposing(ctx actor.Context) bool {
	for _, c := range ctx.Children() {
		if !h.isSession(c) {
			return true
		}
	}
	return false
}

func (h *rootActor) isSession(pid *actor.PID) bool {
	for _, p := range h.sessions {
		if p.Id == pid.Id {
			return true
		}
	}
	return false
}

// sessionsClosed says every session has ended its commands for a shutdown.
type sessionsClosed struct{}
