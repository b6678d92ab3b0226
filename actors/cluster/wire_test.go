package cluster

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
		&hello{Addr: "127.0.0.1:7000", Instance: "i1", Name: "a", Rows: []messages.TerminalInfo{{Resource: "ahp-terminal:/t", Title: "bash", Meta: map[string]any{"node": "a"}}}, Load: Load{Terminals: 1, Average: 0.5}},
		&rows{Addr: "a:1", Instance: "i", Load: Load{Draining: true}},
		&loadReport{Addr: "a:1", Instance: "i", Load: Load{Terminals: 3}},
		&remoteSubscribe{URI: "ahp-terminal:/t", Proxy: pid, Gen: 2},
		&remoteUnsubscribe{URI: "ahp-terminal:/t", Proxy: pid, Gen: 2},
		&subscribed{Gen: 2, State: json.RawMessage(`{"title":"bash"}`)},
		&subscribed{Gen: 3, Err: messages.Errorf(messages.CodeNotFound, "gone")},
		&frame{Gen: 9, Frames: [][]byte{[]byte(`{"jsonrpc":"2.0","method":"action","params":{}}`)}},
		&frame{Gen: 10, Frames: [][]byte{[]byte(`{"a":1}`), {}, []byte(`{"b":2}`)}},
		&rejected{Key: 4, Frame: []byte("x")},
		&remoteDispatch{URI: "ahp-terminal:/t", Action: json.RawMessage(`{"type":"terminal/input","data":"ls\r"}`), Origin: messages.Origin{ClientID: "c", ClientSeq: 7}, By: "ann", Proxy: pid, Key: 4, Who: carry(owner)},
		&remoteCreate{URI: "ahp-terminal:/t", Claim: messages.Claim{Kind: "client", ClientID: "c"}, Cols: 80, Rows: 24, Spec: wireSpec{Command: "ls", Args: []string{"-l"}}, Who: carry(owner)},
		&createResult{IsPty: true},
		&remoteDispose{URI: "ahp-terminal:/t", Who: carry(owner)},
		&disposeResult{},
		&ping{},
		&pong{},
		&usersDoc{From: "a:1", Doc: json.RawMessage(`{"users":[{"name":"ann","role":"member","tokens":[],"version":{"clock":2,"of":"member"}}]}`)},
		&usersPull{},
		&usersDigest{From: "a:1", Sum: "00ff"},
		&remoteSubscribe{URI: "ahp-session:/s/chat", Proxy: pid, Gen: 3, Turns: new(int)},
	}
	for _, m := range msgs {
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
		got := Decode(&in)
		if err, ok := got.(error); ok {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(jsonOf(t, got), jsonOf(t, m)) || reflect.TypeOf(got) != reflect.TypeOf(m) {
			t.Fatalf("%T came back as %T %s, want %s", m, got, jsonOf(t, got), jsonOf(t, m))
		}
	}
	// What the entry node checked is what the acting node checks, unknown grants dropped.
	var d remoteDispatch
	_ = json.Unmarshal([]byte(jsonOf(t, msgs[10])), &d)
	if who := d.Who.principal(); !who.Can(auth.GrantTerminalInput) || who.Can(auth.GrantTerminalDispose) || who.User != "ann" {
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

// A frame message cut short anywhere is an error, not fewer frames.
func TestTruncatedFrame(t *testing.T) {
	out, err := (&frame{Gen: 1, Frames: [][]byte{[]byte(`{"a":1}`), []byte(`{"bb":2}`)}}).Serialize()
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

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
