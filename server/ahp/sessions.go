package ahp

import (
	"encoding/json"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
)

// The session and chat requests a connection answers: each is checked against the
// sign-in's grants, then asked of the session that holds it (askSession).

// createSessionParams are createSession's: Provider names the agent behind the
// session, one of root state's `agents` ("" for none: its turns are `!` commands).
type createSessionParams struct {
	Channel            string   `json:"channel"`
	WorkingDirectories []string `json:"workingDirectories"`
	Provider           string   `json:"provider"`
	Meta               struct {
		// Node names the cluster node to run the session (its terminals and agent)
		// on, as createTerminal's does; a host alone ignores it.
		Node string `json:"node"`
	} `json:"_meta"`
}

func (c *connection) createSession(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createSessionParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	if err := limits.CheckURI(p.Channel); err != nil || !strings.HasPrefix(p.Channel, "ahp-session:") {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: channel must be an ahp-session: URI"))
		return
	}
	c.askSession(ctx, id, &session.Create{URI: p.Channel, WorkingDirectories: p.WorkingDirectories, Agent: p.Provider, By: c.cfg.Principal.User,
		Node: p.Meta.Node, Anywhere: true, Who: c.cfg.Principal})
}

type createChatParams struct {
	Channel string `json:"channel"`
	Chat    string `json:"chat"`
}

func (c *connection) createChat(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createChatParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	for _, uri := range []string{p.Channel, p.Chat} {
		if uri == "" {
			continue
		}
		if err := limits.CheckURI(uri); err != nil {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %v", err))
			return
		}
	}
	c.askSession(ctx, id, &session.CreateChat{Session: p.Channel, Chat: p.Chat, Who: c.cfg.Principal})
}

func (c *connection) disposeSession(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if !c.admit(id, auth.GrantChatSend, raw, &p) {
		return
	}
	c.askSession(ctx, id, &session.Dispose{URI: p.Channel, Who: c.cfg.Principal})
}

// askSession sends a session request to the host and answers with its result: null,
// or {chat} for a create.
func (c *connection) askSession(ctx actor.Context, id json.RawMessage, m any) {
	c.askSessionAnswering(ctx, id, m, nil)
}

// askSessionAnswering is askSession whose success, with no chat to name, answers done
// (a command whose result the schema makes an object answers {}, not null).
func (c *connection) askSessionAnswering(ctx actor.Context, id json.RawMessage, m any, done any) {
	f := ctx.RequestFuture(c.cfg.Root, m, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		r, ok := res.(*session.Result)
		switch {
		case err != nil || !ok:
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: no answer from the session"))
		case r.Err != nil:
			c.fail(id, r.Err)
		case r.Chat != "":
			c.reply(id, map[string]any{"chat": r.Chat})
		default:
			c.reply(id, done)
		}
	})
}

func (c *connection) listSessions(ctx actor.Context, id json.RawMessage) {
	// The list shows sessions' titles (a session of commands is titled by its first
	// command), so it is read with the grant that reads a session.
	if grant := auth.ReadGrant("ahp-session:"); !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return
	}
	f := ctx.RequestFuture(c.cfg.Root, &session.List{}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		items, ok := res.([]map[string]any)
		if err != nil || !ok {
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: no session list"))
			return
		}
		c.reply(id, map[string]any{"items": items})
	})
}

// disposeChat ends a chat: its channel is the chat's URI.
func (c *connection) disposeChat(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	if !c.cfg.Principal.Can(auth.GrantChatSend) {
		c.fail(id, c.refusal(auth.GrantChatSend))
		return
	}
	var p subscribeParams
	if e := decodeParams(raw, &p); e != nil {
		c.fail(id, e)
		return
	}
	c.askSession(ctx, id, &session.DisposeChat{Chat: p.Channel, Who: c.cfg.Principal})
}

// stopBackgroundWorkParams are vscode/stopBackgroundWork's: the chat (or, as every
// other method names it, the channel) and the row's id. VS Code's own shape is not
// published (PROTOCOL.md 8), so members it may send beside them are ignored.
type stopBackgroundWorkParams struct {
	Chat    string `json:"chat"`
	Channel string `json:"channel"`
	ID      string `json:"id"`
}

// stopBackgroundWork stops a row of a chat's backgroundWork: the same ^C a person at
// the terminal would type, so it needs terminal:input. It answers null once the stop
// went to the work's owner; the row goes when the work ends.
func (c *connection) stopBackgroundWork(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p stopBackgroundWorkParams
	if !c.admit(id, auth.GrantTerminalInput, raw, &p) {
		return
	}
	chat := p.Chat
	switch {
	case chat == "":
		chat = p.Channel
	case p.Channel != "" && p.Channel != chat:
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: chat and channel name different chats"))
		return
	}
	if chat == "" || p.ID == "" {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: the chat's URI (chat) and the background work's id (id) are required"))
		return
	}
	if err := limits.CheckURI(chat); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: chat: %v", err))
		return
	}
	c.askSession(ctx, id, &session.StopBackgroundWork{Chat: chat, ID: p.ID, Who: c.cfg.Principal})
}

type fetchTurnsParams struct {
	Channel string `json:"channel"`
	Cursor  string `json:"cursor"`
}

// fetchTurns asks a chat to page its older turns into its state: the session
// dispatches chat/turnsLoaded to the chat's subscribers, then this answers {}.
func (c *connection) fetchTurns(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p fetchTurnsParams
	if e := decodeOnChannel(raw, &p, &p.Channel); e != nil {
		c.fail(id, e)
		return
	}
	if grant := auth.ReadGrant(p.Channel); !c.may(grant) {
		c.fail(id, c.refusal(grant))
		return
	}
	c.askSessionAnswering(ctx, id, &session.FetchTurns{Chat: p.Channel, Cursor: p.Cursor, Who: c.cfg.Principal}, struct{}{})
}
