package messages_test

import (
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/messages"
)

// TestBackgroundWorkActionsJSON pins the wire shape of the two background-work
// actions (PROTOCOL.md 8, 0.9.0): the row's kind is written for it, and its optional
// terminal and _meta are left out when empty.
func TestBackgroundWorkActionsJSON(t *testing.T) {
	cases := []struct {
		action messages.ChatAction
		want   string
	}{
		{messages.ChatBackgroundWorkSetAction{Work: messages.BackgroundShellWork{ID: "bg-1", Label: "dev server", StartedAt: "2026-10-01T10:00:00.000Z",
			Command: "npm run dev", Terminal: "ahp-terminal:/t9", Meta: map[string]any{"termhost.attached": true}}},
			`{"type":"chat/backgroundWorkSet","work":{"kind":"shell","id":"bg-1","label":"dev server","startedAt":"2026-10-01T10:00:00.000Z",
				"command":"npm run dev","terminal":"ahp-terminal:/t9","_meta":{"termhost.attached":true}}}`},
		// A kind the caller got wrong is still a shell's.
		{messages.ChatBackgroundWorkSetAction{Work: messages.BackgroundShellWork{Kind: "subagent", ID: "bg-2", Label: "l", StartedAt: "2026-10-01T10:00:00.000Z", Command: "c"}},
			`{"type":"chat/backgroundWorkSet","work":{"kind":"shell","id":"bg-2","label":"l","startedAt":"2026-10-01T10:00:00.000Z","command":"c"}}`},
		{messages.ChatBackgroundWorkRemovedAction{ID: "bg-1"},
			`{"type":"chat/backgroundWorkRemoved","id":"bg-1"}`},
	}
	for _, tc := range cases {
		raw, err := json.Marshal(tc.action)
		if err != nil {
			t.Fatal(err)
		}
		assertJSONEqual(t, tc.action.ChatActionType(), generic(t, raw), generic(t, []byte(tc.want)))
		if got := chatDecode(t, raw, false)["type"]; got != tc.action.ChatActionType() {
			t.Errorf("type %v, want %s", got, tc.action.ChatActionType())
		}
	}
}

// TestChatBackgroundWork folds background work as every client does: a set upserts
// by id, keeping the row's place; a remove of an id not listed changes nothing; the
// list goes once it is empty, and a row without an id is not listed.
func TestChatBackgroundWork(t *testing.T) {
	st := chatState()
	fold := func(actions ...string) {
		t.Helper()
		for _, raw := range actions {
			messages.ReduceChat(st, chatDecode(t, []byte(raw), false))
		}
	}
	row := func(id, label string) string {
		return `{"kind":"shell","id":"` + id + `","label":"` + label + `","startedAt":"2026-10-01T10:00:00.000Z","command":"sleep 9"}`
	}
	fold(
		`{"type":"chat/backgroundWorkSet","work":`+row("a", "first")+`}`,
		`{"type":"chat/backgroundWorkSet","work":`+row("b", "second")+`}`,
		`{"type":"chat/backgroundWorkSet","work":`+row("a", "first, renamed")+`}`, // in place
		`{"type":"chat/backgroundWorkSet","work":{"kind":"shell","label":"no id"}}`,
	)
	chatExpectPath(t, st, "backgroundWork", `[`+row("a", "first, renamed")+`,`+row("b", "second")+`]`)
	if !messages.ChatState(st).HasBackgroundWork("b") || messages.ChatState(st).HasBackgroundWork("c") {
		t.Errorf("HasBackgroundWork disagrees with %s", pretty(st["backgroundWork"]))
	}

	// A snapshot taken now is not changed by what comes after.
	snapshot := messages.ChatState(st).Clone()
	before := pretty(snapshot)
	fold(`{"type":"chat/backgroundWorkRemoved","id":"nope"}`)
	chatExpectPath(t, st, "backgroundWork", `[`+row("a", "first, renamed")+`,`+row("b", "second")+`]`)
	fold(`{"type":"chat/backgroundWorkRemoved","id":"a"}`)
	chatExpectPath(t, st, "backgroundWork", `[`+row("b", "second")+`]`)
	fold(`{"type":"chat/backgroundWorkRemoved","id":"b"}`)
	chatExpectPath(t, st, "backgroundWork", ``) // only active work: an empty list goes
	fold(`{"type":"chat/backgroundWorkRemoved","id":"b"}`)
	if after := pretty(snapshot); after != before {
		t.Errorf("the snapshot changed:\n%s\nbecame\n%s", before, after)
	}
	// Background work is independent of turns and leaves the rest alone.
	chatExpectPath(t, st, "turns", `[]`)
	chatExpectPath(t, st, "status", `1`)
}

// TestChatStateApplyBackgroundWork folds the host's typed actions, as a session does.
func TestChatStateApplyBackgroundWork(t *testing.T) {
	st := messages.NewChatState("ahp-chat:/c1", "Chat", "2026-10-01T09:00:00.000Z")
	work := messages.BackgroundShellWork{ID: "bg-1", Label: "watch", StartedAt: "2026-10-01T10:00:00.000Z", Command: "make watch", Terminal: "ahp-terminal:/t1"}
	if _, err := st.Apply(messages.ChatBackgroundWorkSetAction{Work: work}); err != nil {
		t.Fatal(err)
	}
	chatExpectPath(t, st, "backgroundWork.0", `{"kind":"shell","id":"bg-1","label":"watch","startedAt":"2026-10-01T10:00:00.000Z","command":"make watch","terminal":"ahp-terminal:/t1"}`)
	if _, err := st.Apply(messages.ChatBackgroundWorkRemovedAction{ID: "bg-1"}); err != nil {
		t.Fatal(err)
	}
	chatExpectPath(t, st, "backgroundWork", ``)
}

func TestMessageOrigin(t *testing.T) {
	if got := messages.UserMessage("hi").OriginKind(); got != messages.OriginUser {
		t.Errorf("a user's message has origin %q", got)
	}
	m := messages.SystemNotificationMessage("done", map[string]any{"termhost.by": "ana"})
	assertJSONEqual(t, "the notification", generic(t, m),
		generic(t, []byte(`{"text":"done","origin":{"kind":"systemNotification"},"_meta":{"termhost.by":"ana"}}`)))
	if m.OriginKind() != messages.OriginSystemNotification || messages.SystemNotificationMessage("x", nil)["_meta"] != nil {
		t.Errorf("notification %v", m)
	}
	if (messages.Message{"text": "no origin"}).OriginKind() != "" {
		t.Error("a message without an origin has one")
	}
}
