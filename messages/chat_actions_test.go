package messages_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// TestChatActionsJSON pins the JSON of every chat action the host builds: the wire
// shape clients already read, the action's own type, and its schema definition, which
// the Go type is named after.
func TestChatActionsJSON(t *testing.T) {
	v := schematest.Load(t)
	exit := 2
	cases := []struct {
		action messages.ChatAction
		want   string
	}{
		{messages.ChatTurnStartedAction{TurnID: "t1", StartedAt: "2026-10-01T10:00:00.000Z", Message: messages.UserMessage("!ls"), QueuedMessageID: "q1"},
			`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"!ls","origin":{"kind":"user"}},"queuedMessageId":"q1"}`},
		// A client's message goes on whole, fields the host does not model included.
		{messages.ChatTurnStartedAction{TurnID: "t2", StartedAt: "2026-10-01T10:00:00.000Z",
			Message: messages.Message{"text": "hi", "origin": map[string]any{"kind": "user"}, "model": map[string]any{"id": "m"}, "_meta": map[string]any{"x": true}}},
			`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"hi","origin":{"kind":"user"},"model":{"id":"m"},"_meta":{"x":true}}}`},
		{messages.ChatTurnCompleteAction{TurnID: "t1", Duration: 1234},
			`{"type":"chat/turnComplete","turnId":"t1","duration":1234}`},
		{messages.ChatTurnCancelledAction{TurnID: "t1", Duration: 0},
			`{"type":"chat/turnCancelled","turnId":"t1","duration":0}`},
		{messages.ChatErrorAction{TurnID: "t1", Duration: 0, Error: messages.ErrorInfo{ErrorType: "noAgent", Message: "no agent is attached to this session"}},
			`{"type":"chat/error","turnId":"t1","duration":0,"part":{"kind":"error","error":{"errorType":"noAgent","message":"no agent is attached to this session"}},
				"error":{"errorType":"noAgent","message":"no agent is attached to this session"}}`},
		{messages.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c1", ToolName: "terminal", DisplayName: "Terminal", Intention: "ls"},
			`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"c1","toolName":"terminal","displayName":"Terminal","intention":"ls"}`},
		{messages.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: "ls", ToolInput: "ls", Intention: "ls", Confirmed: messages.ConfirmedNotNeeded},
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c1","invocationMessage":"ls","toolInput":"ls","intention":"ls","confirmed":"not-needed"}`},
		{messages.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: "Run rm?"},
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c1","invocationMessage":"Run rm?"}`},
		{messages.ChatToolCallContentChangedAction{TurnID: "t1", ToolCallID: "c1",
			Content: []messages.TerminalContent{{Resource: "ahp-terminal:/t1", Title: "Terminal", IsPty: false}}},
			`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"c1","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal","isPty":false}]}`},
		{messages.ChatToolCallCompleteAction{TurnID: "t1", ToolCallID: "c1", Result: messages.ToolCallResult{Success: false, PastTenseMessage: "Command exited with code 2",
			Content: []messages.TerminalContent{{Resource: "ahp-terminal:/t1", Title: "Terminal", IsPty: true,
				Result: &messages.TerminalCommandResult{ExitCode: &exit, Preview: "no such file", Truncated: false}}}}},
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c1","result":{"success":false,"pastTenseMessage":"Command exited with code 2",
				"content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal","isPty":true,"result":{"exitCode":2,"preview":"no such file","truncated":false}}]}}`},
		// A command that could not run: an error, no exit code, no content.
		{messages.ChatToolCallCompleteAction{TurnID: "t1", ToolCallID: "c1", Result: messages.ToolCallResult{PastTenseMessage: "Failed to run command",
			Error: &messages.ToolCallError{Message: "the terminal did not start"}}},
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"c1","result":{"success":false,"pastTenseMessage":"Failed to run command","error":{"message":"the terminal did not start"}}}`},
		{messages.ChatPendingMessageSetAction{Kind: messages.PendingQueued, ID: "q1", Message: messages.UserMessage("next")},
			`{"type":"chat/pendingMessageSet","kind":"queued","id":"q1","message":{"text":"next","origin":{"kind":"user"}}}`},
		{messages.ChatPendingMessageRemovedAction{Kind: messages.PendingQueued, ID: "q1"},
			`{"type":"chat/pendingMessageRemoved","kind":"queued","id":"q1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.action.ChatActionType(), func(t *testing.T) {
			raw, err := json.Marshal(tc.action)
			if err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, "the action", generic(t, raw), generic(t, []byte(tc.want)))
			checkActionType(t, v, raw, tc.action.ChatActionType(), reflect.TypeOf(tc.action).Name())
		})
	}
}

func TestSessionActionsJSON(t *testing.T) {
	v := schematest.Load(t)
	cases := []struct {
		action messages.SessionAction
		want   string
	}{
		{messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: "ahp-session:/s/chat", Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: "2026-10-01T10:00:00.000Z"}},
			`{"type":"session/chatAdded","summary":{"resource":"ahp-session:/s/chat","title":"Chat","status":1,"modifiedAt":"2026-10-01T10:00:00.000Z"}}`},
		{messages.SessionChatRemovedAction{Chat: "ahp-session:/s/chat"},
			`{"type":"session/chatRemoved","chat":"ahp-session:/s/chat"}`},
		{messages.SessionTitleChangedAction{Title: "ls -la"},
			`{"type":"session/titleChanged","title":"ls -la"}`},
	}
	for _, tc := range cases {
		t.Run(tc.action.SessionActionType(), func(t *testing.T) {
			raw, err := json.Marshal(tc.action)
			if err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, "the action", generic(t, raw), generic(t, []byte(tc.want)))
			checkActionType(t, v, raw, tc.action.SessionActionType(), reflect.TypeOf(tc.action).Name())
		})
	}
}

// checkActionType checks that an encoded action says its own type, is named after its
// schema definition, and is valid under it and as a state action.
func checkActionType(t *testing.T, v *schematest.Validator, raw []byte, typ, goName string) {
	t.Helper()
	a := chatDecode(t, raw, false)
	if a["type"] != typ {
		t.Errorf("type %v, want %s", a["type"], typ)
	}
	def := chatActionDef(a)
	if goName != def {
		t.Errorf("the Go type %s is not named after its schema definition %s", goName, def)
	}
	if err := v.Validate(def, json.RawMessage(raw)); err != nil {
		t.Errorf("%s: %v", raw, err)
	}
	if err := v.Validate("StateAction", json.RawMessage(raw)); err != nil {
		t.Errorf("%s as a StateAction: %v", raw, err)
	}
}

// TestChatValuesJSON checks the values inside the host's actions and states against
// their schema definitions.
func TestChatValuesJSON(t *testing.T) {
	v := schematest.Load(t)
	exit := 0
	result := messages.ToolCallResult{Success: true, PastTenseMessage: "Ran command",
		Content: []messages.TerminalContent{{Resource: "ahp-terminal:/t1", Title: "Terminal", IsPty: true,
			Result: &messages.TerminalCommandResult{ExitCode: &exit, Preview: "a b", Truncated: false}}}}
	turn := messages.Turn{ID: "t1", StartedAt: "2026-10-01T10:00:00.000Z", Duration: 40, Message: messages.UserMessage("!ls"), State: messages.TurnStateComplete,
		ToolCall: messages.CompletedToolCall{ToolCallID: "c1", ToolName: "terminal", DisplayName: "Terminal", Intention: "ls",
			InvocationMessage: "ls", ToolInput: "ls", Confirmed: messages.ConfirmedNotNeeded, ToolCallResult: result}}
	cases := []struct {
		def   string
		value any
		want  string
	}{
		{"ToolResultTerminalContent", messages.TerminalContent{Resource: "ahp-terminal:/t1", Title: "Terminal"},
			`{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal","isPty":false}`},
		{"ToolCallResult", result,
			`{"success":true,"pastTenseMessage":"Ran command","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal","isPty":true,
				"result":{"exitCode":0,"preview":"a b","truncated":false}}]}`},
		{"ErrorInfo", messages.ErrorInfo{ErrorType: "noAgent", Message: "no agent"}, `{"errorType":"noAgent","message":"no agent"}`},
		{"ChatSummary", messages.ChatSummary{Resource: "ahp-chat:/c", Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: "2026-10-01T10:00:00.000Z"},
			`{"resource":"ahp-chat:/c","title":"Chat","status":1,"modifiedAt":"2026-10-01T10:00:00.000Z"}`},
		{"ToolCallCompletedState", turn.ToolCall,
			`{"status":"completed","toolCallId":"c1","toolName":"terminal","displayName":"Terminal","intention":"ls","invocationMessage":"ls","toolInput":"ls",
				"confirmed":"not-needed","success":true,"pastTenseMessage":"Ran command","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal",
				"isPty":true,"result":{"exitCode":0,"preview":"a b","truncated":false}}]}`},
		{"Turn", turn,
			`{"id":"t1","startedAt":"2026-10-01T10:00:00.000Z","duration":40,"message":{"text":"!ls","origin":{"kind":"user"}},"state":"complete",
				"responseParts":[{"kind":"toolCall","toolCall":{"status":"completed","toolCallId":"c1","toolName":"terminal","displayName":"Terminal","intention":"ls",
				"invocationMessage":"ls","toolInput":"ls","confirmed":"not-needed","success":true,"pastTenseMessage":"Ran command","content":[{"type":"terminal",
				"resource":"ahp-terminal:/t1","title":"Terminal","isPty":true,"result":{"exitCode":0,"preview":"a b","truncated":false}}]}}]}`},
		{"ChatState", messages.NewChatState("ahp-chat:/c", "Chat", "2026-10-01T09:00:00.000Z"),
			`{"resource":"ahp-chat:/c","title":"Chat","status":1,"modifiedAt":"2026-10-01T09:00:00.000Z","turns":[]}`},
		{"SessionState", messages.NewSessionState("termhost", "", []string{"file:///w"}),
			`{"provider":"termhost","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"workingDirectories":["file:///w"]}`},
		{"SessionState", messages.NewSessionState("termhost", "t", nil),
			`{"provider":"termhost","title":"t","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"workingDirectories":[]}`},
	}
	for _, tc := range cases {
		raw, err := json.Marshal(tc.value)
		if err != nil {
			t.Fatalf("%s: %v", tc.def, err)
		}
		assertJSONEqual(t, tc.def, generic(t, raw), generic(t, []byte(tc.want)))
		if err := v.Validate(tc.def, json.RawMessage(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestChatStateApply folds a `!` command's actions, as the host builds them, and
// checks the chat as a client folding the same JSON sees it, and the questions the
// host asks of it.
func TestChatStateApply(t *testing.T) {
	r := newChatRun(t)
	host := messages.NewChatState("ahp-chat:/c1", "Chat", "2026-10-01T09:00:00.000Z")
	client := chatState()
	apply := func(a messages.ChatAction) {
		t.Helper()
		raw, err := host.Apply(a)
		if err != nil {
			t.Fatal(err)
		}
		r.fold(client, string(raw))
	}
	r.fold(client, `{"type":"chat/pendingMessageSet","kind":"queued","id":"q1","message":{"text":"!ls","origin":{"kind":"user"},"model":{"id":"kept"}}}`)
	messages.ReduceChat(host, chatDecode(t, []byte(`{"type":"chat/pendingMessageSet","kind":"queued","id":"q1","message":{"text":"!ls","origin":{"kind":"user"},"model":{"id":"kept"}}}`), false))

	id, msg, ok := host.FirstQueued()
	if !ok || id != "q1" || msg.Text() != "!ls" || asMap(msg["model"])["id"] != "kept" {
		t.Fatalf("FirstQueued = %q, %v, %v", id, msg, ok)
	}
	apply(messages.ChatPendingMessageRemovedAction{Kind: messages.PendingQueued, ID: id})
	apply(messages.ChatTurnStartedAction{TurnID: "t1", StartedAt: "2026-10-01T10:00:00.000Z", Message: msg, QueuedMessageID: id})
	if _, _, ok := host.FirstQueued(); ok {
		t.Error("the queue is not empty after its message started")
	}
	if got := host.ActiveTurnID(); got != "t1" {
		t.Errorf("ActiveTurnID = %q, want t1", got)
	}
	apply(messages.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c1", ToolName: "terminal", DisplayName: "Terminal", Intention: "ls"})
	apply(messages.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: "ls", ToolInput: "ls", Intention: "ls", Confirmed: messages.ConfirmedNotNeeded})
	block := messages.TerminalContent{Resource: "ahp-terminal:/c1", Title: "Terminal", IsPty: true}
	apply(messages.ChatToolCallContentChangedAction{TurnID: "t1", ToolCallID: "c1", Content: []messages.TerminalContent{block}})

	// While the call runs, its block has no result yet.
	got, ok := host.TerminalContent("c1", "ahp-terminal:/c1")
	if !ok || !reflect.DeepEqual(got, block) {
		t.Fatalf("TerminalContent while running = %+v, %v; want %+v", got, ok, block)
	}
	if _, ok := host.TerminalContent("c1", "ahp-terminal:/other"); ok {
		t.Error("a block found for a terminal the call does not name")
	}
	if _, ok := host.TerminalContent("c2", "ahp-terminal:/c1"); ok {
		t.Error("a block found for a tool call that is not there")
	}

	exit := 3
	block.Result = &messages.TerminalCommandResult{ExitCode: &exit, Preview: "out", Truncated: true}
	apply(messages.ChatToolCallCompleteAction{TurnID: "t1", ToolCallID: "c1", Result: messages.ToolCallResult{PastTenseMessage: "Command exited with code 3",
		Content: []messages.TerminalContent{block}}})
	apply(messages.ChatTurnCompleteAction{TurnID: "t1", Duration: 12})
	if got := host.ActiveTurnID(); got != "" {
		t.Errorf("ActiveTurnID after the turn = %q", got)
	}
	got, ok = host.TerminalContent("c1", "ahp-terminal:/c1")
	if !ok || !reflect.DeepEqual(got, block) {
		t.Fatalf("TerminalContent after the turn = %+v, %v; want %+v", got, ok, block)
	}

	apply(messages.ChatTurnStartedAction{TurnID: "t2", StartedAt: "2026-10-01T10:00:01.000Z", Message: messages.UserMessage("hello")})
	apply(messages.ChatErrorAction{TurnID: "t2", Error: messages.ErrorInfo{ErrorType: "noAgent", Message: "no agent"}})

	assertJSONEqual(t, "the host's state", generic(t, host), generic(t, client))
	r.expect(client, "turns.0.message.model", `{"id":"kept"}`)
	r.expect(client, "turns.1.error", `{"errorType":"noAgent","message":"no agent"}`)
	r.expect(client, "status", `2`)
	r.validateState(client)

	// A snapshot is a copy: changing the chat leaves it as it was.
	snap := host.Clone()
	before := pretty(generic(t, snap))
	apply(messages.ChatTurnStartedAction{TurnID: "t3", StartedAt: "2026-10-01T10:00:02.000Z", Message: messages.UserMessage("again")})
	host.SetModifiedAt("2026-10-02T00:00:00.000Z")
	if after := pretty(generic(t, snap)); after != before {
		t.Errorf("the snapshot changed:\n%s\nbecame\n%s", before, after)
	}
}

// TestChatStateAppendTurn checks a turn the host rebuilds from what it kept: it is the
// state a client folding the command's actions would hold, and its block is found.
func TestChatStateAppendTurn(t *testing.T) {
	r := newChatRun(t)
	exit := 0
	block := messages.TerminalContent{Resource: "ahp-terminal:/k", Title: "Terminal", IsPty: true,
		Result: &messages.TerminalCommandResult{ExitCode: &exit, Preview: "a", Truncated: false}}
	result := messages.ToolCallResult{Success: true, PastTenseMessage: "Ran command", Content: []messages.TerminalContent{block}}

	rebuilt := messages.NewChatState("ahp-chat:/c1", "Chat", "2026-10-01T09:00:00.000Z")
	rebuilt.AppendTurn(messages.Turn{ID: "t1", StartedAt: "2026-10-01T10:00:00.000Z", Duration: 12, Message: messages.UserMessage("!ls"), State: messages.TurnStateComplete,
		ToolCall: messages.CompletedToolCall{ToolCallID: "c1", ToolName: "terminal", DisplayName: "Terminal", Intention: "ls",
			InvocationMessage: "ls", ToolInput: "ls", Confirmed: messages.ConfirmedNotNeeded, ToolCallResult: result}})

	folded := messages.NewChatState("ahp-chat:/c1", "Chat", "2026-10-01T09:00:00.000Z")
	for _, a := range []messages.ChatAction{
		messages.ChatTurnStartedAction{TurnID: "t1", StartedAt: "2026-10-01T10:00:00.000Z", Message: messages.UserMessage("!ls")},
		messages.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c1", ToolName: "terminal", DisplayName: "Terminal", Intention: "ls"},
		messages.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: "ls", ToolInput: "ls", Intention: "ls", Confirmed: messages.ConfirmedNotNeeded},
		messages.ChatToolCallCompleteAction{TurnID: "t1", ToolCallID: "c1", Result: result},
		messages.ChatTurnCompleteAction{TurnID: "t1", Duration: 12},
	} {
		if _, err := folded.Apply(a); err != nil {
			t.Fatal(err)
		}
	}
	assertJSONEqual(t, "the rebuilt chat", generic(t, rebuilt), generic(t, folded))
	r.validateState(rebuilt)
	if got, ok := rebuilt.TerminalContent("c1", "ahp-terminal:/k"); !ok || !reflect.DeepEqual(got, block) {
		t.Errorf("TerminalContent = %+v, %v; want %+v", got, ok, block)
	}
	// Stored as encoding/json decodes it, so every reader's type assertions hold.
	if _, ok := rebuilt["turns"].([]any)[0].(map[string]any); !ok {
		t.Errorf("a turn stored as %T", rebuilt["turns"].([]any)[0])
	}
}

// TestSessionStateApply folds the session actions the host sends.
func TestSessionStateApply(t *testing.T) {
	v := schematest.Load(t)
	st := messages.NewSessionState("termhost", "", nil)
	for _, a := range []messages.SessionAction{
		messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: "ahp-session:/s/chat", Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: "2026-10-01T10:00:00.000Z"}},
		messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: "ahp-session:/s/chat-2", Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: "2026-10-01T10:00:00.000Z"}},
		messages.SessionTitleChangedAction{Title: "ls"},
		messages.SessionChatRemovedAction{Chat: "ahp-session:/s/chat-2"},
	} {
		if _, err := st.Apply(a); err != nil {
			t.Fatal(err)
		}
	}
	st.SetDefaultChat("ahp-session:/s/chat")
	st.SetDefaultChat("ahp-session:/s/other") // the first stays
	chatExpectPath(t, st, "chats", `[{"resource":"ahp-session:/s/chat","title":"Chat","status":1,"modifiedAt":"2026-10-01T10:00:00.000Z"}]`)
	chatExpectPath(t, st, "defaultChat", `"ahp-session:/s/chat"`)
	if st.Title() != "ls" {
		t.Errorf("Title = %q", st.Title())
	}
	if err := v.Validate("SessionState", st); err != nil {
		t.Error(err)
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
