package ahp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

// generalDecode is what the general path makes of a dispatchAction notification.
func generalDecode(frame []byte) (p dispatchParams, a messages.Action, ok bool) {
	msg, e := messages.ParseInbound(frame)
	if e != nil || msg.IsRequest() || *msg.Method != "dispatchAction" {
		return p, a, false
	}
	ok, reason := decodeDispatch(msg.Params, &p, &a)
	return p, a, ok && reason == ""
}

func keystroke(channel, seq, data string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + channel + `","clientSeq":` + seq + `,"action":{"type":"terminal/input","data":"` + data + `"}}}`)
}

// Whatever the one-pass keystroke decoder accepts, the general path decodes to the
// same dispatch; and the keystrokes clients send are accepted.
func TestKeystrokeDecodeAgrees(t *testing.T) {
	accepted := [][]byte{
		keystrokeFrame,
		keystroke("ahp-terminal:/t", "0", "a"),
		keystroke("ahp-terminal:/t", "-7", "a"),
		keystroke("ahp-terminal:/t", "9223372036854775807", ""),
		keystroke("ahp-terminal:/t", "1", `\r`),
		keystroke("ahp-terminal:/t", "1", `\u001b[A`),
		keystroke("ahp-terminal:/t", "1", `say \"hi\" \\ \/ \ud83d\ude00`),
		keystroke("ahp-terminal:/t", "1", "héllo 世界 😀"),
		keystroke("agenthost-terminal:/a/b%20c", "2", "x"),
	}
	for _, f := range accepted {
		var p dispatchParams
		var a messages.Action
		if !decodeKeystroke(f, &p, &a) {
			t.Errorf("not read in one pass: %s", f)
			continue
		}
		gp, ga, ok := generalDecode(f)
		if !ok {
			t.Errorf("the general path refuses what the one pass read: %s", f)
			continue
		}
		if !reflect.DeepEqual(p, gp) || !reflect.DeepEqual(a, ga) {
			t.Errorf("%s:\n one pass %+v %+v %q\n general  %+v %+v %q", f, p, a, *a.Data, gp, ga, *ga.Data)
		}
	}
	// Left to the general path: any other shape, and anything it would mend or refuse.
	others := [][]byte{
		keystroke("ahp-terminal:/t", "01", "a"),
		keystroke("ahp-terminal:/t", "1.5", "a"),
		keystroke("ahp-terminal:/t", "1e3", "a"),
		keystroke("ahp-terminal:/t", "99999999999999999999", "a"),
		keystroke("ahp-terminal:/t", "", "a"),
		keystroke("ahp-terminal:/t", "-", "a"),
		keystroke(`ahp-terminal:/\"t`, "1", "a"),
		keystroke("ahp-terminal:/t\x01", "1", "a"),
		keystroke("not a uri", "1", "a"),
		keystroke("", "1", "a"),
		keystroke("ahp-terminal:/t", "1", "a\x01"),
		keystroke("ahp-terminal:/t", "1", "bad \xff utf-8"),
		keystroke("ahp-terminal:/t\xff", "1", "a"),
		keystroke("ahp-terminal:/t", "1", `\x`),
		keystroke("ahp-terminal:/t", "1", `\u12`),
		keystroke("ahp-terminal:/t", "1", `a\`),
		[]byte(strings.TrimSuffix(string(keystroke("ahp-terminal:/t", "1", "a")), "}")),
		append(keystroke("ahp-terminal:/t", "1", "a"), ' '),
		append(keystroke("ahp-terminal:/t", "1", "a"), '}'),
		[]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t","clientSeq":1,"action":{"type":"terminal/input","data":"a","cols":1}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t","clientSeq":1,"action":{"type":"terminal/input","data":"a"},"x":1}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"dispatchAction","params":{"channel":"ahp-terminal:/t","clientSeq":1,"action":{"type":"terminal/input","data":"a"}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t","clientSeq":1,"action":{"type":"terminal/resized","data":"a"}}}`),
		[]byte(`{"method":"dispatchAction","jsonrpc":"2.0","params":{"channel":"ahp-terminal:/t","clientSeq":1,"action":{"type":"terminal/input","data":"a"}}}`),
	}
	for _, f := range others {
		var p dispatchParams
		var a messages.Action
		if decodeKeystroke(f, &p, &a) {
			gp, ga, ok := generalDecode(f)
			if ok && reflect.DeepEqual(p, gp) && reflect.DeepEqual(a, ga) {
				continue // read alike: no harm
			}
			t.Errorf("read in one pass, unlike the general path (ok %v): %q", ok, f)
		}
	}
}

// FuzzKeystrokeDecode: on any frame, the one-pass decoder either declines or agrees
// with the general path.
func FuzzKeystrokeDecode(f *testing.F) {
	f.Add(string(keystrokeFrame))
	f.Add(`\u00e9\"`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, frame := range [][]byte{[]byte(s), keystroke("ahp-terminal:/t", "3", s)} {
			var p dispatchParams
			var a messages.Action
			if !decodeKeystroke(frame, &p, &a) {
				continue
			}
			gp, ga, ok := generalDecode(frame)
			if !ok || !reflect.DeepEqual(p, gp) || !reflect.DeepEqual(a, ga) {
				t.Fatalf("%q: one pass %+v %+v, general (ok %v) %+v %+v", frame, p, a, ok, gp, ga)
			}
			if !json.Valid(p.Action) {
				t.Fatalf("%q: the action's bytes are not JSON", frame)
			}
		}
	})
}
