package messages_test

import (
	"encoding/json"
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestMergeDataFrames(t *testing.T) {
	data := func(ch, text string, seq uint64) []byte {
		return messages.EnvelopeFrame(&messages.Envelope{Channel: ch, Action: messages.DataAction(text), ServerSeq: seq})
	}
	merged, ok := messages.MergeDataFrames(data("ahp-terminal:/a", "one\r\n\"", 4), data("ahp-terminal:/a", "two\x1b[0m", 9))
	if !ok {
		t.Fatal("two data frames of one channel did not merge")
	}
	var n struct {
		Params struct {
			Channel   string
			ServerSeq uint64
			Action    messages.Action
		}
	}
	if err := json.Unmarshal(merged, &n); err != nil {
		t.Fatalf("merged frame is not JSON: %v: %s", err, merged)
	}
	if n.Params.Channel != "ahp-terminal:/a" || n.Params.ServerSeq != 9 || *n.Params.Action.Data != "one\r\n\"two\x1b[0m" {
		t.Fatalf("merged: %s", merged)
	}
	if _, ok := messages.MergeDataFrames(data("ahp-terminal:/a", "x", 1), data("ahp-terminal:/b", "y", 2)); ok {
		t.Fatal("frames of two channels merged")
	}
	echo := messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-terminal:/a", Action: messages.DataAction("z"), ServerSeq: 3, RejectionReason: "no"})
	if _, ok := messages.MergeDataFrames(data("ahp-terminal:/a", "x", 1), echo); ok {
		t.Fatal("a rejected echo merged into output")
	}
	input := messages.EnvelopeFrame(&messages.Envelope{Channel: "ahp-terminal:/a", Action: json.RawMessage(`{"type":"terminal/input","data":"q"}`), ServerSeq: 3, Origin: &messages.Origin{ClientID: "c"}})
	if _, ok := messages.MergeDataFrames(data("ahp-terminal:/a", "x", 1), input); ok {
		t.Fatal("an input echo merged into output")
	}
}
