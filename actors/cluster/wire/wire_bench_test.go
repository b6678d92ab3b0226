package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
)

// benchFrames are the frames of one frame message: a keystroke's echo with the
// output it caused, or a flood's chunks gathered while the endpoint writer was
// behind.
func benchFrames(b *testing.B) []benchCase {
	b.Helper()
	const uri = "ahp-terminal:/t"
	data := func(s string) []byte {
		return messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: 41,
			Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalData, Data: &s})})
	}
	k := "k"
	echo := messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: 40,
		Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: &k}),
		Origin: &messages.Origin{ClientID: "c", ClientSeq: 40}})
	flood := make([][]byte, 16)
	for i := range flood {
		flood[i] = data(strings.Repeat("0123456789abcdef", 256))
	}
	return []benchCase{{"keystroke", [][]byte{echo, data("k")}}, {"flood", flood}}
}

type benchCase struct {
	name   string
	frames [][]byte
}

// serialize is what protoactor's endpoint writer does with each message it is sent
// that is not protobuf: the message came as an interface, from the heap.
//
//go:noinline
func serialize(m remote.RootSerializable) (remote.RootSerialized, error) { return m.Serialize() }

// A frame message is written on the owner for every chunk of output another node
// reads: the endpoint writer's serializing of it, take included.
func BenchmarkFrameSerialize(b *testing.B) {
	for _, c := range benchFrames(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := serialize(&Frame{Gen: 3, Frames: c.frames}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// received is m's bytes as another node's remote hands them over.
func received(b *testing.B, m remote.RootSerializable) *wrapperspb.BytesValue {
	b.Helper()
	out, err := m.Serialize()
	if err != nil {
		b.Fatal(err)
	}
	return &wrapperspb.BytesValue{Value: out.(packed).Value}
}

// ... and read on the calling node by the proxy's inbox.
func BenchmarkFrameDecode(b *testing.B) {
	for _, c := range benchFrames(b) {
		b.Run(c.name, func(b *testing.B) {
			in := received(b, &Frame{Gen: 3, Frames: c.frames})
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Decode(in).(*Frame); !ok {
					b.Fatal("not a frame")
				}
			}
		})
	}
}

func benchDispatch() *Dispatch {
	who := auth.Carried("ann", "member", []string{auth.GrantTerminalInput})
	return &Dispatch{URI: "ahp-terminal:/t", Action: json.RawMessage(`{"type":"terminal/input","data":"k"}`),
		Origin: messages.Origin{ClientID: "c", ClientSeq: 40}, By: "ann", Proxy: actor.NewPID("127.0.0.1:7000", "$12/in"), Key: 1,
		Who: CarryFor(who, auth.GrantTerminalInput)}
}

// A dispatch is written on the calling node for every keystroke to another node's
// terminal...
func BenchmarkDispatchSerialize(b *testing.B) {
	m := benchDispatch()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := serialize(m); err != nil {
			b.Fatal(err)
		}
	}
}

// ... and read by the owner's gateway.
func BenchmarkDispatchDecode(b *testing.B) {
	in := received(b, benchDispatch())
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Decode(in).(*Dispatch); !ok {
			b.Fatal("not a dispatch")
		}
	}
}
