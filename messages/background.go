package messages

import "encoding/json"

// Background work (PROTOCOL.md 8 "Background work (0.9.0)"): the chat lists the work
// that goes on outside its turns, such as a command an agent sent to the background,
// so a client can show it and offer to stop it. Only active work is listed; a row
// goes when its work ends.
//
// These are AHP 0.9.0 actions and state, and the host sends them to every client,
// whatever version it negotiated, as it sends `lifecycle` beside the flat
// `exitCode` and chat/error in both its shapes: an earlier client ignores an action
// type it does not know and a member it does not know (PROTOCOL.md 2.2;
// round-trip fixture 017-unknown-wire-keys-ignored).

// Action types of background work. Both are the server's: no client dispatches them.
const (
	ChatBackgroundWorkSet     = "chat/backgroundWorkSet"
	ChatBackgroundWorkRemoved = "chat/backgroundWorkRemoved"
)

// BackgroundKindShell is the kind of a shell command's background work.
const BackgroundKindShell = "shell"

// BackgroundShellWork is a shell command running in the background (state.schema.json
// BackgroundShellWork, 0.9.0). Kind is always written as "shell": the type says it.
type BackgroundShellWork struct {
	Kind string `json:"kind"`
	// ID names the row in its chat; a set with the same id replaces it.
	ID    string `json:"id"`
	Label string `json:"label"`
	// StartedAt is an ISO 8601 time.
	StartedAt string `json:"startedAt"`
	Command   string `json:"command"`
	// Terminal is the URI of the terminal showing the command's output; the spec
	// says it SHOULD be set whenever there is one.
	Terminal string         `json:"terminal,omitempty"`
	Meta     map[string]any `json:"_meta,omitempty"`
}

// MarshalJSON writes the row with its kind.
func (w BackgroundShellWork) MarshalJSON() ([]byte, error) {
	type fields BackgroundShellWork
	f := fields(w)
	f.Kind = BackgroundKindShell
	return json.Marshal(f)
}

// ChatBackgroundWorkSetAction lists a piece of background work on the chat, or
// replaces the row with its id.
type ChatBackgroundWorkSetAction struct {
	Work BackgroundShellWork `json:"work"`
}

// ChatBackgroundWorkRemovedAction takes a row off the chat's background work; an id
// not listed changes nothing.
type ChatBackgroundWorkRemovedAction struct {
	ID string `json:"id"`
}

func (a ChatBackgroundWorkSetAction) MarshalJSON() ([]byte, error) {
	type fields ChatBackgroundWorkSetAction
	return withMember("type", ChatBackgroundWorkSet, fields(a))
}

func (a ChatBackgroundWorkRemovedAction) MarshalJSON() ([]byte, error) {
	type fields ChatBackgroundWorkRemovedAction
	return withMember("type", ChatBackgroundWorkRemoved, fields(a))
}

func (ChatBackgroundWorkSetAction) ChatActionType() string     { return ChatBackgroundWorkSet }
func (ChatBackgroundWorkRemovedAction) ChatActionType() string { return ChatBackgroundWorkRemoved }

// HasBackgroundWork reports whether the chat lists background work with that id.
func (s ChatState) HasBackgroundWork(id string) bool {
	return object(s).list("backgroundWork").indexBy("id", id) >= 0
}

// backgroundWorkSet upserts the action's work by its id; work without a string id
// changes nothing.
func (s ChatState) backgroundWorkSet(a object) {
	work := a.obj("work")
	if _, ok := work["id"].(string); !ok {
		return
	}
	st := object(s)
	st["backgroundWork"] = []any(st.list("backgroundWork").upsertBy("id", work))
}

// backgroundWorkRemoved removes the row with the action's id; the list goes when it
// is empty, as the state lists only active work.
func (s ChatState) backgroundWorkRemoved(a object) {
	st := object(s)
	rows := st.list("backgroundWork")
	i := rows.indexBy("id", a["id"])
	if i < 0 {
		return
	}
	if rows = rows.without(i); len(rows) == 0 {
		delete(st, "backgroundWork")
	} else {
		st["backgroundWork"] = []any(rows)
	}
}
