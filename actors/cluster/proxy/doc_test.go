package proxy

import (
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/messages"
)

// A proxy of a chat folds the owner's frames with the chat's reducer: a snapshot taken
// on the calling node after a turn has the turn, as the owner's would.
func TestChatDocFolds(t *testing.T) {
	d := &doc{kind: Chat}
	state := messages.NewChatState("ahp-session:/s/chat", "", "2026-01-01T00:00:00.000Z")
	raw, _ := json.Marshal(state)
	if err := d.load(raw); err != nil {
		t.Fatal(err)
	}
	action := json.RawMessage(`{"type":"chat/turnStarted","turnId":"t1","message":{"text":"!echo hi","origin":{"kind":"user"}}}`)
	origin := &messages.Origin{ClientID: "ca", ClientSeq: 1}
	frame := messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-session:/s/chat", Action: action, Origin: origin, ServerSeq: 7})
	got, gotOrigin, ok := d.fold(frame)
	if !ok || string(got) != string(action) || *gotOrigin != *origin {
		t.Fatalf("fold: %v %s %+v", ok, got, gotOrigin)
	}
	snap, _ := json.Marshal(d.state())
	var st struct{ ActiveTurn struct{ ID string } }
	_ = json.Unmarshal(snap, &st)
	if st.ActiveTurn.ID != "t1" {
		t.Fatalf("the folded chat has no active turn t1: %s", snap)
	}
	if _, _, ok := d.fold([]byte(`{"jsonrpc":"2.0","method":"root/sessionAdded","params":{}}`)); ok {
		t.Fatal("a notification that is no action was folded")
	}
}

// A proxy's copy of a chat is dated by the owner: the dated frame the owner's gateway
// sends after a change sets modifiedAt, and neither the change itself nor the time it
// arrived here does; the dated frame is handed to nobody.
func TestChatDocDatedByOwner(t *testing.T) {
	d := &doc{kind: Chat}
	raw, _ := json.Marshal(messages.NewChatState("ahp-session:/s/chat", "", "2026-01-01T00:00:00.000Z"))
	if err := d.load(raw); err != nil {
		t.Fatal(err)
	}
	modifiedAt := func() string {
		snap, _ := json.Marshal(d.state())
		var st struct{ ModifiedAt string }
		_ = json.Unmarshal(snap, &st)
		return st.ModifiedAt
	}
	action := json.RawMessage(`{"type":"chat/turnStarted","turnId":"t1","message":{"text":"hi","origin":{"kind":"user"}}}`)
	if _, _, ok := d.fold(messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-session:/s/chat", Action: action, ServerSeq: 3})); !ok {
		t.Fatal("the action was not folded")
	}
	if got := modifiedAt(); got != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("the proxy dated the change itself: %s", got)
	}
	if _, _, ok := d.fold(wire.DatedFrame("2026-02-03T04:05:06.789Z")); ok {
		t.Fatal("the dated frame was taken for an action")
	}
	if got := modifiedAt(); got != "2026-02-03T04:05:06.789Z" {
		t.Fatalf("modifiedAt after the owner's date: %s", got)
	}
}

// A session's or chat's subscribers, their node lost, hear root/sessionRemoved on
// the channel they subscribed, with _meta.reason "node lost".
func TestSessionGoneFrame(t *testing.T) {
	var n struct {
		Method string
		Params struct {
			Channel, Session string
			Meta             map[string]any `json:"_meta"`
		}
	}
	if err := json.Unmarshal(sessionGoneFrame("ahp-session:/s/chat", "ahp-session:/s"), &n); err != nil || n.Method != "root/sessionRemoved" ||
		n.Params.Channel != "ahp-session:/s/chat" || n.Params.Session != "ahp-session:/s" || n.Params.Meta["reason"] != "node lost" {
		t.Fatalf("the frame: %+v %v", n, err)
	}
}
