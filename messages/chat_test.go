package messages_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// TestChatReducerFixtures runs every chat fixture of AHP 0.8.0 through ReduceChat,
// with numbers decoded both as encoding/json does by default and as json.Number, and
// compares the state with `expected` (a null there means absent).
func TestChatReducerFixtures(t *testing.T) {
	v := schematest.Load(t)
	ran := 0
	for _, path := range fixtureFiles(t, "reducers") {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		var fx reducerFixture
		if err := json.Unmarshal(readFile(t, path), &fx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fx.Reducer != "chat" {
			continue
		}
		ran++
		for _, useNumber := range []bool{false, true} {
			sub := name
			if useNumber {
				sub += "/json.Number"
			}
			t.Run(sub, func(t *testing.T) {
				state := chatDecode(t, fx.Initial, useNumber)
				for i, raw := range fx.Actions {
					a := chatDecode(t, raw, useNumber)
					if err := v.Validate(chatActionDef(a), dropNulls(generic(t, raw))); err != nil {
						t.Errorf("action %d: %v", i, err)
					}
					messages.ReduceChat(state, a)
				}
				got := dropNulls(generic(t, state))
				assertJSONEqual(t, fx.Description, got, dropNulls(generic(t, fx.Expected)))
				if err := v.Validate("ChatState", got); err != nil {
					t.Error(err)
				}
			})
		}
	}
	// 084, 085, 086, 128-toolcallconfirmed and 130-selectedoption.
	if ran < 5 {
		t.Errorf("ran %d chat fixtures, want at least 5", ran)
	}
}

func TestChatTurnLifecycle(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"!ls","origin":{"kind":"user"}}}`,
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"tc1","toolName":"run_in_terminal","displayName":"Terminal","intention":"ls"}`,
	)
	r.expect(st, "activeTurn", `{"id":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"!ls","origin":{"kind":"user"}},
		"responseParts":[{"kind":"toolCall","toolCall":{"status":"streaming","toolCallId":"tc1","toolName":"run_in_terminal","displayName":"Terminal","intention":"ls"}}]}`)
	r.expect(st, "status", `8`)

	r.fold(st,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"tc1","invocationMessage":"ls","toolInput":"ls","confirmed":"not-needed"}`,
		`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"tc1","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"ls","isPty":true}]}`,
	)
	r.expect(st, "activeTurn.responseParts", `[{"kind":"toolCall","toolCall":{"status":"running","toolCallId":"tc1","toolName":"run_in_terminal","displayName":"Terminal","intention":"ls",
		"invocationMessage":"ls","toolInput":"ls","confirmed":"not-needed","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"ls","isPty":true}]}}]`)

	r.fold(st,
		`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"tc1","result":{"success":true,"pastTenseMessage":"Ran command",
			"content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"ls","isPty":true,"result":{"exitCode":0,"preview":"a b","truncated":false}}]}}`,
		`{"type":"chat/turnComplete","turnId":"t1","duration":1234}`,
	)
	r.expectState(st, `{"resource":"ahp-chat:/c1","title":"Chat","status":1,"modifiedAt":"2026-10-01T09:00:00.000Z","turns":[
		{"id":"t1","startedAt":"2026-10-01T10:00:00.000Z","duration":1234,"message":{"text":"!ls","origin":{"kind":"user"}},"state":"complete",
		 "responseParts":[{"kind":"toolCall","toolCall":{"status":"completed","toolCallId":"tc1","toolName":"run_in_terminal","displayName":"Terminal","intention":"ls",
			"invocationMessage":"ls","toolInput":"ls","confirmed":"not-needed","success":true,"pastTenseMessage":"Ran command",
			"content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"ls","isPty":true,"result":{"exitCode":0,"preview":"a b","truncated":false}}]}}]}]}`)
}

func TestChatErrorShapes(t *testing.T) {
	cases := map[string]string{
		"1.x part":  `{"type":"chat/error","turnId":"t1","duration":5,"part":{"kind":"error","error":{"errorType":"backendStartFailed","message":"boom","stack":"at x"},"resumable":true}}`,
		"0.8 error": `{"type":"chat/error","turnId":"t1","duration":5,"error":{"errorType":"backendStartFailed","message":"boom","stack":"at x"}}`,
	}
	for name, errAction := range cases {
		t.Run(name, func(t *testing.T) {
			r := newChatRun(t)
			st := chatState()
			st["status"] = float64(1 | 32) // Idle, IsRead
			r.fold(st,
				`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"hi","origin":{"kind":"user"}}}`,
				`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"tc1","toolName":"bash","displayName":"Bash"}`,
			)
			r.expect(st, "status", `8`) // turnStarted clears IsRead
			a := chatDecode(t, []byte(errAction), false)
			if name == "0.8 error" {
				r.validate(a)
			}
			messages.ReduceChat(st, a)
			r.expectState(st, `{"resource":"ahp-chat:/c1","title":"Chat","status":2,"modifiedAt":"2026-10-01T09:00:00.000Z","turns":[
				{"id":"t1","startedAt":"2026-10-01T10:00:00.000Z","duration":5,"message":{"text":"hi","origin":{"kind":"user"}},"state":"error",
				 "error":{"errorType":"backendStartFailed","message":"boom","stack":"at x"},
				 "responseParts":[{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"tc1","toolName":"bash","displayName":"Bash","invocationMessage":"","reason":"skipped"}}]}]}`)
		})
	}
}

// TestChatEndTurnForceCancels checks that a turn's end cancels, with reason
// "skipped", every tool call that has not finished, and leaves finished ones alone.
func TestChatEndTurnForceCancels(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"go","origin":{"kind":"user"}}}`,
		// a: streaming, with a progress message and partial input.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"a","toolName":"bash","displayName":"Bash","_meta":{"k":1}}`,
		`{"type":"chat/toolCallDelta","turnId":"t1","toolCallId":"a","content":"{\"cmd\":","invocationMessage":"Preparing"}`,
		// b: pending confirmation.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"b","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"b","invocationMessage":"Run rm","toolInput":"rm x","options":[{"id":"ok","label":"OK","kind":"approve"}]}`,
		// c: running with content.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"c","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"c","invocationMessage":"Run ls","toolInput":"ls","confirmed":"setting"}`,
		`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"c","content":[{"type":"text","text":"partial"}]}`,
		// d: completed.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"d","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"d","invocationMessage":"Run pwd","confirmed":"not-needed"}`,
		`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"d","result":{"success":true,"pastTenseMessage":"Ran pwd"}}`,
		// e: waiting for its result to be confirmed.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"e","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"e","invocationMessage":"Run id","confirmed":"user-action"}`,
		`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"e","result":{"success":true,"pastTenseMessage":"Ran id"},"requiresResultConfirmation":true}`,
		// f: denied.
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"f","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"f","invocationMessage":"Run dd"}`,
		`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"f","approved":false,"reason":"denied","reasonMessage":"no"}`,
	)
	r.expect(st, "status", `24`) // b and e wait on the user
	r.fold(st, `{"type":"chat/turnCancelled","turnId":"t1","duration":-3}`)
	r.expect(st, "status", `1`)
	r.expect(st, "turns.0.state", `"cancelled"`)
	r.expect(st, "turns.0.duration", `0`) // a negative duration is clamped
	r.expect(st, "turns.0.responseParts", `[
		{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"a","toolName":"bash","displayName":"Bash","_meta":{"k":1},"invocationMessage":"Preparing","reason":"skipped"}},
		{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"b","toolName":"bash","displayName":"Bash","invocationMessage":"Run rm","toolInput":"rm x","reason":"skipped"}},
		{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"c","toolName":"bash","displayName":"Bash","invocationMessage":"Run ls","toolInput":"ls","reason":"skipped"}},
		{"kind":"toolCall","toolCall":{"status":"completed","toolCallId":"d","toolName":"bash","displayName":"Bash","invocationMessage":"Run pwd","confirmed":"not-needed","success":true,"pastTenseMessage":"Ran pwd"}},
		{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"e","toolName":"bash","displayName":"Bash","invocationMessage":"Run id","reason":"skipped"}},
		{"kind":"toolCall","toolCall":{"status":"cancelled","toolCallId":"f","toolName":"bash","displayName":"Bash","invocationMessage":"Run dd","reason":"denied","reasonMessage":"no"}}]`)
	r.validateState(st)
}

func TestChatToolCallConfirmations(t *testing.T) {
	start := []string{
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"go","origin":{"kind":"user"}}}`,
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"tc","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"tc","invocationMessage":"Run rm","toolInput":"rm x","confirmationTitle":"Run in terminal","editable":true,
			"options":[{"id":"yes","label":"Yes","kind":"approve"},{"id":"no","label":"No","kind":"deny"}]}`,
	}
	t.Run("denied with an option", func(t *testing.T) {
		r := newChatRun(t)
		st := chatState()
		r.fold(st, start...)
		r.expect(st, "status", `24`)
		r.fold(st, `{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"tc","approved":false,"reason":"denied","selectedOptionId":"no",
			"userSuggestion":{"text":"use trash","origin":{"kind":"user"}}}`)
		r.expect(st, "activeTurn.responseParts.0.toolCall", `{"status":"cancelled","toolCallId":"tc","toolName":"bash","displayName":"Bash","invocationMessage":"Run rm","toolInput":"rm x",
			"reason":"denied","userSuggestion":{"text":"use trash","origin":{"kind":"user"}},"selectedOption":{"id":"no","label":"No","kind":"deny"}}`)
		r.expect(st, "status", `8`)
	})
	t.Run("approved with edited input, result confirmed", func(t *testing.T) {
		r := newChatRun(t)
		st := chatState()
		r.fold(st, start...)
		r.fold(st,
			`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"tc","approved":true,"confirmed":"user-action","editedToolInput":"rm -i x"}`,
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"tc","requiresResultConfirmation":true,
				"result":{"success":false,"pastTenseMessage":"Failed","structuredContent":{"a":1},"error":{"message":"denied","code":"EPERM"}}}`,
		)
		r.expect(st, "status", `24`)
		r.expect(st, "activeTurn.responseParts.0.toolCall.status", `"pending-result-confirmation"`)
		r.fold(st, `{"type":"chat/toolCallResultConfirmed","turnId":"t1","toolCallId":"tc","approved":true}`)
		r.expect(st, "activeTurn.responseParts.0.toolCall", `{"status":"completed","toolCallId":"tc","toolName":"bash","displayName":"Bash","invocationMessage":"Run rm","toolInput":"rm -i x",
			"confirmed":"user-action","success":false,"pastTenseMessage":"Failed","structuredContent":{"a":1},"error":{"message":"denied","code":"EPERM"}}`)
		r.expect(st, "status", `8`)
		r.validateState(st)
	})
	t.Run("result denied", func(t *testing.T) {
		r := newChatRun(t)
		st := chatState()
		r.fold(st, start...)
		r.fold(st,
			`{"type":"chat/toolCallComplete","turnId":"t1","toolCallId":"tc","requiresResultConfirmation":true,"result":{"success":true,"pastTenseMessage":"Ran"}}`,
			`{"type":"chat/toolCallResultConfirmed","turnId":"t1","toolCallId":"tc","approved":false}`,
		)
		// Completed straight from pending-confirmation: confirmed defaults to not-needed.
		r.expect(st, "activeTurn.responseParts.0.toolCall", `{"status":"cancelled","toolCallId":"tc","toolName":"bash","displayName":"Bash","invocationMessage":"Run rm","toolInput":"rm x","reason":"result-denied"}`)
	})
	t.Run("ready again while running asks again", func(t *testing.T) {
		r := newChatRun(t)
		st := chatState()
		r.fold(st, start[:2]...)
		r.fold(st,
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"tc","invocationMessage":"Run ls","toolInput":"ls","confirmed":"not-needed","intention":"list files"}`,
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"tc","invocationMessage":"Allow network?"}`,
		)
		r.expect(st, "activeTurn.responseParts.0.toolCall", `{"status":"pending-confirmation","toolCallId":"tc","toolName":"bash","displayName":"Bash","intention":"list files","invocationMessage":"Allow network?"}`)
		// Actions that do not apply to a pending call change nothing.
		before := pretty(generic(t, st))
		r.fold(st,
			`{"type":"chat/toolCallContentChanged","turnId":"t1","toolCallId":"tc","content":[{"type":"text","text":"x"}]}`,
			`{"type":"chat/toolCallDelta","turnId":"t1","toolCallId":"tc","content":"x"}`,
			`{"type":"chat/toolCallResultConfirmed","turnId":"t1","toolCallId":"tc","approved":true}`,
			`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"missing","invocationMessage":"x"}`,
		)
		if after := pretty(generic(t, st)); after != before {
			t.Errorf("state changed:\n%s\nbecame\n%s", before, after)
		}
	})
}

func TestChatTurnStartedConsumesPendingMessage(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"q1","message":{"text":"first","origin":{"kind":"user"}}}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"q2","message":{"text":"second","origin":{"kind":"user"}}}`,
		`{"type":"chat/pendingMessageSet","kind":"steering","id":"s1","message":{"text":"steer","origin":{"kind":"user"}}}`,
		`{"type":"chat/pendingMessageRemoved","kind":"queued","id":"nope"}`,
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"first","origin":{"kind":"user"}},"queuedMessageId":"q1"}`,
	)
	r.expect(st, "queuedMessages", `[{"id":"q2","message":{"text":"second","origin":{"kind":"user"}}}]`)
	r.expect(st, "steeringMessage", `{"id":"s1","message":{"text":"steer","origin":{"kind":"user"}}}`)
	r.fold(st,
		`{"type":"chat/turnComplete","turnId":"t1","duration":1}`,
		`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2026-10-01T10:00:01.000Z","message":{"text":"second","origin":{"kind":"user"}},"queuedMessageId":"q2"}`,
	)
	// The last queued message gone, the queue goes too.
	r.expect(st, "queuedMessages", ``)
	r.expect(st, "steeringMessage.id", `"s1"`)
	r.fold(st,
		`{"type":"chat/turnComplete","turnId":"t2","duration":1}`,
		`{"type":"chat/turnStarted","turnId":"t3","startedAt":"2026-10-01T10:00:02.000Z","message":{"text":"steer","origin":{"kind":"user"}},"queuedMessageId":"s1"}`,
	)
	r.expect(st, "steeringMessage", ``)
	r.validateState(st)
}

func TestChatPendingMessages(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	msg := func(text string) string { return `{"text":"` + text + `","origin":{"kind":"user"}}` }
	r.fold(st,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"a","message":`+msg("a")+`}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"b","message":`+msg("b")+`}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"c","message":`+msg("c")+`}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"b","message":`+msg("b2")+`}`, // updated in place
		`{"type":"chat/queuedMessagesReordered","order":["c","x","a","c"]}`,                  // b, not named, goes last
	)
	r.expect(st, "queuedMessages", `[{"id":"c","message":`+msg("c")+`},{"id":"a","message":`+msg("a")+`},{"id":"b","message":`+msg("b2")+`}]`)
	r.fold(st,
		`{"type":"chat/pendingMessageSet","kind":"steering","id":"s","message":`+msg("s")+`}`,
		`{"type":"chat/pendingMessageSet","kind":"steering","id":"s2","message":`+msg("s2")+`}`, // one steering message
		`{"type":"chat/pendingMessageRemoved","kind":"steering","id":"s"}`,                      // not the current one
		`{"type":"chat/pendingMessageRemoved","kind":"queued","id":"a"}`,
	)
	r.expect(st, "steeringMessage", `{"id":"s2","message":`+msg("s2")+`}`)
	r.expect(st, "queuedMessages", `[{"id":"c","message":`+msg("c")+`},{"id":"b","message":`+msg("b2")+`}]`)
	r.fold(st, `{"type":"chat/pendingMessageRemoved","kind":"steering","id":"s2"}`)
	r.expect(st, "steeringMessage", ``)
	r.validateState(st)
}

func TestChatTurnStartedNoOps(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"one","origin":{"kind":"user"}}}`,
		`{"type":"chat/turnComplete","turnId":"t1","duration":10}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"q","message":{"text":"q","origin":{"kind":"user"}}}`,
		`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2026-10-01T10:00:01.000Z","message":{"text":"two","origin":{"kind":"user"}}}`,
		`{"type":"chat/responsePart","turnId":"t2","part":{"kind":"markdown","id":"m1","content":"Hel"}}`,
		`{"type":"chat/delta","turnId":"t2","partId":"m1","content":"lo"}`,
	)
	before := pretty(generic(t, st))
	r.fold(st,
		// A completed turn's id, even naming a queued message: nothing at all.
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:02.000Z","message":{"text":"again","origin":{"kind":"user"}},"queuedMessageId":"q"}`,
		// The active turn's id.
		`{"type":"chat/turnStarted","turnId":"t2","startedAt":"2026-10-01T10:00:03.000Z","message":{"text":"again","origin":{"kind":"user"}}}`,
	)
	if after := pretty(generic(t, st)); after != before {
		t.Errorf("turnStarted for a known turn changed the state:\n%s\nbecame\n%s", before, after)
	}
	r.expect(st, "activeTurn.responseParts", `[{"kind":"markdown","id":"m1","content":"Hello"}]`)
}

// TestChatTurnStartedDisplacesActiveTurn pins the choice for a turn started while
// another runs (a ! command during an agent turn): the new turn takes activeTurn, the
// old one leaves the state, as in every client's reducer, and its later actions
// change nothing.
func TestChatTurnStartedDisplacesActiveTurn(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/turnStarted","turnId":"agent","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"refactor","origin":{"kind":"user"}}}`,
		`{"type":"chat/toolCallStart","turnId":"agent","toolCallId":"tc","toolName":"edit","displayName":"Edit"}`,
		`{"type":"chat/turnStarted","turnId":"bang","startedAt":"2026-10-01T10:00:05.000Z","message":{"text":"!ls","origin":{"kind":"user"}}}`,
		`{"type":"chat/toolCallReady","turnId":"agent","toolCallId":"tc","invocationMessage":"Edit","confirmed":"not-needed"}`,
		`{"type":"chat/turnComplete","turnId":"agent","duration":9000}`,
	)
	r.expect(st, "activeTurn", `{"id":"bang","startedAt":"2026-10-01T10:00:05.000Z","message":{"text":"!ls","origin":{"kind":"user"}},"responseParts":[]}`)
	r.expect(st, "turns", `[]`)
	r.fold(st, `{"type":"chat/turnComplete","turnId":"bang","duration":50}`)
	r.expect(st, "turns.0.id", `"bang"`)
	r.expect(st, "status", `1`)
}

// TestChatMismatchedTurnChangesNothing sends every turn-scoped action with a turnId
// that is not the active turn's.
func TestChatMismatchedTurnChangesNothing(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/turnStarted","turnId":"t1","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"go","origin":{"kind":"user"}}}`,
		`{"type":"chat/responsePart","turnId":"t1","part":{"kind":"markdown","id":"m","content":"x"}}`,
		`{"type":"chat/toolCallStart","turnId":"t1","toolCallId":"tc","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallReady","turnId":"t1","toolCallId":"tc","invocationMessage":"Run","confirmed":"not-needed"}`,
	)
	before := pretty(generic(t, st))
	for _, a := range []string{
		`{"type":"chat/responsePart","turnId":"t0","part":{"kind":"markdown","id":"m2","content":"y"}}`,
		`{"type":"chat/delta","turnId":"t0","partId":"m","content":"y"}`,
		`{"type":"chat/reasoning","turnId":"t0","partId":"m","content":"y"}`,
		`{"type":"chat/usage","turnId":"t0","usage":{"inputTokens":1}}`,
		`{"type":"chat/toolCallStart","turnId":"t0","toolCallId":"tc2","toolName":"bash","displayName":"Bash"}`,
		`{"type":"chat/toolCallDelta","turnId":"t0","toolCallId":"tc","content":"y"}`,
		`{"type":"chat/toolCallReady","turnId":"t0","toolCallId":"tc","invocationMessage":"again"}`,
		`{"type":"chat/toolCallConfirmed","turnId":"t0","toolCallId":"tc","approved":false,"reason":"denied"}`,
		`{"type":"chat/toolCallContentChanged","turnId":"t0","toolCallId":"tc","content":[]}`,
		`{"type":"chat/toolCallComplete","turnId":"t0","toolCallId":"tc","result":{"success":true,"pastTenseMessage":"Ran"}}`,
		`{"type":"chat/toolCallResultConfirmed","turnId":"t0","toolCallId":"tc","approved":true}`,
		`{"type":"chat/turnComplete","turnId":"t0","duration":1}`,
		`{"type":"chat/turnCancelled","turnId":"t0","duration":1}`,
		`{"type":"chat/error","turnId":"t0","duration":1,"error":{"errorType":"x","message":"y"}}`,
		// Unknown types, and actions of other channels.
		`{"type":"chat/somethingFromTheFuture","turnId":"t1"}`,
		`{"type":"terminal/data","data":"x"}`,
		`{"type":"session/titleChanged","title":"x"}`,
	} {
		messages.ReduceChat(st, chatDecode(t, []byte(a), false))
		if after := pretty(generic(t, st)); after != before {
			t.Fatalf("%s changed the state:\n%s\nbecame\n%s", a, before, after)
		}
	}
}

// TestChatReducerKeepsNoReferences checks that the state shares nothing mutable with
// the actions folded into it, and that values of other Go types are stored in their
// generic JSON form.
func TestChatReducerKeepsNoReferences(t *testing.T) {
	st := chatState()
	msg := map[string]any{"text": "go", "origin": map[string]any{"kind": "user"}}
	messages.ReduceChat(st, map[string]any{"type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-10-01T10:00:00.000Z", "message": msg})
	messages.ReduceChat(st, map[string]any{"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "tc", "toolName": "bash", "displayName": "Bash"})
	messages.ReduceChat(st, map[string]any{"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "tc", "invocationMessage": "Run", "confirmed": "not-needed"})
	content := []map[string]any{{"type": "terminal", "resource": "ahp-terminal:/t1", "title": "ls"}}
	messages.ReduceChat(st, map[string]any{"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "tc", "content": content})
	msg["text"] = "changed"
	msg["origin"].(map[string]any)["kind"] = "agent"
	content[0]["title"] = "changed"

	newChatRun(t).expect(st, "activeTurn.message", `{"text":"go","origin":{"kind":"user"}}`)
	got := st["activeTurn"].(map[string]any)["responseParts"].([]any)[0].(map[string]any)["toolCall"].(map[string]any)["content"]
	if _, ok := got.([]any); !ok {
		t.Fatalf("content stored as %T, want []any", got)
	}
	assertJSONEqual(t, "content", generic(t, got), generic(t, []byte(`[{"type":"terminal","resource":"ahp-terminal:/t1","title":"ls"}]`)))
}

func TestChatWorkingDirectoriesAndFields(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	r.fold(st,
		`{"type":"chat/workingDirectorySet","directory":"file:///a"}`,
		`{"type":"chat/workingDirectorySet","directory":"file:///b"}`,
		`{"type":"chat/workingDirectorySet","directory":"file:///a"}`,
		`{"type":"chat/workingDirectoryRemoved","directory":"file:///c"}`,
		`{"type":"chat/activityChanged","activity":"Thinking"}`,
		`{"type":"chat/draftChanged","draft":{"text":"half","origin":{"kind":"user"}}}`,
	)
	r.expect(st, "workingDirectories", `["file:///a","file:///b"]`)
	r.expect(st, "activity", `"Thinking"`)
	r.fold(st,
		`{"type":"chat/workingDirectoryRemoved","directory":"file:///a"}`,
		`{"type":"chat/workingDirectoryRemoved","directory":"file:///b"}`,
		`{"type":"chat/activityChanged"}`,
		`{"type":"chat/draftChanged"}`,
	)
	// An empty subset stays: it means no directory, where an absent one means all.
	r.expect(st, "workingDirectories", `[]`)
	r.expect(st, "activity", ``)
	r.expect(st, "draft", ``)
	r.validateState(st)
}

func TestSessionReducer(t *testing.T) {
	v := schematest.Load(t)
	st := chatDecode(t, []byte(`{"provider":"copilot","title":"S","status":1,"lifecycle":"creating","activeClients":[],"chats":[]}`), false)
	fold := func(actions ...string) {
		t.Helper()
		for _, raw := range actions {
			a := chatDecode(t, []byte(raw), false)
			if err := v.Validate(chatActionDef(a), a); err != nil {
				t.Errorf("%s: %v", raw, err)
			}
			messages.ReduceSession(st, a)
		}
	}
	expect := func(path, want string) {
		t.Helper()
		chatExpectPath(t, st, path, want)
	}
	summary := func(uri, title string) string {
		return `{"resource":"` + uri + `","title":"` + title + `","status":1,"modifiedAt":"2026-10-01T10:00:00.000Z"}`
	}
	fold(
		`{"type":"session/ready"}`,
		`{"type":"session/chatAdded","summary":`+summary("ahp-chat:/a", "A")+`}`,
		`{"type":"session/chatAdded","summary":`+summary("ahp-chat:/b", "B")+`}`,
		`{"type":"session/chatAdded","summary":`+summary("ahp-chat:/a", "A2")+`}`, // upsert
		`{"type":"session/defaultChatChanged","defaultChat":"ahp-chat:/b"}`,
		`{"type":"session/titleChanged","title":"Renamed"}`,
		`{"type":"session/chatUpdated","chat":"ahp-chat:/b","changes":{"title":"B2","status":8,"activity":"Running ls"}}`,
		`{"type":"session/chatUpdated","chat":"ahp-chat:/missing","changes":{"title":"x"}}`,
		`{"type":"session/workingDirectorySet","directory":"file:///w"}`,
		`{"type":"session/workingDirectorySet","directory":"file:///w"}`,
	)
	expect("chats", `[`+summary("ahp-chat:/a", "A2")+`,{"resource":"ahp-chat:/b","title":"B2","status":8,"activity":"Running ls","modifiedAt":"2026-10-01T10:00:00.000Z"}]`)
	expect("defaultChat", `"ahp-chat:/b"`)
	expect("title", `"Renamed"`)
	expect("lifecycle", `"ready"`)
	expect("workingDirectories", `["file:///w"]`)
	if err := v.Validate("SessionState", st); err != nil {
		t.Error(err)
	}

	fold(
		`{"type":"session/chatRemoved","chat":"ahp-chat:/b"}`, // the default chat: the hint goes with it
		`{"type":"session/chatRemoved","chat":"ahp-chat:/missing"}`,
		`{"type":"session/workingDirectoryRemoved","directory":"file:///w"}`,
		`{"type":"session/isReadChanged","isRead":true}`,
		`{"type":"session/activeClientSet","activeClient":{"clientId":"c1","tools":[]}}`,
		`{"type":"session/activeClientSet","activeClient":{"clientId":"c1","displayName":"VS Code","tools":[]}}`,
	)
	expect("chats", `[`+summary("ahp-chat:/a", "A2")+`]`)
	expect("defaultChat", ``)
	expect("workingDirectories", `[]`)
	expect("status", `33`)
	expect("activeClients", `[{"clientId":"c1","displayName":"VS Code","tools":[]}]`)
	fold(
		`{"type":"session/chatRemoved","chat":"ahp-chat:/a"}`,
		`{"type":"session/activeClientRemoved","clientId":"c1"}`,
		`{"type":"session/defaultChatChanged"}`,
		`{"type":"session/isReadChanged","isRead":false}`,
	)
	// The 0.8.0 schema lists single SessionStatus values only, so 33 (Idle|IsRead)
	// would not validate below.
	expect("status", `1`)
	expect("chats", `[]`)
	expect("activeClients", `[]`)
	if err := v.Validate("SessionState", st); err != nil {
		t.Error(err)
	}

	// Unknown and foreign actions change nothing.
	before := pretty(generic(t, st))
	for _, raw := range []string{`{"type":"session/fromTheFuture","chat":"x"}`, `{"type":"chat/turnStarted","turnId":"t"}`} {
		messages.ReduceSession(st, chatDecode(t, []byte(raw), false))
	}
	if after := pretty(generic(t, st)); after != before {
		t.Errorf("state changed:\n%s\nbecame\n%s", before, after)
	}
}

// Helpers.

// chatRun folds actions written as JSON into a state, checking each against its
// schema definition first.
type chatRun struct {
	t *testing.T
	v *schematest.Validator
}

func newChatRun(t *testing.T) chatRun {
	return chatRun{t: t, v: schematest.Load(t)}
}

func (r chatRun) validate(a map[string]any) {
	r.t.Helper()
	if err := r.v.Validate(chatActionDef(a), a); err != nil {
		r.t.Errorf("%s: %v", pretty(a), err)
	}
}

func (r chatRun) fold(st map[string]any, actions ...string) {
	r.t.Helper()
	for _, raw := range actions {
		a := chatDecode(r.t, []byte(raw), false)
		r.validate(a)
		messages.ReduceChat(st, a)
	}
}

func (r chatRun) validateState(st map[string]any) {
	r.t.Helper()
	if err := r.v.Validate("ChatState", st); err != nil {
		r.t.Error(err)
	}
}

// expectState compares the whole state and validates it as a ChatState.
func (r chatRun) expectState(st map[string]any, want string) {
	r.t.Helper()
	assertJSONEqual(r.t, "state", generic(r.t, st), generic(r.t, []byte(want)))
	r.validateState(st)
}

func (r chatRun) expect(st map[string]any, path, want string) {
	r.t.Helper()
	chatExpectPath(r.t, st, path, want)
}

// chatExpectPath compares the value at a dotted path (object keys and list indexes)
// with want; an empty want means the path must not exist.
func chatExpectPath(t *testing.T, st map[string]any, path, want string) {
	t.Helper()
	var cur any = st
	for _, key := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[key]
			if !ok {
				if want != "" {
					t.Errorf("%s: no %q in %s", path, key, pretty(x))
				}
				return
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(x) {
				t.Errorf("%s: no index %q in a list of %d", path, key, len(x))
				return
			}
			cur = x[i]
		default:
			t.Errorf("%s: %q under a %T", path, key, cur)
			return
		}
	}
	if want == "" {
		t.Errorf("%s = %s, want it absent", path, pretty(cur))
		return
	}
	assertJSONEqual(t, path, generic(t, cur), generic(t, []byte(want)))
}

// chatDecode decodes a JSON object as encoding/json does, or with json.Number.
func chatDecode(t testing.TB, raw []byte, useNumber bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if useNumber {
		dec.UseNumber()
	}
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return m
}

// chatActionDef names an action's schema definition: chat/toolCallReady is
// ChatToolCallReadyAction.
func chatActionDef(a map[string]any) string {
	typ, _ := a["type"].(string)
	var b strings.Builder
	for _, part := range strings.Split(typ, "/") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	b.WriteString("Action")
	return b.String()
}

// chatState is an idle chat with no turns.
func chatState() map[string]any {
	return map[string]any{
		"resource":   "ahp-chat:/c1",
		"title":      "Chat",
		"status":     float64(1),
		"modifiedAt": "2026-10-01T09:00:00.000Z",
		"turns":      []any{},
	}
}

// A page of older turns goes ahead of those the chat holds, without the ones it
// already has, and its cursor replaces the chat's; a page without one clears it.
func TestChatTurnsLoaded(t *testing.T) {
	r := newChatRun(t)
	st := chatState()
	turn := func(id string) string {
		return `{"id":"` + id + `","startedAt":"2026-10-01T10:00:00.000Z","message":{"text":"!` + id + `","origin":{"kind":"user"}},"responseParts":[],"state":"complete"}`
	}
	st["turns"] = []any{generic(t, []byte(turn("t3"))), generic(t, []byte(turn("t4")))}
	st["turnsNextCursor"] = "c3"
	r.fold(st, `{"type":"chat/turnsLoaded","turns":[`+turn("t2")+`,`+turn("t3")+`],"turnsNextCursor":"c2"}`)
	ids := messages.ChatState(st).TurnIDs()
	if got := strings.Join(ids, ","); got != "t2,t3,t4" {
		t.Errorf("turns after a page = %s, want t2,t3,t4", got)
	}
	r.expect(st, "turnsNextCursor", `"c2"`)
	r.expect(st, "turns.0", turn("t2"))
	r.validateState(st)

	r.fold(st, `{"type":"chat/turnsLoaded","turns":[`+turn("t1")+`]}`)
	if got := strings.Join(messages.ChatState(st).TurnIDs(), ","); got != "t1,t2,t3,t4" {
		t.Errorf("turns after the last page = %s, want t1,t2,t3,t4", got)
	}
	r.expect(st, "turnsNextCursor", ``)

	// What the host builds is the same action.
	raw, err := json.Marshal(messages.ChatTurnsLoadedAction{TurnsNextCursor: "c"})
	if err != nil {
		t.Fatal(err)
	}
	r.validate(chatDecode(t, raw, false))
	if want := `{"type":"chat/turnsLoaded","turns":[],"turnsNextCursor":"c"}`; string(raw) != want {
		t.Errorf("empty page encodes as %s, want %s", raw, want)
	}

	// The host drops what it holds of its oldest turns, and the cursor pages them in.
	messages.ChatState(st).DropOldestTurns(3, "c3")
	if got := strings.Join(messages.ChatState(st).TurnIDs(), ","); got != "t4" {
		t.Errorf("turns after dropping three = %s, want t4", got)
	}
	r.expect(st, "turnsNextCursor", `"c3"`)
	r.validateState(st)
}

// A producer that knows its chat's turn ids answers the reducer's question itself: a
// turnStarted naming a turn it had (one let go of, not in the state) starts nothing,
// and one it has not had starts, as ReduceChat would fold them.
func TestReduceChatKnowing(t *testing.T) {
	st := messages.NewChatState("ahp-chat:/knowing", "Chat", "2026-12-05T00:00:00Z")
	had := map[string]bool{"let-go": true}
	start := func(id string) {
		messages.ReduceChatKnowing(st, map[string]any{"type": "chat/turnStarted", "turnId": id, "startedAt": "2026-12-05T00:00:00Z",
			"message": map[string]any{"text": "!echo", "origin": map[string]any{"kind": "user"}}}, func(id string) bool { return had[id] })
	}
	start("let-go")
	if id := st.ActiveTurnID(); id != "" {
		t.Fatalf("a turn the producer had started again: active %q", id)
	}
	start("new")
	if id := st.ActiveTurnID(); id != "new" {
		t.Fatalf("a new turn did not start: active %q", id)
	}
}
