package messages_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

func TestParseInboundParseError(t *testing.T) {
	for _, frame := range []string{
		``, ` `, `{`, `{"jsonrpc":"2.0","id":1,`, `nul`, `{"id":1}x`, `{"id":1} {"id":2}`,
		`{'id':1}`, `{"id":01,"method":"x"}`, `{"id":1,"method":"x",}`, "\xff",
		`{"id":1,"method":"bad \x01 control"}`,
	} {
		m, e := messages.ParseInbound([]byte(frame))
		if e == nil {
			t.Errorf("%q: no error", frame)
			continue
		}
		if e.Code != messages.CodeParseError {
			t.Errorf("%q: code %d, want %d", frame, e.Code, messages.CodeParseError)
		}
		if m != nil && m.ID != nil {
			t.Errorf("%q: id %s salvaged from a frame that is not JSON", frame, m.ID)
		}
	}
}

func TestParseInboundInvalidRequest(t *testing.T) {
	cases := []struct {
		frame string
		id    string // the id the answer must carry, "" for null
	}{
		{`{"jsonrpc":"2.0","id":7}`, `7`},
		{`{"jsonrpc":"2.0","id":"abc","params":{}}`, `"abc"`},
		{`{"jsonrpc":"2.0","id":7,"method":""}`, `7`},
		{`{"jsonrpc":"2.0","id":7,"method":null}`, `7`},
		{`{"jsonrpc":"2.0","id":7,"method":5}`, `7`},
		{`{"jsonrpc":"2.0","id":"x","method":{"a":1}}`, `"x"`},
		{`{"jsonrpc":2,"id":"y"}`, `"y"`},
		{`{"jsonrpc":"2.0","method":["x"],"id":-3}`, `-3`},
		{`{}`, ``},
		{`[1,2]`, ``},
		{`[]`, ``},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, ``},
		{`"initialize"`, ``},
		{`42`, ``},
		{`null`, ``},
		{`true`, ``},
		// An id that is not a string, a number or null makes the request invalid.
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"disposeTerminal"}`, ``},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, ``},
	}
	for _, c := range cases {
		m, e := messages.ParseInbound([]byte(c.frame))
		if e == nil {
			t.Errorf("%s: no error (method %v)", c.frame, m.Method)
			continue
		}
		if e.Code != messages.CodeInvalidRequest {
			t.Errorf("%s: code %d, want %d (%s)", c.frame, e.Code, messages.CodeInvalidRequest, e.Message)
		}
		var id json.RawMessage
		if m != nil {
			id = m.ID
		}
		if string(id) != c.id {
			t.Errorf("%s: id %q, want %q", c.frame, id, c.id)
		}
		frame := messages.ErrorFrame(id, e)
		want := c.id
		if want == "" {
			want = "null"
		}
		if !bytes.HasPrefix(frame, []byte(`{"jsonrpc":"2.0","id":`+want+`,"error":`)) || !json.Valid(frame) {
			t.Errorf("%s: answer %s", c.frame, frame)
		}
	}
}

func TestParseInboundKeepsIDsByteExact(t *testing.T) {
	for _, id := range []string{
		`1`, `0`, `-0`, `-17`, `1.50`, `1e3`, `2E-2`, `12345678901234567890123`, `9007199254740993`, `1e400`,
		`""`, `"abc"`, `"a\u0041"`, `"x\"y\\z"`, `"日本"`, `"\ud83d\ude00"`, `"\u2028"`,
	} {
		frame := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{}}`
		m, e := messages.ParseInbound([]byte(frame))
		if e != nil {
			t.Errorf("%s: %v", frame, e)
			continue
		}
		if string(m.ID) != id {
			t.Errorf("id %s read as %s", id, m.ID)
		}
		if !m.IsRequest() {
			t.Errorf("id %s: not a request", id)
		}
		res, err := messages.ResponseFrame(m.ID, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`; string(res) != want {
			t.Errorf("response %s, want %s", res, want)
		}
		errFrame := messages.ErrorFrame(m.ID, messages.Errorf(messages.CodeMethodNotFound, "no"))
		if !bytes.Contains(errFrame, []byte(`"id":`+id+`,`)) {
			t.Errorf("error frame %s does not echo id %s", errFrame, id)
		}
	}
}

func TestParseInboundRequestAndNotification(t *testing.T) {
	m, e := messages.ParseInbound([]byte(`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"ahp-terminal:/t1"}}`))
	if e != nil {
		t.Fatal(e)
	}
	if *m.Method != "subscribe" || !m.IsRequest() || string(m.Params) != `{"channel":"ahp-terminal:/t1"}` || m.JSONRPC != "2.0" {
		t.Errorf("request parsed as %+v", m)
	}
	frame := `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t1","clientSeq":1,"action":{"type":"terminal/input","data":"ls\r"}}}`
	m, e = messages.ParseInbound([]byte(frame))
	if e != nil {
		t.Fatalf("%s: %v", frame, e)
	}
	if m.IsRequest() || m.ID != nil {
		t.Errorf("%s: read as a request with id %s", frame, m.ID)
	}
	// JSON-RPC 2.0: a request whose id is null is a request, answered with id null.
	frame = `{"jsonrpc":"2.0","id":null,"method":"ping"}`
	m, e = messages.ParseInbound([]byte(frame))
	if e != nil {
		t.Fatalf("%s: %v", frame, e)
	}
	if !m.IsRequest() || string(m.ID) != "null" {
		t.Errorf("%s: read as a notification (id %q)", frame, m.ID)
	}
}

// TestParseInboundIsStrict: JSON-RPC 2.0 to the letter: "jsonrpc" must be "2.0", and
// member names are matched exactly, not ignoring case.
func TestParseInboundIsStrict(t *testing.T) {
	for frame, want := range map[string]string{
		`{"id":1,"method":"ping"}`:                             `"jsonrpc" must be "2.0"`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`:             `"jsonrpc" must be "2.0"`,
		`{"jsonrpc":2,"id":1,"method":"ping"}`:                 `Invalid request`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"ping"}`:             `"METHOD" is not a member here: member names are case-sensitive (did you mean "method"?)`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`:             `did you mean "jsonrpc"?`,
		`{"jsonrpc":"2.0","Id":1,"method":"ping"}`:             `did you mean "id"?`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","Params":{}}`: `did you mean "params"?`,
	} {
		m, e := messages.ParseInbound([]byte(frame))
		if e == nil || e.Code != messages.CodeInvalidRequest || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %v, want -32600 saying %q", frame, e, want)
			continue
		}
		if frame == `{"id":1,"method":"ping"}` && string(m.ID) != "1" {
			t.Errorf("%s: the refusal does not name id 1 (%q)", frame, m.ID)
		}
	}
	// Members the protocol does not define are ignored, whatever their case.
	if _, e := messages.ParseInbound([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","Extra":true}`)); e != nil {
		t.Errorf("an unknown member: %v", e)
	}
}

func TestParseInboundDeepNesting(t *testing.T) {
	const depth = 100_000
	frames := map[string]string{
		"unclosed":         strings.Repeat("[", depth),
		"closed":           strings.Repeat("[", depth) + strings.Repeat("]", depth),
		"objects":          strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth),
		"in params":        `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`,
		"in id":            `{"jsonrpc":"2.0","id":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `,"method":"ping"}`,
		"unclosed in id":   `{"jsonrpc":"2.0","id":` + strings.Repeat("[", depth),
		"unclosed objects": strings.Repeat(`{"id":`, depth),
	}
	for name, frame := range frames {
		m, e := messages.ParseInbound([]byte(frame))
		if e == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if e.Code != messages.CodeParseError && e.Code != messages.CodeInvalidRequest {
			t.Errorf("%s: code %d", name, e.Code)
		}
		if m != nil && m.ID != nil {
			t.Errorf("%s: id %.20s salvaged", name, m.ID)
		}
	}
	// Nesting well inside what the decoder accepts is an ordinary request.
	const ok = 1000
	m, e := messages.ParseInbound([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", ok) + strings.Repeat("]", ok) + `}`))
	if e != nil || *m.Method != "ping" || len(m.Params) != 2*ok {
		t.Errorf("nesting %d: %v", ok, e)
	}
}

func TestErrorFrame(t *testing.T) {
	cases := []struct {
		id   json.RawMessage
		e    *messages.Error
		want string
	}{
		{nil, messages.Errorf(messages.CodeParseError, "Parse error: %s", "x"),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}`},
		{json.RawMessage(`"abc"`), &messages.Error{Code: messages.CodeNotFound, Message: "gone", Data: map[string]any{"resource": "ahp-terminal:/t1"}},
			`{"jsonrpc":"2.0","id":"abc","error":{"code":-32008,"message":"gone","data":{"resource":"ahp-terminal:/t1"}}}`},
		{json.RawMessage(`12`), messages.Errorf(messages.CodeInvalidParams, `a "quoted" <tag> & `+"\u2028"),
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32602,"message":"a \"quoted\" <tag> & ` + "\u2028" + `"}}`},
		// Data that does not encode falls back to an internal error with the message.
		{json.RawMessage(`5`), &messages.Error{Code: messages.CodeInvalidParams, Message: "bad", Data: make(chan int)},
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"bad"}}`},
		{json.RawMessage(`5`), &messages.Error{Code: messages.CodeInvalidParams, Message: "nan", Data: math.NaN()},
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"nan"}}`},
	}
	for _, c := range cases {
		got := messages.ErrorFrame(c.id, c.e)
		if !json.Valid(got) {
			t.Errorf("not JSON: %s", got)
			continue
		}
		assertJSONEqual(t, "error frame", generic(t, got), generic(t, []byte(c.want)))
		if !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":`)) {
			t.Errorf("frame %s", got)
		}
	}
	if got := (&messages.Error{Code: 1, Message: "m"}).Error(); got != "m" {
		t.Errorf("Error() = %q", got)
	}
}

func TestResponseFrame(t *testing.T) {
	got, err := messages.ResponseFrame(json.RawMessage(`"r1"`), map[string]any{"protocolVersion": "1.0.0", "serverSeq": 42})
	if err != nil {
		t.Fatal(err)
	}
	assertJSONEqual(t, "response", generic(t, got),
		generic(t, []byte(`{"jsonrpc":"2.0","id":"r1","result":{"protocolVersion":"1.0.0","serverSeq":42}}`)))
	got, err = messages.ResponseFrame(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"jsonrpc":"2.0","id":null,"result":null}` {
		t.Errorf("ping answer %s", got)
	}
	if _, err := messages.ResponseFrame(json.RawMessage(`1`), make(chan int)); err == nil {
		t.Error("a result that does not encode gave no error")
	}
}

// envelopeCases are envelopes with every optional field present and absent.
func envelopeCases() map[string]*messages.Envelope {
	data := "out\r\n\x1b[31m\"q\"\\ <&> \u2028 \xff é"
	return map[string]*messages.Envelope{
		"server action": {Channel: "ahp-terminal:/t1", Action: messages.DataAction(data), ServerSeq: 57},
		"client echo": {Channel: "ahp-terminal:/t1", Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: messages.Ptr("ls\r")}),
			ServerSeq: 58, Origin: &messages.Origin{ClientID: "client-abc", ClientSeq: 3}},
		"rejection": {Channel: "ahp-terminal:/t1", Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalClaimed, Claim: &messages.Claim{Kind: messages.ClaimClient, ClientID: "c2"}}),
			ServerSeq: 59, Origin: &messages.Origin{ClientID: "c2", ClientSeq: 9}, RejectionReason: "terminal is claimed by a session"},
		"rejection without origin": {Channel: "ahp-root://", Action: messages.EncodeAction(&messages.Action{Type: messages.RootTerminalsChanged, Terminals: &[]messages.TerminalInfo{}}),
			ServerSeq: 1, RejectionReason: "no \"reason\" <b>\n"},
		"odd strings": {Channel: "ahp-terminal:/\"x\"\\\u2029\x01\xfe日本", Action: messages.DataAction(""), ServerSeq: 0,
			Origin: &messages.Origin{ClientID: "\x00\u2028\"", ClientSeq: -1}},
		"extremes": {Channel: "c", Action: json.RawMessage(` {"type" : "terminal/cleared"} `), ServerSeq: math.MaxUint64,
			Origin: &messages.Origin{ClientID: "c", ClientSeq: math.MaxInt64}},
		"no action": {Channel: "c", ServerSeq: 2},
	}
}

func TestEnvelopeFrameMatchesJSONMarshal(t *testing.T) {
	for name, env := range envelopeCases() {
		t.Run(name, func(t *testing.T) {
			frame := messages.EnvelopeFrame(env)
			if !json.Valid(frame) {
				t.Fatalf("not JSON: %s", frame)
			}
			if !utf8.Valid(frame) {
				t.Errorf("not UTF-8: %q", frame)
			}
			want := map[string]any{"jsonrpc": "2.0", "method": "action", "params": env}
			assertJSONEqual(t, "frame", generic(t, frame), generic(t, want))
			if env.ServerSeq == math.MaxUint64 && !bytes.Contains(frame, []byte(`"serverSeq":18446744073709551615`)) {
				t.Errorf("serverSeq not exact in %s", frame)
			}
			// Decoding the params gives the envelope back.
			var back struct {
				Params messages.Envelope `json:"params"`
			}
			if err := json.Unmarshal(frame, &back); err != nil {
				t.Fatal(err)
			}
			if back.Params.ServerSeq != env.ServerSeq || !reflect.DeepEqual(back.Params.Origin, env.Origin) ||
				back.Params.RejectionReason != strings.ToValidUTF8(env.RejectionReason, "\ufffd") {
				t.Errorf("decoded back as %+v", back.Params)
			}
		})
	}
}

func TestEnvelopeFrameValidatesAgainstSchema(t *testing.T) {
	v := schematest.Load(t)
	for name, env := range envelopeCases() {
		if name == "no action" || name == "odd strings" {
			continue // not actions a host sends
		}
		var frame struct {
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(messages.EnvelopeFrame(env), &frame); err != nil {
			t.Fatal(err)
		}
		if err := v.Validate("ActionEnvelope", frame.Params); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// interestingBytes are the bytes writeJSONString treats specially, and some that
// make invalid UTF-8.
var interestingBytes = []byte("\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f \"\\/<>&\x7fa\x80\xbf\xc0\xc3\xa9\xe2\x80\xa8\xa9\xed\xa0\xef\xbf\xbd\xf0\x9f\x98\x80\xf4\x90\xf8\xfe\xff")

func randomBytes(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		if rng.Intn(4) == 0 {
			b[i] = byte(rng.Intn(256))
		} else {
			b[i] = interestingBytes[rng.Intn(len(interestingBytes))]
		}
	}
	return string(b)
}

func TestDataActionRoundTrips(t *testing.T) {
	inputs := []string{
		"", "plain", "\r\n", "\x00\x1f\x7f", `"\`, "\u2028\u2029", "\xff", "a\xc3", "\xc3(", "\xed\xa0\x80",
		"\xef\xbf\xbd", "\xc0\x80", "\xf4\x90\x80\x80", "😀", "\xf0\x9f\x98", "<script>&amp;",
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 5000; i++ {
		inputs = append(inputs, randomBytes(rng, rng.Intn(48)))
	}
	for _, s := range inputs {
		out := messages.DataAction(s)
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("%q encoded as %q: not valid JSON in UTF-8", s, out)
		}
		for _, c := range out {
			if c < 0x20 {
				t.Fatalf("%q encoded as %q: raw control byte", s, out)
			}
		}
		if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
			t.Fatalf("%q encoded as %q: raw U+2028/U+2029", s, out)
		}
		var got struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		// encoding/json's own reading of s: invalid bytes become U+FFFD, one each.
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got.Type != messages.TerminalData || got.Data != want {
			t.Fatalf("%q: decoded as %q, want %q (encoding/json)", s, got.Data, want)
		}
		if utf8.ValidString(s) && got.Data != s {
			t.Fatalf("valid %q came back as %q", s, got.Data)
		}
		// EncodeAction takes the same path; with _meta it uses encoding/json, same meaning.
		a := messages.Action{Type: messages.TerminalData, Data: &s}
		if enc := messages.EncodeAction(&a); !bytes.Equal(enc, out) {
			t.Fatalf("EncodeAction %s != DataAction %s", enc, out)
		}
		a.Meta = map[string]any{"k": "v"}
		slow := generic(t, messages.EncodeAction(&a)).(map[string]any)
		delete(slow, "_meta")
		assertJSONEqual(t, "slow path", any(slow), generic(t, out))
	}
}

func FuzzParseInbound(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"c"}}`,
		`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-terminal:/t1","clientSeq":1,"action":{"type":"terminal/input","data":"ls\r"}}}`,
		`{"jsonrpc":"2.0","id":"a\u0041","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7}`,
		`{"jsonrpc":"2.0","id":7,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"id":null,"method":"unsubscribe"}`,
		`[1,2]`, `null`, `"x"`, `{`, ``, "\xff", `[[[[[[[[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, e := messages.ParseInbound(frame)
		if e != nil {
			if e.Code != messages.CodeParseError && e.Code != messages.CodeInvalidRequest {
				t.Fatalf("%q: code %d", frame, e.Code)
			}
			if e.Message == "" {
				t.Fatalf("%q: error without a message", frame)
			}
			var id json.RawMessage
			if m != nil {
				id = m.ID
			}
			if e.Code == messages.CodeParseError && id != nil {
				t.Fatalf("%q: parse error with id %s", frame, id)
			}
			if answer := messages.ErrorFrame(id, e); !json.Valid(answer) {
				t.Fatalf("%q: answer %q is not JSON", frame, answer)
			}
		} else {
			if m == nil || m.Method == nil || *m.Method == "" {
				t.Fatalf("%q: neither an error nor a method", frame)
			}
			if !json.Valid(frame) {
				t.Fatalf("%q: accepted but not JSON", frame)
			}
		}
		if m != nil && len(m.ID) > 0 {
			if !json.Valid(m.ID) {
				t.Fatalf("%q: id %q is not JSON", frame, m.ID)
			}
			switch m.ID[0] {
			case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'n':
			default:
				t.Fatalf("%q: id %q is neither a string nor a number", frame, m.ID)
			}
			if !bytes.Contains(frame, m.ID) {
				t.Fatalf("%q: id %q is not the frame's bytes", frame, m.ID)
			}
		}
	})
}

// base64Output is 32 KiB of what `base64` prints: 76-character lines ending in \r\n.
func base64Output() string {
	rng := rand.New(rand.NewSource(4))
	raw := make([]byte, 32*1024)
	rng.Read(raw)
	enc := base64.StdEncoding.EncodeToString(raw)
	var b strings.Builder
	for len(enc) > 0 && b.Len() < 32*1024 {
		n := min(76, len(enc))
		b.WriteString(enc[:n])
		b.WriteString("\r\n")
		enc = enc[n:]
	}
	return b.String()[:32*1024]
}

func BenchmarkDataActionEncode(b *testing.B) {
	data := base64Output()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = messages.DataAction(data)
	}
}

// BenchmarkDataActionJSONMarshal encodes the same action with encoding/json, for
// comparison with BenchmarkDataActionEncode.
func BenchmarkDataActionJSONMarshal(b *testing.B) {
	data := base64Output()
	a := &messages.Action{Type: messages.TerminalData, Data: &data}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}
