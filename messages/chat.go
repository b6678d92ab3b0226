package messages

import "encoding/json"

// Chat and session reducers (PROTOCOL.md 8; actions.schema.json Chat*Action and
// Session*Action; state.schema.json ChatState, SessionState).
//
// The host builds the actions it sends from the typed values of chat_actions.go and
// session_actions.go; the reducers fold them, and the clients' own, as decoded JSON:
// see ChatState for why the state stays JSON.
//
// The rules are the reference reducer's (upstream types/channels-chat/reducer.ts and
// channels-session/reducer.ts), with these choices where it was silent or moved on:
//
//   - chat/turnStarted while another turn is active puts the new turn in activeTurn
//     and drops the one that was there, as every client's reducer does; the seed's
//     words for a ! command sent during a turn are that it "takes the running turn's
//     place in every client's state". The displaced turn is not moved into turns:
//     no client would have it there, and a snapshot must equal the fold of the
//     actions a client saw.
//   - chat/turnStarted is a no-op when its turnId is the active turn's or a completed
//     turn's (the 2026-09 rule in PROTOCOL.md 8).
//   - chat/error takes its ErrorInfo from the 1.x `part: {kind:'error', error}` or
//     from the <=0.8 `error`, and stores it as the turn's `error` (the 0.8 Turn shape;
//     a 1.x client turns that into a final error part when it reads a snapshot).
//   - `status` (the SessionStatus bitset on ChatState) is kept in step as the
//     reference does: its activity bits follow the active turn and its blocking tool
//     calls, and chat/turnStarted clears IsRead. `modifiedAt` is the host's to set:
//     the reference stamps it from the clock, which no two parties share.
//   - Every action that names a turn changes nothing unless that turn is the active
//     one, and every tool-call action changes nothing unless the call is in a state
//     the action may leave.

// ChatState is the state of a chat channel (state.schema.json ChatState) as decoded
// JSON: map[string]any, []any, string, bool, float64 or json.Number, nil, as
// encoding/json decodes them.
//
// It stays JSON rather than a struct because the chat carries what clients send and
// the host does not model: a message's attachments, model, agent or a provider's
// _meta, a 1.x addition on a tool call. Every one of them must survive every fold and
// come back in a snapshot, which a struct with no place for them would lose; and the
// chat surface still moves between protocol versions. Its methods are the questions
// the host asks of it.
type ChatState map[string]any

// NewChatState is an idle chat with no turns.
func NewChatState(resource, title, modifiedAt string) ChatState {
	return ChatState{
		"resource":   resource,
		"title":      title,
		"status":     float64(SessionStatusIdle),
		"modifiedAt": modifiedAt,
		"turns":      []any{},
	}
}

// Apply folds an action the host built into the chat and returns its JSON, as it goes
// on the wire.
func (s ChatState) Apply(a ChatAction) (json.RawMessage, error) {
	return s.ApplyKnowing(a, nil)
}

// ApplyKnowing is Apply asking had, as ReduceChatKnowing does, whether the chat has
// had a turn with an id.
func (s ChatState) ApplyKnowing(a ChatAction, had func(turnID string) bool) (json.RawMessage, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	ReduceChatKnowing(s, generic, had)
	return raw, nil
}

// SetModifiedAt dates the chat's last change (an ISO 8601 time).
func (s ChatState) SetModifiedAt(at string) { s["modifiedAt"] = at }

// ModifiedAt is the date of the chat's last change.
func (s ChatState) ModifiedAt() string { return object(s).str("modifiedAt") }

// TurnCount is how many completed turns the chat holds.
func (s ChatState) TurnCount() int { return len(object(s).list("turns")) }

// ActiveTurnID is the id of the turn running now, or "".
func (s ChatState) ActiveTurnID() string { return object(s).obj("activeTurn").str("id") }

// FirstQueued is the queued message next in line, if any.
func (s ChatState) FirstQueued() (id string, msg Message, ok bool) {
	queued := object(s).list("queuedMessages")
	if len(queued) == 0 {
		return "", nil, false
	}
	first := asObject(queued[0])
	return first.str("id"), Message(first.obj("message")), true
}

// AppendTurn adds a finished turn after the others, as the host rebuilds one it kept.
func (s ChatState) AppendTurn(t Turn) {
	object(s)["turns"] = append([]any(object(s).list("turns")), cloneJSON(t))
}

// TerminalContent is the terminal block naming uri in the newest tool call with the
// id toolCallID, among the chat's turns and its active turn.
func (s ChatState) TerminalContent(toolCallID, uri string) (TerminalContent, bool) {
	st := object(s)
	turns := append(list(nil), st.list("turns")...)
	if at := st.obj("activeTurn"); at != nil {
		turns = append(turns, map[string]any(at))
	}
	var found object
	for _, t := range turns {
		for _, p := range asObject(t).list("responseParts") {
			tc := asObject(p).obj("toolCall")
			if tc == nil || tc.str("toolCallId") != toolCallID {
				continue
			}
			for _, b := range tc.list("content") {
				if block := asObject(b); block.str("type") == ContentTerminal && block.str("resource") == uri {
					found = block
				}
			}
		}
	}
	if found == nil {
		return TerminalContent{}, false
	}
	var tc TerminalContent
	raw, err := json.Marshal(found)
	if err != nil || json.Unmarshal(raw, &tc) != nil {
		return TerminalContent{}, false
	}
	return tc, true
}

// TurnIDs are the ids of the completed turns the chat holds, oldest first.
func (s ChatState) TurnIDs() []string {
	turns := object(s).list("turns")
	ids := make([]string, len(turns))
	for i, t := range turns {
		ids[i] = asObject(t).str("id")
	}
	return ids
}

// DropOldestTurns takes the n oldest completed turns out of the chat, as the host
// does with turns a store keeps once no client is shown them, and sets the cursor
// that pages them back in ("" for none).
func (s ChatState) DropOldestTurns(n int, cursor string) {
	st := object(s)
	turns := st.list("turns")
	n = min(max(n, 0), len(turns))
	st["turns"] = append([]any(nil), turns[n:]...)
	s.SetTurnsCursor(cursor)
}

// SetTurnsCursor sets the cursor that pages older turns in, or clears it ("").
func (s ChatState) SetTurnsCursor(cursor string) {
	if cursor == "" {
		delete(s, "turnsNextCursor")
		return
	}
	s["turnsNextCursor"] = cursor
}

// TurnsCursor is the cursor that pages older turns in: "" when the state holds every
// turn the host keeps.
func (s ChatState) TurnsCursor() string { return object(s).str("turnsNextCursor") }

// Clone is a deep copy, for a snapshot encoded while the chat goes on changing.
func (s ChatState) Clone() ChatState {
	c, _ := cloneJSON(s).(map[string]any)
	return c
}

// Turn states (state.schema.json TurnState).
const (
	TurnStateComplete  = "complete"
	TurnStateCancelled = "cancelled"
	TurnStateError     = "error"
)

// Tool call statuses (state.schema.json ToolCallStatus).
const (
	callStreaming                 = "streaming"
	callPendingConfirmation       = "pending-confirmation"
	callRunning                   = "running"
	callAuthRequired              = "auth-required"
	callPendingResultConfirmation = "pending-result-confirmation"
	callCompleted                 = "completed"
	callCancelled                 = "cancelled"
)

// ReduceChat folds one chat action, decoded JSON, into a chat state in place. Unknown
// action types change nothing. The state keeps copies of what it takes from the
// action; a value of another Go type inside it is stored in its generic JSON form.
func ReduceChat(state ChatState, action map[string]any) {
	ReduceChatKnowing(state, action, nil)
}

// ReduceChatKnowing folds action as ReduceChat does, but asks had whether the chat has
// had a turn with a chat/turnStarted's id (such a fold changes nothing, PROTOCOL.md 8)
// instead of looking through every turn the state holds. It is for a producer that
// keeps the ids of its chat's turns, so that starting a turn costs the same in a chat
// holding 10,000 turns as in a new one. had must answer true for every turn the state
// holds; nil looks through them.
func ReduceChatKnowing(state ChatState, action map[string]any, had func(turnID string) bool) {
	if state == nil || action == nil {
		return
	}
	a := ownAction(action)
	s := state
	switch a.str("type") {
	// Turn lifecycle.
	case ChatTurnStarted:
		s.turnStarted(a, had)
	case ChatTurnComplete:
		s.endTurn(a, TurnStateComplete, nil)
	case ChatTurnCancelled:
		s.endTurn(a, TurnStateCancelled, nil)
	case ChatError:
		s.endTurn(a, TurnStateError, errorInfoOf(a))

	// Streaming content of the active turn.
	case ChatResponsePart:
		if at := s.activeTurn(a); at != nil && a["part"] != nil {
			at["responseParts"] = append([]any(at.list("responseParts")), a["part"])
		}
	case ChatDelta:
		s.appendToPart(a, "markdown")
	case ChatReasoning:
		s.appendToPart(a, "reasoning")
	case ChatUsage:
		if at := s.activeTurn(a); at != nil {
			at.set("usage", a["usage"])
		}

	// Tool calls.
	case ChatToolCallStart:
		s.toolCallStart(a)
	case ChatToolCallDelta:
		s.updateToolCall(a, toolCall.delta)
	case ChatToolCallReady:
		s.moveToolCall(a, toolCall.ready)
	case ChatToolCallConfirmed:
		s.moveToolCall(a, toolCall.confirmed)
	case ChatToolCallContentChanged:
		s.updateToolCall(a, toolCall.contentChanged)
	case ChatToolCallComplete:
		s.moveToolCall(a, toolCall.complete)
	case ChatToolCallResultConfirmed:
		s.moveToolCall(a, toolCall.resultConfirmed)
	case ChatToolCallAuthRequired:
		s.moveToolCall(a, toolCall.authRequired)
	case ChatToolCallAuthResolved:
		s.moveToolCall(a, toolCall.authResolved)

	// Pending messages.
	case ChatPendingMessageSet:
		s.pendingMessageSet(a)
	case ChatPendingMessageRemoved:
		s.pendingMessageRemoved(a.str("kind"), a.str("id"))
	case ChatQueuedMessagesReordered:
		s.queuedMessagesReordered(a)

	// Chat-wide fields.
	case ChatActivityChanged:
		object(s).set("activity", a["activity"])
	case ChatDraftChanged:
		object(s).set("draft", a["draft"])
	case ChatWorkingDirectorySet:
		object(s).addMember("workingDirectories", a["directory"])
	case ChatWorkingDirectoryRemoved:
		object(s).removeMember("workingDirectories", a["directory"])

	// History paged in (fetchTurns).
	case ChatTurnsLoaded:
		s.turnsLoaded(a)

	// Background work (0.9.0).
	case ChatBackgroundWorkSet:
		s.backgroundWorkSet(a)
	case ChatBackgroundWorkRemoved:
		s.backgroundWorkRemoved(a)
	}
}

// Turn lifecycle.

func (s ChatState) turnStarted(a object, had func(string) bool) {
	turnID, ok := a["turnId"].(string)
	if !ok {
		return
	}
	st := object(s)
	if at := st.obj("activeTurn"); at != nil && sameString(at["id"], turnID) {
		return
	}
	if had != nil && had(turnID) || had == nil && st.list("turns").indexBy("id", turnID) >= 0 {
		return
	}
	turn := object{"id": turnID, "responseParts": []any{}}
	turn.put("startedAt", a["startedAt"])
	turn.put("message", a["message"])
	st["activeTurn"] = map[string]any(turn)
	s.refreshStatus(false, true)

	// A turn started from a pending message consumes it.
	if id, ok := a["queuedMessageId"].(string); ok && id != "" {
		if steering := st.obj("steeringMessage"); steering != nil && sameString(steering["id"], id) {
			delete(st, "steeringMessage")
		}
		s.removeQueued(id)
	}
}

// turnsLoaded puts the action's turns ahead of the chat's, leaving out any the chat
// already holds (as the reference reducer does: two subscribers' fetches may load
// the same page), and takes its cursor, or drops the cursor when it has none.
func (s ChatState) turnsLoaded(a object) {
	st := object(s)
	have := st.list("turns")
	held := make(map[string]bool, len(have))
	for _, t := range have {
		held[asObject(t).str("id")] = true
	}
	loaded := a.list("turns")
	turns := make([]any, 0, len(loaded)+len(have))
	for _, t := range loaded {
		if id, ok := asObject(t)["id"].(string); ok && held[id] {
			continue
		}
		turns = append(turns, t)
	}
	st["turns"] = append(turns, have...)
	if cursor, ok := a["turnsNextCursor"].(string); ok {
		s.SetTurnsCursor(cursor)
	} else {
		delete(st, "turnsNextCursor")
	}
}

// endTurn moves the active turn named by the action into turns with the given state.
// Tool calls that have not finished are cancelled with reason "skipped".
func (s ChatState) endTurn(a object, turnState string, errInfo object) {
	at := s.activeTurn(a)
	if at == nil {
		return
	}
	parts := at.list("responseParts")
	finished := make([]any, len(parts))
	for i, p := range parts {
		finished[i] = p
		part := asObject(p)
		if part.str("kind") != "toolCall" {
			continue
		}
		tc := toolCall(part.obj("toolCall"))
		switch tc.status() {
		case callCompleted, callCancelled:
			continue
		}
		finished[i] = map[string]any{"kind": "toolCall", "toolCall": map[string]any(tc.skipped())}
	}

	// The active turn becomes the Turn; fields neither shape names survive.
	turn := at
	turn["responseParts"] = finished
	turn["state"] = turnState
	if d, ok := asNumber(a["duration"]); ok {
		// The duration is the producer's and opaque; the reference clamps a negative one.
		if d < 0 {
			turn["duration"] = float64(0)
		} else {
			turn["duration"] = a["duration"]
		}
	}
	turn.set("error", errInfo)
	st := object(s)
	st["turns"] = append([]any(st.list("turns")), map[string]any(turn))
	delete(st, "activeTurn")
	s.refreshStatus(turnState == TurnStateError, false)
}

// errorInfoOf is the ErrorInfo of a chat/error: `part.error` (1.x) or `error` (<=0.8).
func errorInfoOf(a object) object {
	if e := a.obj("part").obj("error"); e != nil {
		return e
	}
	return a.obj("error")
}

// activeTurn is the active turn when the action's turnId names it, else nil.
func (s ChatState) activeTurn(a object) object {
	at := object(s).obj("activeTurn")
	if at == nil {
		return nil
	}
	turnID, ok := a["turnId"].(string)
	if !ok || !sameString(at["id"], turnID) {
		return nil
	}
	return at
}

// appendToPart appends a chat/delta's or chat/reasoning's content to the part of the
// given kind whose id is partId.
func (s ChatState) appendToPart(a object, kind string) {
	at := s.activeTurn(a)
	content, ok := a["content"].(string)
	if at == nil || !ok {
		return
	}
	for _, p := range at.list("responseParts") {
		part := asObject(p)
		id := part["id"]
		if part.str("kind") == "toolCall" {
			id = part.obj("toolCall")["toolCallId"]
		}
		if sameString(id, a["partId"]) {
			// The first part with that id is the target, whatever its kind.
			if part.str("kind") == kind {
				part["content"] = part.str("content") + content
			}
			return
		}
	}
}

// Tool calls.

func (s ChatState) toolCallStart(a object) {
	at := s.activeTurn(a)
	if at == nil {
		return
	}
	tc := object{"status": callStreaming}
	for _, k := range toolCallBaseKeys {
		tc.put(k, a[k])
	}
	at["responseParts"] = append([]any(at.list("responseParts")), map[string]any{"kind": "toolCall", "toolCall": map[string]any(tc)})
}

// updateToolCall replaces the tool call the action names (turnId, toolCallId) in the
// active turn with what update returns from it and the action; update returns nil to
// leave it as it is. It reports whether the call changed.
func (s ChatState) updateToolCall(a object, update func(tc toolCall, a object) toolCall) bool {
	at := s.activeTurn(a)
	id, ok := a["toolCallId"].(string)
	if at == nil || !ok {
		return false
	}
	for _, p := range at.list("responseParts") {
		part := asObject(p)
		if part.str("kind") != "toolCall" {
			continue
		}
		tc := toolCall(part.obj("toolCall"))
		if tc == nil || !sameString(tc["toolCallId"], id) {
			continue
		}
		next := update(tc, a)
		if next == nil {
			return false
		}
		part["toolCall"] = map[string]any(next)
		return true
	}
	return false
}

// moveToolCall is updateToolCall for an action that may move the call into or out of
// a state that waits on someone, so the chat's status follows.
func (s ChatState) moveToolCall(a object, update func(tc toolCall, a object) toolCall) {
	if s.updateToolCall(a, update) {
		s.refreshStatus(false, false)
	}
}

// toolCall is one tool call's state (state.schema.json ToolCallState) as decoded
// JSON. Its methods are the transitions the tool-call actions make: each returns the
// call's next state, or nil when the action does not apply to the call as it is.
type toolCall map[string]any

// toolCallBaseKeys are the fields every tool-call state has.
var toolCallBaseKeys = []string{"toolCallId", "toolName", "displayName", "intention", "contributor", "_meta"}

func (tc toolCall) status() string { return asString(tc["status"]) }

// copyFrom copies the named fields of another state of the call.
func (tc toolCall) copyFrom(from toolCall, keys ...string) {
	for _, k := range keys {
		object(tc).put(k, from[k])
	}
}

// base is the part every tool-call state has: id, names, intention, contributor and
// _meta, the action's _meta replacing the call's when it has one.
func (tc toolCall) base(a object) toolCall {
	out := make(toolCall, 12)
	out.copyFrom(tc, toolCallBaseKeys...)
	if a != nil {
		object(out).put("_meta", a["_meta"])
	}
	return out
}

// skipped is the call cancelled because its turn ended before it finished.
func (tc toolCall) skipped() toolCall {
	out := tc.base(nil)
	msg := tc["invocationMessage"]
	if tc.status() == callStreaming {
		if msg == nil {
			msg = "" // a cancelled call requires one; a streaming call may not have one yet
		}
	} else {
		out.copyFrom(tc, "toolInput")
	}
	object(out).put("invocationMessage", msg)
	out["reason"] = "skipped"
	out["status"] = callCancelled
	return out
}

// delta: a streaming call gathers its partial input.
func (tc toolCall) delta(a object) toolCall {
	if tc.status() != callStreaming {
		return nil
	}
	object(tc).put("_meta", a["_meta"])
	if content, ok := a["content"].(string); ok {
		tc["partialInput"] = asString(tc["partialInput"]) + content
	}
	object(tc).put("invocationMessage", a["invocationMessage"])
	return tc
}

// ready: streaming, running (a confirmation needed mid-run) or pending-confirmation
// (updated) become running when the action says how the call was confirmed, else
// pending-confirmation.
func (tc toolCall) ready(a object) toolCall {
	status := tc.status()
	if status != callStreaming && status != callRunning && status != callPendingConfirmation {
		return nil
	}
	out := tc.base(a)
	o := object(out)
	// The final intention and contributor replace the provisional ones of toolCallStart.
	o.put("intention", a["intention"])
	o.put("contributor", a["contributor"])
	o.put("invocationMessage", a["invocationMessage"])
	if a.str("confirmed") != "" {
		o.put("toolInput", a["toolInput"])
		out["confirmed"] = a["confirmed"]
		out["status"] = callRunning
		return out
	}
	// Sent again while pending, the action updates what it carries and keeps the rest.
	var pending toolCall
	if status == callPendingConfirmation {
		pending = tc
	}
	for _, k := range []string{"toolInput", "confirmationTitle", "riskAssessment", "edits", "editable", "options"} {
		v := a[k]
		if v == nil && pending != nil {
			v = pending[k]
		}
		o.put(k, v)
	}
	out["status"] = callPendingConfirmation
	return out
}

// confirmed: pending-confirmation becomes running when approved, else cancelled with
// the action's reason. selectedOptionId is resolved from the call's options.
func (tc toolCall) confirmed(a object) toolCall {
	if tc.status() != callPendingConfirmation {
		return nil
	}
	out := tc.base(a)
	o := object(out)
	out.copyFrom(tc, "invocationMessage")
	var selected any
	if id := a.str("selectedOptionId"); id != "" {
		options := object(tc).list("options")
		if i := options.indexBy("id", id); i >= 0 {
			selected = cloneJSON(options[i])
		}
	}
	if a["approved"] == true {
		input := a["editedToolInput"]
		if input == nil {
			input = tc["toolInput"]
		}
		o.put("toolInput", input)
		o.put("confirmed", a["confirmed"])
		o.put("selectedOption", selected)
		out["status"] = callRunning
		return out
	}
	out.copyFrom(tc, "toolInput")
	o.put("reason", a["reason"])
	o.put("reasonMessage", a["reasonMessage"])
	o.put("userSuggestion", a["userSuggestion"])
	o.put("selectedOption", selected)
	out["status"] = callCancelled
	return out
}

// contentChanged: a running call's content is replaced.
func (tc toolCall) contentChanged(a object) toolCall {
	if tc.status() != callRunning {
		return nil
	}
	object(tc).put("_meta", a["_meta"])
	object(tc).set("content", a["content"])
	return tc
}

// complete: running, pending-confirmation (completed without asking) or
// auth-required (only with a failed result: a client cancelling instead of
// authenticating) become completed, or pending-result-confirmation when the action
// asks for it. The result's fields are spread over the call.
func (tc toolCall) complete(a object) toolCall {
	status := tc.status()
	result := a.obj("result")
	if result == nil {
		return nil
	}
	switch status {
	case callRunning, callPendingConfirmation:
	case callAuthRequired:
		if result["success"] == true {
			return nil
		}
	default:
		return nil
	}
	out := tc.base(a)
	out.copyFrom(tc, "invocationMessage", "toolInput")
	if status == callPendingConfirmation {
		out["confirmed"] = "not-needed"
	} else {
		out.copyFrom(tc, "confirmed", "selectedOption")
	}
	if status == callAuthRequired {
		// What the call produced before it paused is all it ever produced.
		out.copyFrom(tc, "content")
	}
	for k, v := range result {
		object(out).put(k, v)
	}
	if a["requiresResultConfirmation"] == true && status != callAuthRequired {
		out["status"] = callPendingResultConfirmation
	} else {
		out["status"] = callCompleted
	}
	return out
}

// resultConfirmed: pending-result-confirmation becomes completed when approved, else
// cancelled with reason "result-denied".
func (tc toolCall) resultConfirmed(a object) toolCall {
	if tc.status() != callPendingResultConfirmation {
		return nil
	}
	out := tc.base(a)
	out.copyFrom(tc, "invocationMessage", "toolInput", "selectedOption")
	if a["approved"] == true {
		out.copyFrom(tc, "confirmed", "success", "pastTenseMessage", "content", "structuredContent", "error")
		out["status"] = callCompleted
		return out
	}
	out["reason"] = "result-denied"
	out["status"] = callCancelled
	return out
}

// authRequired: a running MCP tool call pauses for authentication.
func (tc toolCall) authRequired(a object) toolCall {
	if tc.status() != callRunning || object(tc).obj("contributor").str("kind") != "mcp" {
		return nil
	}
	out := tc.base(a)
	out.copyFrom(tc, "invocationMessage", "toolInput", "confirmed", "selectedOption", "content")
	object(out).put("auth", a["auth"])
	out["status"] = callAuthRequired
	return out
}

// authResolved: an auth-required tool call runs again.
func (tc toolCall) authResolved(a object) toolCall {
	if tc.status() != callAuthRequired {
		return nil
	}
	out := tc.base(a)
	out.copyFrom(tc, "invocationMessage", "toolInput", "confirmed", "selectedOption", "content")
	out["status"] = callRunning
	return out
}

// Pending messages.

func (s ChatState) pendingMessageSet(a object) {
	id, ok := a["id"].(string)
	if !ok {
		return
	}
	entry := object{"id": id}
	entry.put("message", a["message"])
	st := object(s)
	switch a.str("kind") {
	case PendingSteering:
		st["steeringMessage"] = map[string]any(entry)
	case PendingQueued:
		st["queuedMessages"] = []any(st.list("queuedMessages").upsertBy("id", entry))
	}
}

func (s ChatState) pendingMessageRemoved(kind, id string) {
	switch kind {
	case PendingSteering:
		st := object(s)
		if steering := st.obj("steeringMessage"); steering != nil && sameString(steering["id"], id) {
			delete(st, "steeringMessage")
		}
	case PendingQueued:
		s.removeQueued(id)
	}
}

// removeQueued removes the queued message with that id; an empty queue goes.
func (s ChatState) removeQueued(id string) {
	st := object(s)
	queued := st.list("queuedMessages")
	i := queued.indexBy("id", id)
	if i < 0 {
		return
	}
	if queued = queued.without(i); len(queued) == 0 {
		delete(st, "queuedMessages")
	} else {
		st["queuedMessages"] = []any(queued)
	}
}

// queuedMessagesReordered puts the queue in the action's order; ids not queued are
// ignored and messages the order leaves out follow in their old order, so a client
// with a stale view never drops one.
func (s ChatState) queuedMessagesReordered(a object) {
	st := object(s)
	queued := st.list("queuedMessages")
	if queued == nil {
		return
	}
	out := make([]any, 0, len(queued))
	taken := make([]bool, len(queued))
	for _, id := range a.list("order") {
		if i := queued.indexBy("id", id); i >= 0 && !taken[i] {
			taken[i] = true
			out = append(out, queued[i])
		}
	}
	for i, m := range queued {
		if !taken[i] {
			out = append(out, m)
		}
	}
	st["queuedMessages"] = out
}

// Status.

// refreshStatus derives the activity bits of the chat's status from the chat, keeping
// the other flags: Error when the turn just ended in error, InputNeeded when a tool
// call or input request in the active turn waits on someone, InProgress while a turn
// is active, else Idle. clearIsRead also clears IsRead.
func (s ChatState) refreshStatus(turnError, clearIsRead bool) {
	at := object(s).obj("activeTurn")
	var activity SessionStatus
	switch {
	case turnError:
		activity = SessionStatusError
	case blocked(at):
		activity = SessionStatusInputNeeded
	case at != nil:
		activity = SessionStatusInProgress
	default:
		activity = SessionStatusIdle
	}
	object(s).updateStatus(func(old SessionStatus) SessionStatus {
		status := old&^sessionStatusActivityMask | activity
		if clearIsRead {
			status &^= SessionStatusIsRead
		}
		return status
	})
}

// blocked reports whether the turn waits on someone: a tool call to confirm, a result
// to confirm, an MCP authentication, or an input request unanswered.
func blocked(at object) bool {
	for _, p := range at.list("responseParts") {
		part := asObject(p)
		switch part.str("kind") {
		case "toolCall":
			switch toolCall(part.obj("toolCall")).status() {
			case callPendingConfirmation, callPendingResultConfirmation, callAuthRequired:
				return true
			}
		case "inputRequest":
			if part["response"] == nil {
				return true
			}
		}
	}
	return false
}
