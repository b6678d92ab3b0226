package messages_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/messages"
)

// The envelope cut out of a frame is the frame's params byte for byte: a replay
// carries what a client subscribed at the time was sent.
func TestEnvelopeOfFrameIsTheParams(t *testing.T) {
	envs := []*messages.Envelope{
		{Channel: "ahp-terminal:/a", Action: messages.DataAction("one\r\n\"\x1b[0m"), ServerSeq: 7},
		{Channel: "ahp-terminal:/<b>", Action: json.RawMessage(`{"type":"terminal/input","data":"q"}`), ServerSeq: 8,
			Origin: &messages.Origin{ClientID: "c", ClientSeq: 2}, RejectionReason: "claimed"},
		{Channel: "ahp-root://", Action: json.RawMessage(`{"type":"root/terminalsChanged","terminals":[]}`), ServerSeq: 9},
	}
	for _, env := range envs {
		frame := messages.EnvelopeFrame(env)
		var n struct {
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(frame, &n); err != nil {
			t.Fatalf("frame is not JSON: %v: %s", err, frame)
		}
		got := messages.EnvelopeOfFrame(frame)
		if !bytes.Equal(got, n.Params) {
			t.Fatalf("envelope of %s:\n got %s\nwant %s", frame, got, n.Params)
		}
		// An append to the envelope must not write into the frame.
		_ = append(got, '!')
		if frame[len(frame)-1] != '}' {
			t.Fatalf("appending to the envelope changed the frame: %s", frame)
		}
	}
}

func TestEnvelopeOfFrameRefusesOtherFrames(t *testing.T) {
	answer, err := messages.ResponseFrame(json.RawMessage(`1`), map[string]any{"ok": true})
	if err != nil {
		t.Fatal(err)
	}
	for _, frame := range [][]byte{nil, []byte(`{}`), answer, []byte(`{"jsonrpc":"2.0","method":"action","params":`)} {
		if env := messages.EnvelopeOfFrame(frame); env != nil {
			t.Fatalf("EnvelopeOfFrame(%s) = %s, want nil", frame, env)
		}
	}
}

// A reader that counts output skips exactly the head the host writes, channels that
// need escaping included.
func TestDataFramePrefixBeginsEveryDataFrame(t *testing.T) {
	for _, ch := range []string{"ahp-terminal:/a", `ahp-terminal:/q"&<x>` + "\u2028"} {
		frame := messages.EnvelopeFrame(&messages.Envelope{Channel: ch, Action: messages.DataAction("hi\n"), ServerSeq: 3})
		prefix := messages.DataFramePrefix(ch)
		if !bytes.HasPrefix(frame, prefix) {
			t.Fatalf("frame %s does not begin with %s", frame, prefix)
		}
		if rest := string(frame[len(prefix):]); rest != `hi\n"},"serverSeq":3}}` {
			t.Fatalf("after the prefix: %s", rest)
		}
		other := messages.EnvelopeFrame(&messages.Envelope{Channel: ch + "x", Action: messages.DataAction("hi"), ServerSeq: 4})
		if bytes.HasPrefix(other, prefix) {
			t.Fatalf("a frame of another channel begins with %s", prefix)
		}
	}
}
