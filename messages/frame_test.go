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

// A terminal/data frame written in one pass is the frame EnvelopeFrame writes around
// the action DataAction encodes, byte for byte, whatever the output holds.
func TestDataFrameIsTheEnvelopeFrame(t *testing.T) {
	datas := []string{"", "x", "one\r\n\"\x1b[0m\\", "\x00\x7f\xff\xfe€\u2028\u2029", base64Output(), string(bytes.Repeat([]byte("\x1b[31m\t\r\n"), 4000))}
	for _, ch := range []string{"ahp-terminal:/a", "ahp-terminal:/\"q\"/\x01"} {
		for _, data := range datas {
			for _, seq := range []uint64{0, 1, 1 << 63} {
				want := messages.EnvelopeFrame(&messages.Envelope{Channel: ch, Action: messages.DataAction(data), ServerSeq: seq})
				if got := messages.DataFrame(ch, data, seq); !bytes.Equal(got, want) {
					t.Errorf("DataFrame(%q, %.40q, %d) = %.200s, want %.200s", ch, data, seq, got, want)
				}
			}
		}
	}
}

func FuzzDataFrame(f *testing.F) {
	f.Add("ahp-terminal:/a", "one\r\n\"\x1b[0m", uint64(3))
	f.Fuzz(func(t *testing.T, ch, data string, seq uint64) {
		want := messages.EnvelopeFrame(&messages.Envelope{Channel: ch, Action: messages.DataAction(data), ServerSeq: seq})
		if got := messages.DataFrame(ch, data, seq); !bytes.Equal(got, want) {
			t.Fatalf("DataFrame(%q, %q, %d) = %s, want %s", ch, data, seq, got, want)
		}
	})
}

// BenchmarkDataFrame: a flood's chunk encoded into its frame in one pass, against
// BenchmarkDataFrameTwoPasses (the action, then the envelope around it).
func BenchmarkDataFrame(b *testing.B) {
	data := base64Output()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		_ = messages.DataFrame("ahp-terminal:/bench", data, 12345)
	}
}

func BenchmarkDataFrameTwoPasses(b *testing.B) {
	data := base64Output()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		_ = messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-terminal:/bench", Action: messages.DataAction(data), ServerSeq: 12345})
	}
}

// SplitInputFrame reads a keystroke's echo as decoding it would, and declines what it
// does not read exactly.
func TestSplitInputAsDecoding(t *testing.T) {
	const uri = "ahp-terminal:/t"
	prefix := messages.InputFramePrefix(uri)
	for _, tc := range []struct {
		data, client string
		seq          int64
		reason       string
		split        bool
	}{
		{"a", "client-1", 7, "", true},
		{"\r\n\"\\\u00e9", "c", -3, "", true},
		{`"serverSeq":1`, "c", 0, "", true},
		{"x", `c"q`, 1, "", false},
		{"x", "c", 1, "refused", false},
	} {
		d := tc.data
		f := messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: 12345,
			Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: &d}),
			Origin: &messages.Origin{ClientID: tc.client, ClientSeq: tc.seq}, RejectionReason: tc.reason})
		action, origin, ok := messages.SplitInputFrame(f, prefix)
		if ok != tc.split {
			t.Fatalf("%s: split %v, want %v", f, ok, tc.split)
		}
		if !ok {
			continue
		}
		var env messages.Envelope
		if err := json.Unmarshal(messages.EnvelopeOfFrame(f), &env); err != nil {
			t.Fatal(err)
		}
		if string(action) != string(env.Action) || *origin != *env.Origin {
			t.Fatalf("%s: split into %s, %+v; decoded %s, %+v", f, action, *origin, env.Action, *env.Origin)
		}
	}
}

// A keystroke's echo is known by how it begins (what a cluster proxy passes on
// undecoded), and no other frame is.
func TestInputFramePrefix(t *testing.T) {
	const uri = "ahp-terminal:/t"
	in := "x"
	echo := messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: 1,
		Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: &in}), Origin: &messages.Origin{ClientID: "c", ClientSeq: 2}})
	if !bytes.HasPrefix(echo, messages.InputFramePrefix(uri)) {
		t.Fatalf("%s does not begin with %s", echo, messages.InputFramePrefix(uri))
	}
	for _, a := range []*messages.Action{{Type: messages.TerminalData, Data: &in}, {Type: messages.TerminalResized, Cols: messages.Ptr(80), Rows: messages.Ptr(24)}} {
		f := messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: 1, Action: messages.EncodeAction(a)})
		if bytes.HasPrefix(f, messages.InputFramePrefix(uri)) {
			t.Fatalf("%s taken for a keystroke's echo", f)
		}
	}
	if other := messages.EnvelopeFrame(&messages.Envelope{Channel: uri + "2", ServerSeq: 1,
		Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: &in})}); bytes.HasPrefix(other, messages.InputFramePrefix(uri)) {
		t.Fatal("another channel's echo taken for this one's")
	}
}
