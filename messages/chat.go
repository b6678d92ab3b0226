package messages

import (
	"encoding/json"
	"math"
)

// Chat and session reducers (PROTOCOL.md 8; actions.schema.json Chat*Action and
// Session*Action; state.schema.json ChatState, SessionState).
//
// They work on decoded JSON rather than on structs: the chat surface is large and
// still moving between protocol versions, and a field this package does not model
// (a 1.x addition on a tool call, a provider's _meta) must survive every fold rather
// than be lost to a struct that has no place for it.
//
// States and actions are generic JSON values: map[string]any, []any, string, bool,
// float64 or json.Number, nil, as encoding/json decodes them. A reducer copies every
// part of an action it keeps, so the state never shares a mutable value with the
// action; a value of any other Go type inside an action is turned into its generic
// JSON form on the way in. A state must hold only generic values.
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

// ReduceChat folds one chat action into a chat state, both decoded JSON objects
// (map[string]any as encoding/json decodes them), in place. Unknown action types
// change nothing.
func ReduceChat(state map[string]any, action map[string]any) {
	if state == nil || action == nil {
		return
	}
	a := crOwn(action)
	switch crStr(a["type"]) {
	// Turn lifecycle.
	case "chat/turnStarted":
		crTurnStarted(state, a)
	case "chat/turnComplete":
		crEndTurn(state, a, "complete", nil)
	case "chat/turnCancelled":
		crEndTurn(state, a, "cancelled", nil)
	case "chat/error":
		crEndTurn(state, a, "error", crErrorInfo(a))

	// Streaming content of the active turn.
	case "chat/responsePart":
		if at := crActiveTurn(state, a); at != nil && a["part"] != nil {
			at["responseParts"] = append(crList(at["responseParts"]), a["part"])
		}
	case "chat/delta":
		crAppendToPart(state, a, "markdown")
	case "chat/reasoning":
		crAppendToPart(state, a, "reasoning")
	case "chat/usage":
		if at := crActiveTurn(state, a); at != nil {
			crSet(at, "usage", a["usage"])
		}

	// Tool calls.
	case "chat/toolCallStart":
		crToolCallStart(state, a)
	case "chat/toolCallDelta":
		crUpdateToolCall(state, a, crToolCallDelta)
	case "chat/toolCallReady":
		if crUpdateToolCall(state, a, crToolCallReady) {
			crRefreshStatus(state, false, false)
		}
	case "chat/toolCallConfirmed":
		if crUpdateToolCall(state, a, crToolCallConfirmed) {
			crRefreshStatus(state, false, false)
		}
	case "chat/toolCallContentChanged":
		crUpdateToolCall(state, a, crToolCallContentChanged)
	case "chat/toolCallComplete":
		if crUpdateToolCall(state, a, crToolCallComplete) {
			crRefreshStatus(state, false, false)
		}
	case "chat/toolCallResultConfirmed":
		if crUpdateToolCall(state, a, crToolCallResultConfirmed) {
			crRefreshStatus(state, false, false)
		}
	case "chat/toolCallAuthRequired":
		if crUpdateToolCall(state, a, crToolCallAuthRequired) {
			crRefreshStatus(state, false, false)
		}
	case "chat/toolCallAuthResolved":
		if crUpdateToolCall(state, a, crToolCallAuthResolved) {
			crRefreshStatus(state, false, false)
		}

	// Pending messages.
	case "chat/pendingMessageSet":
		crPendingMessageSet(state, a)
	case "chat/pendingMessageRemoved":
		crPendingMessageRemoved(state, crStr(a["kind"]), crStr(a["id"]))
	case "chat/queuedMessagesReordered":
		crQueuedMessagesReordered(state, a)

	// Chat-wide fields.
	case "chat/activityChanged":
		crSet(state, "activity", a["activity"])
	case "chat/draftChanged":
		crSet(state, "draft", a["draft"])
	case "chat/workingDirectorySet":
		crSetMember(state, "workingDirectories", a["directory"])
	case "chat/workingDirectoryRemoved":
		crRemoveMember(state, "workingDirectories", a["directory"])
	}
}

// ReduceSession folds one session action into a session state, both decoded JSON
// objects, in place. Unknown action types change nothing.
func ReduceSession(state map[string]any, action map[string]any) {
	if state == nil || action == nil {
		return
	}
	a := crOwn(action)
	switch crStr(a["type"]) {
	case "session/chatAdded":
		// Upsert by summary.resource.
		summary := crObj(a["summary"])
		if summary == nil {
			return
		}
		chats := crList(state["chats"])
		if i := crIndexBy(chats, "resource", summary["resource"]); i >= 0 {
			chats[i] = summary
		} else {
			chats = append(chats, summary)
		}
		state["chats"] = chats
	case "session/chatRemoved":
		chats := crList(state["chats"])
		i := crIndexBy(chats, "resource", a["chat"])
		if i < 0 {
			return
		}
		state["chats"] = crRemoveAt(chats, i)
		if crEqualString(state["defaultChat"], a["chat"]) {
			delete(state, "defaultChat")
		}
	case "session/chatUpdated":
		chats := crList(state["chats"])
		i := crIndexBy(chats, "resource", a["chat"])
		if i < 0 {
			return
		}
		entry := crObj(chats[i])
		for k, v := range crObj(a["changes"]) {
			if k == "resource" { // identity never changes; senders must omit it
				continue
			}
			crSet(entry, k, v)
		}
	case "session/defaultChatChanged":
		crSet(state, "defaultChat", a["defaultChat"])
	case "session/titleChanged":
		if title, ok := a["title"].(string); ok {
			state["title"] = title
		}
	case "session/workingDirectorySet":
		crSetMember(state, "workingDirectories", a["directory"])
	case "session/workingDirectoryRemoved":
		crRemoveMember(state, "workingDirectories", a["directory"])
	case "session/ready":
		state["lifecycle"] = "ready"
	case "session/creationFailed":
		state["lifecycle"] = "creationFailed"
		crSet(state, "creationError", a["error"])
	case "session/activityChanged":
		crSet(state, "activity", a["activity"])
	case "session/isReadChanged":
		crSetStatusFlag(state, crStatusIsRead, a["isRead"] == true)
	case "session/isArchivedChanged":
		crSetStatusFlag(state, crStatusIsArchived, a["isArchived"] == true)
	case "session/metaChanged":
		crSet(state, "_meta", a["_meta"])
	case "session/serverToolsChanged":
		crSet(state, "serverTools", a["tools"])
	case "session/activeClientSet":
		// Upsert by activeClient.clientId.
		client := crObj(a["activeClient"])
		if client == nil {
			return
		}
		clients := crList(state["activeClients"])
		if i := crIndexBy(clients, "clientId", client["clientId"]); i >= 0 {
			clients[i] = client
		} else {
			clients = append(clients, client)
		}
		state["activeClients"] = clients
	case "session/activeClientRemoved":
		clients := crList(state["activeClients"])
		if i := crIndexBy(clients, "clientId", a["clientId"]); i >= 0 {
			state["activeClients"] = crRemoveAt(clients, i)
		}
	case "session/configChanged":
		// As root/configChanged: nothing without a config to change.
		config := crObj(state["config"])
		changes := crObj(a["config"])
		if config == nil || changes == nil {
			return
		}
		values := map[string]any{}
		if a["replace"] != true {
			for k, v := range crObj(config["values"]) {
				values[k] = v
			}
		}
		for k, v := range changes {
			values[k] = v
		}
		config["values"] = values
	}
}

// SessionStatus bits (state.schema.json SessionStatus; upstream channels-session/state.ts).
const (
	crStatusIdle        = 1
	crStatusError       = 1 << 1
	crStatusInProgress  = 1 << 3
	crStatusInputNeeded = 1<<3 | 1<<4
	crStatusIsRead      = 1 << 5
	crStatusIsArchived  = 1 << 6
	// crStatusActivityMask covers the mutually exclusive activity bits 0 to 4.
	crStatusActivityMask = 1<<5 - 1
)

// Turn lifecycle.

func crTurnStarted(state, a map[string]any) {
	turnID, ok := a["turnId"].(string)
	if !ok {
		return
	}
	if at := crObj(state["activeTurn"]); at != nil && crEqualString(at["id"], turnID) {
		return
	}
	if crIndexBy(crList(state["turns"]), "id", turnID) >= 0 {
		return
	}
	turn := map[string]any{"id": turnID, "responseParts": []any{}}
	crPut(turn, "startedAt", a["startedAt"])
	crPut(turn, "message", a["message"])
	state["activeTurn"] = turn
	crRefreshStatus(state, false, true)

	// A turn started from a pending message consumes it.
	if id, ok := a["queuedMessageId"].(string); ok && id != "" {
		if steering := crObj(state["steeringMessage"]); steering != nil && crEqualString(steering["id"], id) {
			delete(state, "steeringMessage")
		}
		crRemoveQueued(state, id)
	}
}

// crEndTurn moves the active turn named by the action into turns with the given
// state. Tool calls that have not finished are cancelled with reason "skipped".
func crEndTurn(state, a map[string]any, turnState string, errInfo map[string]any) {
	at := crActiveTurn(state, a)
	if at == nil {
		return
	}
	parts := crList(at["responseParts"])
	finished := make([]any, len(parts))
	for i, p := range parts {
		finished[i] = p
		part := crObj(p)
		if crStr(part["kind"]) != "toolCall" {
			continue
		}
		tc := crObj(part["toolCall"])
		switch crStr(tc["status"]) {
		case "completed", "cancelled":
			continue
		}
		finished[i] = map[string]any{"kind": "toolCall", "toolCall": crSkipped(tc)}
	}

	// The active turn becomes the Turn; fields neither shape names survive.
	turn := at
	turn["responseParts"] = finished
	turn["state"] = turnState
	if d, ok := crNum(a["duration"]); ok {
		// The duration is the producer's and opaque; the reference clamps a negative one.
		if d < 0 {
			turn["duration"] = float64(0)
		} else {
			turn["duration"] = a["duration"]
		}
	}
	crSet(turn, "error", crAny(errInfo))
	state["turns"] = append(crList(state["turns"]), turn)
	delete(state, "activeTurn")
	crRefreshStatus(state, turnState == "error", false)
}

// crAny keeps a nil map a nil interface.
func crAny(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// crErrorInfo is the ErrorInfo of a chat/error: `part.error` (1.x) or `error` (<=0.8).
func crErrorInfo(a map[string]any) map[string]any {
	if part := crObj(a["part"]); part != nil {
		if e := crObj(part["error"]); e != nil {
			return e
		}
	}
	return crObj(a["error"])
}

// crSkipped is a tool call that had not finished when its turn ended.
func crSkipped(tc map[string]any) map[string]any {
	out := crBase(tc, nil)
	msg := tc["invocationMessage"]
	if crStr(tc["status"]) == "streaming" {
		if msg == nil {
			msg = "" // a cancelled call requires one; a streaming call may not have one yet
		}
	} else {
		crPut(out, "toolInput", tc["toolInput"])
	}
	crPut(out, "invocationMessage", msg)
	out["reason"] = "skipped"
	out["status"] = "cancelled"
	return out
}

// crActiveTurn is the active turn when the action's turnId names it, else nil.
func crActiveTurn(state, a map[string]any) map[string]any {
	at := crObj(state["activeTurn"])
	if at == nil {
		return nil
	}
	turnID, ok := a["turnId"].(string)
	if !ok || !crEqualString(at["id"], turnID) {
		return nil
	}
	return at
}

// crAppendToPart appends a chat/delta's or chat/reasoning's content to the part of
// the given kind whose id is partId.
func crAppendToPart(state, a map[string]any, kind string) {
	at := crActiveTurn(state, a)
	content, ok := a["content"].(string)
	if at == nil || !ok {
		return
	}
	for _, p := range crList(at["responseParts"]) {
		part := crObj(p)
		id := part["id"]
		if crStr(part["kind"]) == "toolCall" {
			id = crObj(part["toolCall"])["toolCallId"]
		}
		if crEqualString(id, a["partId"]) {
			// The first part with that id is the target, whatever its kind.
			if crStr(part["kind"]) == kind {
				part["content"] = crStr(part["content"]) + content
			}
			return
		}
	}
}

// Tool calls.

func crToolCallStart(state, a map[string]any) {
	at := crActiveTurn(state, a)
	if at == nil {
		return
	}
	tc := map[string]any{"status": "streaming"}
	for _, k := range []string{"toolCallId", "toolName", "displayName", "intention", "contributor", "_meta"} {
		crPut(tc, k, a[k])
	}
	at["responseParts"] = append(crList(at["responseParts"]), map[string]any{"kind": "toolCall", "toolCall": tc})
}

// crUpdateToolCall replaces the tool call the action names (turnId, toolCallId) in
// the active turn with what update returns from it and the action; update returns
// nil to leave it as it is. It reports whether the call changed.
func crUpdateToolCall(state, a map[string]any, update func(tc, a map[string]any) map[string]any) bool {
	at := crActiveTurn(state, a)
	id, ok := a["toolCallId"].(string)
	if at == nil || !ok {
		return false
	}
	for _, p := range crList(at["responseParts"]) {
		part := crObj(p)
		if crStr(part["kind"]) != "toolCall" {
			continue
		}
		tc := crObj(part["toolCall"])
		if tc == nil || !crEqualString(tc["toolCallId"], id) {
			continue
		}
		next := update(tc, a)
		if next == nil {
			return false
		}
		part["toolCall"] = next
		return true
	}
	return false
}

// crBase is the part every tool-call state has: id, names, intention, contributor
// and _meta, the action's _meta replacing the call's when it has one.
func crBase(tc, a map[string]any) map[string]any {
	out := make(map[string]any, 12)
	for _, k := range []string{"toolCallId", "toolName", "displayName", "intention", "contributor", "_meta"} {
		crPut(out, k, tc[k])
	}
	if a != nil {
		crPut(out, "_meta", a["_meta"])
	}
	return out
}

func crToolCallDelta(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "streaming" {
		return nil
	}
	crPut(tc, "_meta", a["_meta"])
	if content, ok := a["content"].(string); ok {
		tc["partialInput"] = crStr(tc["partialInput"]) + content
	}
	crPut(tc, "invocationMessage", a["invocationMessage"])
	return tc
}

// crToolCallReady: streaming, running (a confirmation needed mid-run) or
// pending-confirmation (updated) become running when the action says how the call was
// confirmed, else pending-confirmation.
func crToolCallReady(tc, a map[string]any) map[string]any {
	status := crStr(tc["status"])
	if status != "streaming" && status != "running" && status != "pending-confirmation" {
		return nil
	}
	out := crBase(tc, a)
	// The final intention and contributor replace the provisional ones of toolCallStart.
	crPut(out, "intention", a["intention"])
	crPut(out, "contributor", a["contributor"])
	crPut(out, "invocationMessage", a["invocationMessage"])
	if crStr(a["confirmed"]) != "" {
		crPut(out, "toolInput", a["toolInput"])
		out["confirmed"] = a["confirmed"]
		out["status"] = "running"
		return out
	}
	// Sent again while pending, the action updates what it carries and keeps the rest.
	var pending map[string]any
	if status == "pending-confirmation" {
		pending = tc
	}
	for _, k := range []string{"toolInput", "confirmationTitle", "riskAssessment", "edits", "editable", "options"} {
		v := a[k]
		if v == nil && pending != nil {
			v = pending[k]
		}
		crPut(out, k, v)
	}
	out["status"] = "pending-confirmation"
	return out
}

// crToolCallConfirmed: pending-confirmation becomes running when approved, else
// cancelled with the action's reason. selectedOptionId is resolved from the call's
// options.
func crToolCallConfirmed(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "pending-confirmation" {
		return nil
	}
	out := crBase(tc, a)
	crPut(out, "invocationMessage", tc["invocationMessage"])
	var selected any
	if id := crStr(a["selectedOptionId"]); id != "" {
		if i := crIndexBy(crList(tc["options"]), "id", id); i >= 0 {
			selected = crClone(crList(tc["options"])[i])
		}
	}
	if a["approved"] == true {
		input := a["editedToolInput"]
		if input == nil {
			input = tc["toolInput"]
		}
		crPut(out, "toolInput", input)
		crPut(out, "confirmed", a["confirmed"])
		crPut(out, "selectedOption", selected)
		out["status"] = "running"
		return out
	}
	crPut(out, "toolInput", tc["toolInput"])
	crPut(out, "reason", a["reason"])
	crPut(out, "reasonMessage", a["reasonMessage"])
	crPut(out, "userSuggestion", a["userSuggestion"])
	crPut(out, "selectedOption", selected)
	out["status"] = "cancelled"
	return out
}

func crToolCallContentChanged(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "running" {
		return nil
	}
	crPut(tc, "_meta", a["_meta"])
	crSet(tc, "content", a["content"])
	return tc
}

// crToolCallComplete: running, pending-confirmation (completed without asking) or
// auth-required (only with a failed result: a client cancelling instead of
// authenticating) become completed, or pending-result-confirmation when the action
// asks for it. The result's fields are spread over the call.
func crToolCallComplete(tc, a map[string]any) map[string]any {
	status := crStr(tc["status"])
	result := crObj(a["result"])
	if result == nil {
		return nil
	}
	switch status {
	case "running", "pending-confirmation":
	case "auth-required":
		if result["success"] == true {
			return nil
		}
	default:
		return nil
	}
	out := crBase(tc, a)
	crPut(out, "invocationMessage", tc["invocationMessage"])
	crPut(out, "toolInput", tc["toolInput"])
	if status == "pending-confirmation" {
		out["confirmed"] = "not-needed"
	} else {
		crPut(out, "confirmed", tc["confirmed"])
		crPut(out, "selectedOption", tc["selectedOption"])
	}
	if status == "auth-required" {
		// What the call produced before it paused is all it ever produced.
		crPut(out, "content", tc["content"])
	}
	for k, v := range result {
		crPut(out, k, v)
	}
	if a["requiresResultConfirmation"] == true && status != "auth-required" {
		out["status"] = "pending-result-confirmation"
	} else {
		out["status"] = "completed"
	}
	return out
}

// crToolCallResultConfirmed: pending-result-confirmation becomes completed when
// approved, else cancelled with reason "result-denied".
func crToolCallResultConfirmed(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "pending-result-confirmation" {
		return nil
	}
	out := crBase(tc, a)
	crPut(out, "invocationMessage", tc["invocationMessage"])
	crPut(out, "toolInput", tc["toolInput"])
	crPut(out, "selectedOption", tc["selectedOption"])
	if a["approved"] == true {
		for _, k := range []string{"confirmed", "success", "pastTenseMessage", "content", "structuredContent", "error"} {
			crPut(out, k, tc[k])
		}
		out["status"] = "completed"
		return out
	}
	out["reason"] = "result-denied"
	out["status"] = "cancelled"
	return out
}

// crToolCallAuthRequired: a running MCP tool call pauses for authentication.
func crToolCallAuthRequired(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "running" || crStr(crObj(tc["contributor"])["kind"]) != "mcp" {
		return nil
	}
	out := crBase(tc, a)
	for _, k := range []string{"invocationMessage", "toolInput", "confirmed", "selectedOption", "content"} {
		crPut(out, k, tc[k])
	}
	crPut(out, "auth", a["auth"])
	out["status"] = "auth-required"
	return out
}

// crToolCallAuthResolved: an auth-required tool call runs again.
func crToolCallAuthResolved(tc, a map[string]any) map[string]any {
	if crStr(tc["status"]) != "auth-required" {
		return nil
	}
	out := crBase(tc, a)
	for _, k := range []string{"invocationMessage", "toolInput", "confirmed", "selectedOption", "content"} {
		crPut(out, k, tc[k])
	}
	out["status"] = "running"
	return out
}

// Pending messages.

func crPendingMessageSet(state, a map[string]any) {
	id, ok := a["id"].(string)
	if !ok {
		return
	}
	entry := map[string]any{"id": id}
	crPut(entry, "message", a["message"])
	switch crStr(a["kind"]) {
	case "steering":
		state["steeringMessage"] = entry
	case "queued":
		queued := crList(state["queuedMessages"])
		if i := crIndexBy(queued, "id", id); i >= 0 {
			queued[i] = entry
		} else {
			queued = append(queued, entry)
		}
		state["queuedMessages"] = queued
	}
}

func crPendingMessageRemoved(state map[string]any, kind, id string) {
	switch kind {
	case "steering":
		if steering := crObj(state["steeringMessage"]); steering != nil && crEqualString(steering["id"], id) {
			delete(state, "steeringMessage")
		}
	case "queued":
		crRemoveQueued(state, id)
	}
}

// crRemoveQueued removes the queued message with that id; an empty queue goes.
func crRemoveQueued(state map[string]any, id string) {
	queued := crList(state["queuedMessages"])
	i := crIndexBy(queued, "id", id)
	if i < 0 {
		return
	}
	if queued = crRemoveAt(queued, i); len(queued) == 0 {
		delete(state, "queuedMessages")
	} else {
		state["queuedMessages"] = queued
	}
}

// crQueuedMessagesReordered puts the queue in the action's order; ids not queued are
// ignored and messages the order leaves out follow in their old order, so a client
// with a stale view never drops one.
func crQueuedMessagesReordered(state, a map[string]any) {
	queued := crList(state["queuedMessages"])
	if queued == nil {
		return
	}
	out := make([]any, 0, len(queued))
	taken := make([]bool, len(queued))
	for _, id := range crList(a["order"]) {
		if i := crIndexBy(queued, "id", id); i >= 0 && !taken[i] {
			taken[i] = true
			out = append(out, queued[i])
		}
	}
	for i, m := range queued {
		if !taken[i] {
			out = append(out, m)
		}
	}
	state["queuedMessages"] = out
}

// Status.

// crRefreshStatus derives the activity bits of state.status from the chat, keeping
// the other flags: Error when the turn just ended in error, InputNeeded when a tool
// call or input request in the active turn waits on someone, InProgress while a turn
// is active, else Idle. clearIsRead also clears IsRead.
func crRefreshStatus(state map[string]any, turnError, clearIsRead bool) {
	var activity int64
	switch {
	case turnError:
		activity = crStatusError
	case crBlocked(crObj(state["activeTurn"])):
		activity = crStatusInputNeeded
	case crObj(state["activeTurn"]) != nil:
		activity = crStatusInProgress
	default:
		activity = crStatusIdle
	}
	old, had := crNum(state["status"])
	status := int64(old)&^crStatusActivityMask | activity
	if clearIsRead {
		status &^= crStatusIsRead
	}
	if !had || int64(old) != status {
		state["status"] = float64(status)
	}
}

func crSetStatusFlag(state map[string]any, flag int64, set bool) {
	old, had := crNum(state["status"])
	status := int64(old)
	if set {
		status |= flag
	} else {
		status &^= flag
	}
	if !had || int64(old) != status {
		state["status"] = float64(status)
	}
}

// crBlocked reports whether the turn waits on someone: a tool call to confirm, a
// result to confirm, an MCP authentication, or an input request unanswered.
func crBlocked(at map[string]any) bool {
	for _, p := range crList(at["responseParts"]) {
		part := crObj(p)
		switch crStr(part["kind"]) {
		case "toolCall":
			switch crStr(crObj(part["toolCall"])["status"]) {
			case "pending-confirmation", "pending-result-confirmation", "auth-required":
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

// Generic JSON helpers. They are prefixed cr (chat reducer) to keep out of the way of
// the package's other names.

// crOwn is a deep copy of an action in generic JSON form, so nothing the state takes
// from it is shared with the caller.
func crOwn(action map[string]any) map[string]any {
	out, _ := crClone(action).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// crClone deep-copies a generic JSON value. A value of any other Go type (a struct, a
// []string, a map[string]string) is turned into its generic form through
// encoding/json; one that does not encode becomes nil.
func crClone(v any) any {
	switch x := v.(type) {
	case nil, string, bool, float64, json.Number,
		float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = crClone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = crClone(e)
		}
		return l
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil
		}
		var out any
		if json.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
}

func crObj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func crList(v any) []any {
	l, _ := v.([]any)
	return l
}

func crStr(v any) string {
	s, _ := v.(string)
	return s
}

// crNum reads a JSON number of any of the forms a decoded value may hold.
func crNum(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// crEqualString reports whether a and b are the same string.
func crEqualString(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	return ok1 && ok2 && as == bs
}

// crPut sets m[k] to v unless v is nil: a JSON null and an absent field are one here,
// as the reference's undefined is.
func crPut(m map[string]any, k string, v any) {
	if v != nil {
		m[k] = v
	}
}

// crSet sets m[k] to v, or removes it when v is nil.
func crSet(m map[string]any, k string, v any) {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// crIndexBy is the index of the first object in list whose key holds the string
// want, or -1.
func crIndexBy(list []any, key string, want any) int {
	for i, e := range list {
		if crEqualString(crObj(e)[key], want) {
			return i
		}
	}
	return -1
}

// crRemoveAt returns a new list without element i, so a list handed out before is
// left as it was.
func crRemoveAt(list []any, i int) []any {
	out := make([]any, 0, len(list)-1)
	out = append(out, list[:i]...)
	return append(out, list[i+1:]...)
}

// crSetMember adds a string to the list m[k] (creating it) unless it is there.
func crSetMember(m map[string]any, k string, v any) {
	if _, ok := v.(string); !ok {
		return
	}
	list := crList(m[k])
	for _, e := range list {
		if crEqualString(e, v) {
			return
		}
	}
	m[k] = append(list, v)
}

// crRemoveMember removes a string from the list m[k]; the list stays, even empty
// (for working directories an empty list and an absent one mean different things).
func crRemoveMember(m map[string]any, k string, v any) {
	list := crList(m[k])
	for i, e := range list {
		if crEqualString(e, v) {
			m[k] = crRemoveAt(list, i)
			return
		}
	}
}
