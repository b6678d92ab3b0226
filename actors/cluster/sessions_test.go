package cluster

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// The sessions' node messages go through protobuf as remote sends them and come back
// as they were sent, who asked included.
func TestSessionMessagesRoundTrip(t *testing.T) {
	ann := auth.Carried("ann", "member", []string{auth.GrantChatSend})
	summary := map[string]any{"resource": "ahp-session:/s", "title": "echo hi", "_meta": map[string]any{"node": "b"}}
	for _, m := range []remote.RootSerializable{
		&sessionRequest{Op: opCreate, URI: "ahp-session:/s", WorkingDirectories: []string{"file:///tmp"}, By: "ann", Who: carry(ann)},
		&sessionRequest{Op: opStopWork, URI: "ahp-session:/s/chat", ID: "w1", Who: carry(ann)},
		&sessionResult{Chat: "ahp-session:/s/chat"},
		&sessionResult{Err: messages.Errorf(messages.CodePermissionDenied, "no")},
		&rows{Addr: "b:1", Instance: "i", Chats: []string{"ahp-session:/s/chat"}, Sessions: []map[string]any{summary}},
		&hello{Addr: "b:1", Instance: "i", Name: "b", Sessions: []map[string]any{summary}},
		&presence{ClientID: "ca", Left: true},
	} {
		out, err := m.Serialize()
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		b, err := proto.Marshal(out.(proto.Message))
		if err != nil {
			t.Fatal(err)
		}
		var in wrapperspb.BytesValue
		if err := proto.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		got := Decode(&in)
		if reflect.TypeOf(got) != reflect.TypeOf(m) || jsonOf(t, got) != jsonOf(t, m) {
			t.Fatalf("%T came back as %T %s", m, got, jsonOf(t, got))
		}
	}
}

// A proxy of a chat folds the owner's frames with the chat's reducer: a snapshot taken
// on the calling node after a turn has the turn, as the owner's would.
func TestChatDocFolds(t *testing.T) {
	d := &doc{kind: chatChannel}
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
