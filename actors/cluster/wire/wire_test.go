package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// Every node message goes through protobuf as remote sends it and comes back as it
// was sent.
func TestNodeMessagesRoundTrip(t *testing.T) {
	pid := actor.NewPID("127.0.0.1:7000", "termhost-node")
	owner := auth.Carried("ann", "member", []string{auth.GrantTerminalInput, "no-such-grant"})
	msgs := []remote.RootSerializable{
		&Hello{Addr: "127.0.0.1:7000", Instance: "i1", Name: "a", Rows: []messages.TerminalInfo{{Resource: "ahp-terminal:/t", Title: "bash", Meta: map[string]any{"node": "a"}}}, Load: Load{Terminals: 1, Average: 0.5}},
		&Rows{Addr: "a:1", Instance: "i", Load: Load{Draining: true}},
		&LoadReport{Addr: "a:1", Instance: "i", Load: Load{Terminals: 3}},
		&Subscribe{URI: "ahp-terminal:/t", Proxy: pid, Gen: 2},
		&Unsubscribe{URI: "ahp-terminal:/t", Proxy: pid, Gen: 2},
		&Subscribed{Gen: 2, State: json.RawMessage(`{"title":"bash"}`)},
		&Subscribed{Gen: 3, Err: messages.Errorf(messages.CodeNotFound, "gone")},
		&Frame{Gen: 9, Frames: [][]byte{[]byte(`{"jsonrpc":"2.0","method":"action","params":{}}`)}},
		&Frame{Gen: 10, Frames: [][]byte{[]byte(`{"a":1}`), {}, []byte(`{"b":2}`)}},
		&Rejected{Key: 4, Frame: []byte("x")},
		&Dispatch{URI: "ahp-terminal:/t", Action: json.RawMessage(`{"type":"terminal/input","data":"ls\r"}`), Origin: messages.Origin{ClientID: "c", ClientSeq: 7}, By: "ann", Proxy: pid, Key: 4, Who: Carry(owner)},
		&Create{URI: "ahp-terminal:/t", Claim: messages.Claim{Kind: "client", ClientID: "c"}, Cols: 80, Rows: 24, Spec: Spec{Command: "ls", Args: []string{"-l"}}, Who: Carry(owner)},
		&CreateResult{IsPty: true},
		&Dispose{URI: "ahp-terminal:/t", Who: Carry(owner)},
		&DisposeResult{},
		&Ping{},
		&Pong{},
		&UsersDoc{From: "a:1", Doc: json.RawMessage(`{"users":[{"name":"ann","role":"member","tokens":[],"version":{"clock":2,"of":"member"}}]}`)},
		&UsersPull{},
		&UsersDigest{From: "a:1", Sum: "00ff"},
		&Subscribe{URI: "ahp-session:/s/chat", Proxy: pid, Gen: 3, Turns: new(int)},
	}
	for _, m := range msgs {
		got := throughRemote(t, m)
		if err, ok := got.(error); ok {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(jsonOf(t, got), jsonOf(t, m)) || reflect.TypeOf(got) != reflect.TypeOf(m) {
			t.Fatalf("%T came back as %T %s, want %s", m, got, jsonOf(t, got), jsonOf(t, m))
		}
	}
	// What the entry node checked is what the acting node checks, unknown grants dropped.
	var d Dispatch
	_ = json.Unmarshal([]byte(jsonOf(t, msgs[10])), &d)
	if who := d.Who.Auth(); !who.Can(auth.GrantTerminalInput) || who.Can(auth.GrantTerminalDispose) || who.User != "ann" {
		t.Fatalf("carried principal: %+v %v", who, who.Grants())
	}
	if _, ok := Decode(&wrapperspb.BytesValue{Value: []byte{99}}).(error); !ok {
		t.Fatal("an unknown kind decoded")
	}
	// A dispatch is binary: cut short anywhere before its action, it is an error, not
	// a dispatch with fields missing.
	out, _ := msgs[10].Serialize()
	whole := out.(packed).Value
	for n := 1; n < len(whole)-len(`{"type":"terminal/input","data":"ls\r"}`); n++ {
		if _, ok := Decode(&wrapperspb.BytesValue{Value: whole[:n]}).(error); !ok {
			t.Fatalf("a dispatch cut to %d of %d bytes decoded", n, len(whole))
		}
	}
}

// The sessions' (and reservations') node messages go through protobuf as remote
// sends them and come back as they were sent, who asked included.
func TestSessionMessagesRoundTrip(t *testing.T) {
	ann := auth.Carried("ann", "member", []string{auth.GrantChatSend})
	ten := 10
	summary := map[string]any{"resource": "ahp-session:/s", "title": "echo hi", "_meta": map[string]any{"node": "b"}}
	for _, m := range []remote.RootSerializable{
		&SessionRequest{Op: OpCreate, URI: "ahp-session:/s", WorkingDirectories: []string{"file:///tmp"}, By: "ann", Who: Carry(ann)},
		&SessionRequest{Op: OpStopWork, URI: "ahp-session:/s/chat", ID: "w1", Who: Carry(ann)},
		&SessionRequest{Op: OpFetchTurns, URI: "ahp-session:/s/chat", Cursor: "1.50", Who: Carry(ann)},
		&SessionResult{Chat: "ahp-session:/s/chat"},
		&SessionResult{Err: messages.Errorf(messages.CodePermissionDenied, "no")},
		&Rows{Addr: "b:1", Instance: "i", Chats: []string{"ahp-session:/s/chat"}, Sessions: []map[string]any{summary}},
		&Hello{Addr: "b:1", Instance: "i", Name: "b", Sessions: []map[string]any{summary}},
		&Presence{ClientID: "ca", Left: true},
		&ShowTurns{URI: "ahp-session:/s/chat", Proxy: actor.NewPID("a:1", "proxy/in"), Gen: 2, Round: 3, Turns: &ten},
		&ShowTurns{URI: "ahp-session:/s/chat", Proxy: actor.NewPID("a:1", "proxy/in"), Gen: 2, Round: 4},
		&TurnsShown{Gen: 2, Round: 3},
		&TurnsShown{Gen: 2, Round: 4, Err: messages.Errorf(messages.CodeNotFound, "gone")},
		&Reserve{URI: "ahp-session:/s", Addr: "b:1", Instance: "i"},
		&ReserveAnswer{Taken: true},
		&ReserveRelease{URI: "ahp-session:/s", Addr: "b:1", Instance: "i"},
	} {
		got := throughRemote(t, m)
		if reflect.TypeOf(got) != reflect.TypeOf(m) || jsonOf(t, got) != jsonOf(t, m) {
			t.Fatalf("%T came back as %T %s", m, got, jsonOf(t, got))
		}
	}
}

// A frame message cut short anywhere is an error, not fewer frames.
func TestTruncatedFrame(t *testing.T) {
	out, err := (&Frame{Gen: 1, Frames: [][]byte{[]byte(`{"a":1}`), []byte(`{"bb":2}`)}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	whole := out.(packed).Value
	for n := 1; n < len(whole); n++ {
		if _, ok := Decode(&wrapperspb.BytesValue{Value: whole[:n]}).(error); !ok {
			t.Fatalf("a frame cut to %d of %d bytes decoded", n, len(whole))
		}
	}
}

// throughRemote is m as another node receives it: serialized and marshalled as
// protoactor's remote sends it, unmarshalled and decoded there.
func throughRemote(t *testing.T, m remote.RootSerializable) any {
	t.Helper()
	out, err := m.Serialize()
	if err != nil {
		t.Fatalf("%T: %v", m, err)
	}
	b, err := proto.Marshal(out.(proto.Message))
	if err != nil {
		t.Fatalf("%T: %v", m, err)
	}
	var in wrapperspb.BytesValue
	if err := proto.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	return Decode(&in)
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
