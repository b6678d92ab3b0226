package messages

import "encoding/json"

// Action types of a session channel (actions.schema.json Session*Action).
const (
	SessionChatAdded               = "session/chatAdded"
	SessionChatRemoved             = "session/chatRemoved"
	SessionChatUpdated             = "session/chatUpdated"
	SessionDefaultChatChanged      = "session/defaultChatChanged"
	SessionTitleChanged            = "session/titleChanged"
	SessionWorkingDirectorySet     = "session/workingDirectorySet"
	SessionWorkingDirectoryRemoved = "session/workingDirectoryRemoved"
	SessionReady                   = "session/ready"
	SessionCreationFailed          = "session/creationFailed"
	SessionActivityChanged         = "session/activityChanged"
	SessionIsReadChanged           = "session/isReadChanged"
	SessionIsArchivedChanged       = "session/isArchivedChanged"
	SessionMetaChanged             = "session/metaChanged"
	SessionServerToolsChanged      = "session/serverToolsChanged"
	SessionActiveClientSet         = "session/activeClientSet"
	SessionActiveClientRemoved     = "session/activeClientRemoved"
	SessionConfigChanged           = "session/configChanged"
)

// SessionAction is an action of a session channel the host builds; like a
// ChatAction, it writes its own `type`.
type SessionAction interface {
	json.Marshaler
	// SessionActionType is the action's type, one of the Session* constants.
	SessionActionType() string
}

// ChatSummary is a chat's entry in its session's list (state.schema.json ChatSummary).
type ChatSummary struct {
	Resource   string        `json:"resource"`
	Title      string        `json:"title"`
	Status     SessionStatus `json:"status"`
	ModifiedAt string        `json:"modifiedAt"`
}

// SessionChatAddedAction lists a chat in its session.
type SessionChatAddedAction struct {
	Summary ChatSummary `json:"summary"`
}

// SessionChatRemovedAction takes a chat off its session's list.
type SessionChatRemovedAction struct {
	Chat string `json:"chat"`
}

// SessionActiveClientRemovedAction takes a client off the session's active clients:
// the host sends it when a client's connection went and it did not come back.
type SessionActiveClientRemovedAction struct {
	ClientID string `json:"clientId"`
}

// SessionTitleChangedAction renames a session.
type SessionTitleChangedAction struct {
	Title string `json:"title"`
}

func (a SessionChatAddedAction) MarshalJSON() ([]byte, error) {
	type fields SessionChatAddedAction
	return withMember("type", SessionChatAdded, fields(a))
}

func (a SessionChatRemovedAction) MarshalJSON() ([]byte, error) {
	type fields SessionChatRemovedAction
	return withMember("type", SessionChatRemoved, fields(a))
}

func (a SessionTitleChangedAction) MarshalJSON() ([]byte, error) {
	type fields SessionTitleChangedAction
	return withMember("type", SessionTitleChanged, fields(a))
}

func (a SessionActiveClientRemovedAction) MarshalJSON() ([]byte, error) {
	type fields SessionActiveClientRemovedAction
	return withMember("type", SessionActiveClientRemoved, fields(a))
}

func (SessionActiveClientRemovedAction) SessionActionType() string {
	return SessionActiveClientRemoved
}
func (SessionChatAddedAction) SessionActionType() string    { return SessionChatAdded }
func (SessionChatRemovedAction) SessionActionType() string  { return SessionChatRemoved }
func (SessionTitleChangedAction) SessionActionType() string { return SessionTitleChanged }
