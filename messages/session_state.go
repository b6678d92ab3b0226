package messages

import "encoding/json"

// SessionState is the state of a session channel (state.schema.json SessionState) as
// decoded JSON, for the reasons ChatState gives: a session carries what clients set
// and the host does not model (an active client's tools, a provider's _meta, config
// values), and every fold must keep it.
type SessionState map[string]any

// NewSessionState is the state of a session the host opened: ready, idle, with no
// chats yet.
func NewSessionState(provider, title string, workingDirectories []string) SessionState {
	dirs := make([]any, len(workingDirectories))
	for i, d := range workingDirectories {
		dirs[i] = d
	}
	return SessionState{
		"provider":           provider,
		"title":              title,
		"status":             float64(SessionStatusIdle),
		"lifecycle":          "ready",
		"activeClients":      []any{},
		"chats":              []any{},
		"workingDirectories": dirs,
	}
}

// Apply folds an action the host built into the session and returns its JSON, as it
// goes on the wire.
func (s SessionState) Apply(a SessionAction) (json.RawMessage, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	ReduceSession(s, generic)
	return raw, nil
}

// ActiveClient reports whether clientID is among the session's active clients.
func (s SessionState) ActiveClient(clientID string) bool {
	return object(s).list("activeClients").indexBy("clientId", clientID) >= 0
}

// Title is the session's title.
func (s SessionState) Title() string { return object(s).str("title") }

// SetDefaultChat names the chat a client opens first, unless one is named already.
// The host sets it without an action: session/chatAdded carries no default, and
// clients read it from the snapshot.
func (s SessionState) SetDefaultChat(chat string) {
	if _, ok := s["defaultChat"]; !ok {
		s["defaultChat"] = chat
	}
}

// Clone is a deep copy, for a snapshot encoded while the session goes on changing.
func (s SessionState) Clone() SessionState {
	c, _ := cloneJSON(s).(map[string]any)
	return c
}

// SessionStatus is the status bitset of a session or a chat (state.schema.json
// SessionStatus; upstream channels-session/state.ts): one activity, and flags.
type SessionStatus int64

// SessionStatus activities (bits 0 to 4, one at a time) and flags.
const (
	SessionStatusIdle        SessionStatus = 1
	SessionStatusError       SessionStatus = 1 << 1
	SessionStatusInProgress  SessionStatus = 1 << 3
	SessionStatusInputNeeded SessionStatus = 1<<3 | 1<<4
	SessionStatusIsRead      SessionStatus = 1 << 5
	SessionStatusIsArchived  SessionStatus = 1 << 6

	sessionStatusActivityMask SessionStatus = 1<<5 - 1
)

// updateStatus sets the status member to what change makes of it, writing it only
// when it changes (or was not there).
func (o object) updateStatus(change func(old SessionStatus) SessionStatus) {
	old, had := asNumber(o["status"])
	status := change(SessionStatus(old))
	if !had || SessionStatus(old) != status {
		o["status"] = float64(status)
	}
}

// setStatusFlag sets or clears one flag of the status member.
func (o object) setStatusFlag(flag SessionStatus, set bool) {
	o.updateStatus(func(old SessionStatus) SessionStatus {
		if set {
			return old | flag
		}
		return old &^ flag
	})
}

// ReduceSession folds one session action, decoded JSON, into a session state in
// place. Unknown action types change nothing.
func ReduceSession(state SessionState, action map[string]any) {
	if state == nil || action == nil {
		return
	}
	a := ownAction(action)
	st := object(state)
	switch a.str("type") {
	case SessionChatAdded:
		// Upsert by summary.resource.
		if summary := a.obj("summary"); summary != nil {
			st["chats"] = []any(st.list("chats").upsertBy("resource", summary))
		}
	case SessionChatRemoved:
		state.chatRemoved(a["chat"])
	case SessionChatUpdated:
		state.chatUpdated(a["chat"], a.obj("changes"))
	case SessionDefaultChatChanged:
		st.set("defaultChat", a["defaultChat"])
	case SessionTitleChanged:
		if title, ok := a["title"].(string); ok {
			st["title"] = title
		}
	case SessionWorkingDirectorySet:
		st.addMember("workingDirectories", a["directory"])
	case SessionWorkingDirectoryRemoved:
		st.removeMember("workingDirectories", a["directory"])
	case SessionReady:
		st["lifecycle"] = "ready"
	case SessionCreationFailed:
		st["lifecycle"] = "creationFailed"
		st.set("creationError", a["error"])
	case SessionActivityChanged:
		st.set("activity", a["activity"])
	case SessionIsReadChanged:
		st.setStatusFlag(SessionStatusIsRead, a["isRead"] == true)
	case SessionIsArchivedChanged:
		st.setStatusFlag(SessionStatusIsArchived, a["isArchived"] == true)
	case SessionMetaChanged:
		st.set("_meta", a["_meta"])
	case SessionServerToolsChanged:
		st.set("serverTools", a["tools"])
	case SessionActiveClientSet:
		// Upsert by activeClient.clientId.
		if client := a.obj("activeClient"); client != nil {
			st["activeClients"] = []any(st.list("activeClients").upsertBy("clientId", client))
		}
	case SessionActiveClientRemoved:
		clients := st.list("activeClients")
		if i := clients.indexBy("clientId", a["clientId"]); i >= 0 {
			st["activeClients"] = []any(clients.without(i))
		}
	case SessionConfigChanged:
		state.configChanged(a.obj("config"), a["replace"] == true)
	}
}

// chatRemoved drops a chat's summary, and the default-chat hint when it named it.
func (s SessionState) chatRemoved(chat any) {
	st := object(s)
	chats := st.list("chats")
	i := chats.indexBy("resource", chat)
	if i < 0 {
		return
	}
	st["chats"] = []any(chats.without(i))
	if sameString(st["defaultChat"], chat) {
		delete(st, "defaultChat")
	}
}

// chatUpdated merges changes into a chat's summary.
func (s SessionState) chatUpdated(chat any, changes object) {
	chats := object(s).list("chats")
	i := chats.indexBy("resource", chat)
	if i < 0 {
		return
	}
	entry := asObject(chats[i])
	for k, v := range changes {
		if k == "resource" { // identity never changes; senders must omit it
			continue
		}
		entry.set(k, v)
	}
}

// configChanged merges (or with replace, replaces) the config's values. As
// root/configChanged: nothing without a config to change.
func (s SessionState) configChanged(changes object, replace bool) {
	config := object(s).obj("config")
	if config == nil || changes == nil {
		return
	}
	values := map[string]any{}
	if !replace {
		for k, v := range config.obj("values") {
			values[k] = v
		}
	}
	for k, v := range changes {
		values[k] = v
	}
	config["values"] = values
}
