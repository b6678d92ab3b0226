package messages_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// reducerFixture is one shared/ahp-0.8.0/reducers/NNN-*.json file.
type reducerFixture struct {
	Description string            `json:"description"`
	Reducer     string            `json:"reducer"`
	Initial     json.RawMessage   `json:"initial"`
	Actions     []json.RawMessage `json:"actions"`
	Expected    json.RawMessage   `json:"expected"`
}

// knownActionTypes are the action types of the terminal and root channels.
var knownActionTypes = map[string]bool{
	messages.TerminalData: true, messages.TerminalInput: true, messages.TerminalResized: true,
	messages.TerminalClaimed: true, messages.TerminalTitleChanged: true, messages.TerminalCwdChanged: true,
	messages.TerminalExited: true, messages.TerminalCleared: true,
	messages.TerminalCommandDetectionAvailable: true, messages.TerminalCommandExecuted: true,
	messages.TerminalCommandFinished: true, messages.RootTerminalsChanged: true, messages.RootConfigChanged: true,
}

// TestReducerFixtures runs every terminal and root fixture of AHP 0.8.0 through
// ReduceTerminal and ReduceRoot and compares the encoded state with `expected`.
func TestReducerFixtures(t *testing.T) {
	files := fixtureFiles(t, "reducers")
	v := schematest.Load(t)
	ran := map[string]int{}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		var fx reducerFixture
		if err := json.Unmarshal(readFile(t, path), &fx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			switch fx.Reducer {
			case "terminal":
				runTerminalFixture(t, v, &fx)
			case "root":
				runRootFixture(t, v, &fx)
			default:
				t.Skipf("%s (%s): reducer %q is the tool-call/chat reducer, out of scope for package messages", name, fx.Description, fx.Reducer)
			}
		})
		ran[fx.Reducer]++
	}
	if ran["terminal"] == 0 || ran["root"] == 0 {
		t.Errorf("expected terminal and root fixtures, found %v", ran)
	}
	t.Logf("fixtures by reducer: %v", ran)
}

// decodeActions decodes a fixture's actions strictly and checks that each encodes
// back (EncodeAction, with its terminal/data fast path) to what the fixture says.
func decodeActions(t *testing.T, v *schematest.Validator, raws []json.RawMessage) []messages.Action {
	t.Helper()
	out := make([]messages.Action, len(raws))
	for i, raw := range raws {
		if err := strictDecode(raw, &out[i]); err != nil {
			t.Fatalf("action %d %s: %v", i, raw, err)
		}
		enc := messages.EncodeAction(&out[i])
		assertJSONEqual(t, fmt.Sprintf("action %d re-encoded", i), generic(t, enc), dropNulls(generic(t, raw)))
		if knownActionTypes[out[i].Type] {
			if err := v.Validate("StateAction", enc); err != nil {
				t.Errorf("action %d %s: %v", i, enc, err)
			}
		}
	}
	return out
}

func runTerminalFixture(t *testing.T, v *schematest.Validator, fx *reducerFixture) {
	var st, viaScrollback messages.TerminalState
	if err := strictDecode(fx.Initial, &st); err != nil {
		t.Fatalf("initial: %v", err)
	}
	if err := strictDecode(fx.Initial, &viaScrollback); err != nil {
		t.Fatalf("initial: %v", err)
	}
	actions := decodeActions(t, v, fx.Actions)

	// A Scrollback whose limit no fixture reaches must reduce exactly as ReduceTerminal.
	sb := messages.Scrollback{Limit: 1 << 20}
	var exited *messages.Action
	for i := range actions {
		messages.ReduceTerminal(&st, &actions[i])
		sb.Apply(&viaScrollback, &actions[i])
		if actions[i].Type == messages.TerminalExited {
			exited = &actions[i]
		}
	}
	sb.Settle(&viaScrollback)

	got := generic(t, st).(map[string]any)
	want := dropNulls(generic(t, fx.Expected)).(map[string]any)
	// The fixtures are 0.8.0 shaped; the host's reducer also sets the 1.x lifecycle.
	if _, ok := want["lifecycle"]; !ok {
		delete(got, "lifecycle")
	}
	assertJSONEqual(t, "reduced state", got, want)
	assertJSONEqual(t, "state reduced through Scrollback.Apply", generic(t, viaScrollback), generic(t, st))

	if exited != nil {
		wantLife := map[string]any{"status": "exited"}
		if exited.ExitCode != nil {
			wantLife["exitCode"] = int64(*exited.ExitCode)
		}
		assertJSONEqual(t, "lifecycle after terminal/exited", generic(t, st.Lifecycle), any(wantLife))
		assertJSONEqual(t, "flat exitCode after terminal/exited", generic(t, st.ExitCode), generic(t, exited.ExitCode))
	} else if st.Lifecycle != nil {
		t.Errorf("lifecycle = %+v without a terminal/exited action", *st.Lifecycle)
	}
	// With lifecycle and the flat exitCode both present, the state is still a valid
	// 0.8.0 TerminalState.
	if err := v.Validate("TerminalState", st); err != nil {
		t.Error(err)
	}
}

func runRootFixture(t *testing.T, v *schematest.Validator, fx *reducerFixture) {
	var st messages.RootState
	if err := strictDecode(fx.Initial, &st); err != nil {
		t.Fatalf("initial: %v", err)
	}
	actions := decodeActions(t, v, fx.Actions)
	for i := range actions {
		messages.ReduceRoot(&st, &actions[i])
	}
	assertJSONEqual(t, "reduced state", generic(t, st), dropNulls(generic(t, fx.Expected)))
	if err := v.Validate("RootState", st); err != nil {
		t.Error(err)
	}
}

func TestTerminalExitedLifecycle(t *testing.T) {
	for _, code := range []*int{nil, messages.Ptr(0), messages.Ptr(137)} {
		st := messages.TerminalState{
			Title:     "bash",
			Content:   []messages.ContentPart{},
			Claim:     messages.Claim{Kind: messages.ClaimClient, ClientID: "c1"},
			Lifecycle: &messages.Lifecycle{Status: messages.StatusRunning},
		}
		a := messages.Action{Type: messages.TerminalExited, ExitCode: code}
		messages.ReduceTerminal(&st, &a)
		want := map[string]any{"status": "exited"}
		if code != nil {
			want["exitCode"] = int64(*code)
			*code = -1 // the state must not share the action's value
		}
		assertJSONEqual(t, "lifecycle", generic(t, st.Lifecycle), any(want))
		got := generic(t, st).(map[string]any)
		if code == nil {
			if _, ok := got["exitCode"]; ok {
				t.Errorf("exitCode present after terminal/exited without a code: %s", pretty(got))
			}
		} else if got["exitCode"] != want["exitCode"] {
			t.Errorf("flat exitCode = %v, want %v", got["exitCode"], want["exitCode"])
		}
	}
}

// TestReducersKeepNoReferences checks that a state does not share mutable parts with
// the actions folded into it, nor a clone or snapshot with the state reduced after.
func TestReducersKeepNoReferences(t *testing.T) {
	t.Run("root", func(t *testing.T) {
		root := messages.RootState{
			Agents: []json.RawMessage{},
			Config: &messages.RootConfig{Schema: map[string]any{"type": "object"}, Values: map[string]any{"a": 1.0}},
		}
		snapshot := root // what the host hands out
		before := pretty(generic(t, snapshot))
		list := []messages.TerminalInfo{{Resource: "ahp-terminal:/t1", Title: "bash", Claim: messages.Claim{Kind: messages.ClaimClient}}}
		cfg := map[string]any{"a": 2.0}
		messages.ReduceRoot(&root, &messages.Action{Type: messages.RootTerminalsChanged, Terminals: &list})
		messages.ReduceRoot(&root, &messages.Action{Type: messages.RootConfigChanged, Config: cfg})
		list[0].Title = "changed"
		cfg["a"] = 3.0
		if got := (*root.Terminals)[0].Title; got != "bash" {
			t.Errorf("state shares the action's terminal list: title %q", got)
		}
		if got := root.Config.Values["a"]; got != 2.0 {
			t.Errorf("state shares the action's config: a = %v", got)
		}
		if after := pretty(generic(t, snapshot)); after != before {
			t.Errorf("earlier snapshot changed:\n%s\nbecame\n%s", before, after)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		st := messages.TerminalState{Title: "bash", Content: []messages.ContentPart{}, Claim: messages.Claim{Kind: messages.ClaimClient, ClientID: "c1"}}
		fold := func(as ...messages.Action) {
			for i := range as {
				messages.ReduceTerminal(&st, &as[i])
			}
		}
		fold(messages.Action{Type: messages.TerminalData, Data: messages.Ptr("$ ")},
			messages.Action{Type: messages.TerminalCommandExecuted, CommandID: "c1", CommandLine: messages.Ptr("ls"), Timestamp: messages.Ptr(int64(1))},
			messages.Action{Type: messages.TerminalData, Data: messages.Ptr("a b\r\n")})
		clone := st.Clone()
		before := pretty(generic(t, clone))
		fold(messages.Action{Type: messages.TerminalData, Data: messages.Ptr("more")},
			messages.Action{Type: messages.TerminalCommandFinished, CommandID: "c1", ExitCode: messages.Ptr(0), DurationMs: messages.Ptr(int64(5))},
			messages.Action{Type: messages.TerminalResized, Cols: messages.Ptr(100), Rows: messages.Ptr(30)},
			messages.Action{Type: messages.TerminalExited, ExitCode: messages.Ptr(1)})
		if after := pretty(generic(t, clone)); after != before {
			t.Errorf("clone changed by reducing the original:\n%s\nbecame\n%s", before, after)
		}
	})
}

func unclassified(v string) messages.ContentPart {
	return messages.ContentPart{Type: messages.PartUnclassified, Value: v}
}

func command(id, output string, complete bool) messages.ContentPart {
	p := messages.ContentPart{Type: messages.PartCommand, CommandID: id, CommandLine: "cmd " + id, Output: output, Timestamp: 1700000000000, IsComplete: complete}
	if complete {
		p.ExitCode = messages.Ptr(0)
		p.DurationMs = messages.Ptr(int64(7))
	}
	return p
}

func contentText(s *messages.TerminalState) string {
	var b strings.Builder
	for i := range s.Content {
		b.WriteString(s.Content[i].Text())
	}
	return b.String()
}

func contentChars(s *messages.TerminalState) int {
	n := 0
	for i := range s.Content {
		n += utf8.RuneCountInString(s.Content[i].Text())
	}
	return n
}

func TestTrimContent(t *testing.T) {
	cases := []struct {
		name    string
		parts   []messages.ContentPart
		limit   int
		want    []messages.ContentPart
		dropped int
	}{
		{"under the limit", []messages.ContentPart{unclassified("abc")}, 5, []messages.ContentPart{unclassified("abc")}, 0},
		{"at the limit", []messages.ContentPart{unclassified("abc"), command("c1", "de", true)}, 5,
			[]messages.ContentPart{unclassified("abc"), command("c1", "de", true)}, 0},
		{"whole parts from the front", []messages.ContentPart{unclassified("aaaa"), command("c1", "bbb", true), unclassified("cc")}, 5,
			[]messages.ContentPart{command("c1", "bbb", true), unclassified("cc")}, 4},
		{"then the oldest characters of the first part left", []messages.ContentPart{unclassified("aaaa"), command("c1", "bbb", true), unclassified("cc")}, 4,
			[]messages.ContentPart{command("c1", "bb", true), unclassified("cc")}, 5},
		{"a running command keeps its tail", []messages.ContentPart{command("c1", "0123456789", false)}, 3,
			[]messages.ContentPart{command("c1", "789", false)}, 7},
		{"only characters of one part", []messages.ContentPart{unclassified("abcdef"), unclassified("gh")}, 4,
			[]messages.ContentPart{unclassified("ef"), unclassified("gh")}, 4},
		{"multi-byte runes are one character", []messages.ContentPart{unclassified("héllo→wörld")}, 5,
			[]messages.ContentPart{unclassified("wörld")}, 6},
		{"four-byte runes", []messages.ContentPart{unclassified("😀😀😀"), unclassified("日本")}, 3,
			[]messages.ContentPart{unclassified("😀"), unclassified("日本")}, 2},
		{"a whole part of multi-byte runes", []messages.ContentPart{unclassified("日本語"), unclassified("ab")}, 2,
			[]messages.ContentPart{unclassified("ab")}, 3},
		{"invalid bytes count one each", []messages.ContentPart{unclassified("a\xffb\xe2\x82")}, 2,
			[]messages.ContentPart{unclassified("\xe2\x82")}, 3},
		{"no more than needed: an empty part after the cut stays", []messages.ContentPart{unclassified("ab"), command("c1", "", true), unclassified("cd")}, 2,
			[]messages.ContentPart{command("c1", "", true), unclassified("cd")}, 2},
		{"limit zero leaves an empty list", []messages.ContentPart{unclassified("ab"), command("c1", "cd", false)}, 0,
			[]messages.ContentPart{}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := messages.TerminalState{Title: "t", Content: append([]messages.ContentPart(nil), c.parts...), Claim: messages.Claim{Kind: messages.ClaimClient}}
			before := contentText(&st)
			dropped := messages.TrimContent(&st, c.limit)
			if dropped != c.dropped {
				t.Errorf("dropped %d, want %d", dropped, c.dropped)
			}
			assertJSONEqual(t, "content", generic(t, st.Content), generic(t, c.want))
			if st.Content == nil {
				t.Errorf("content is nil, which encodes as null; want []")
			}
			if got := contentText(&st); !strings.HasSuffix(before, got) {
				t.Errorf("kept text %q is not the end of %q", got, before)
			}
			if n := contentChars(&st); n > c.limit && c.limit >= 0 {
				t.Errorf("%d characters left, limit %d", n, c.limit)
			}
		})
	}
}

// feedScrollback folds terminal/data chunks (with commands started and finished
// between them when commands is set) into a fresh state through a Scrollback,
// checking the bound after every action, and returns the state and everything that
// was written.
func feedScrollback(t *testing.T, sb *messages.Scrollback, chunks []string, commands bool) (*messages.TerminalState, string) {
	t.Helper()
	st := &messages.TerminalState{Title: "t", Content: []messages.ContentPart{}, Claim: messages.Claim{Kind: messages.ClaimClient}}
	var stream strings.Builder
	// Between snapshots the content may grow to twice the limit (Scrollback folds
	// and trims in batches); Settle brings it to the limit.
	slack := 2 * sb.Limit
	for i, chunk := range chunks {
		switch k := i % 7; {
		case !commands:
		case k == 2:
			id := fmt.Sprintf("c%d", i)
			sb.Apply(st, &messages.Action{Type: messages.TerminalCommandExecuted, CommandID: id, CommandLine: messages.Ptr("make"), Timestamp: messages.Ptr(int64(i))})
		case k == 5:
			id := fmt.Sprintf("c%d", i-3)
			sb.Apply(st, &messages.Action{Type: messages.TerminalCommandFinished, CommandID: id, ExitCode: messages.Ptr(0)})
		}
		sb.Apply(st, &messages.Action{Type: messages.TerminalData, Data: messages.Ptr(chunk)})
		stream.WriteString(chunk)
		if n := contentChars(st); n > slack {
			t.Fatalf("after chunk %d: %d characters kept, more than the limit %d and its slack", i, n, sb.Limit)
		}
	}
	return st, stream.String()
}

// lastChars returns the last n characters (as TrimContent counts them) of s.
func lastChars(s string, n int) string {
	total := utf8.RuneCountInString(s)
	cut := 0
	for i := 0; i < total-n; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[cut:]
}

func TestScrollbackKeepsTheLatestOutput(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []rune("abcdefghij \r\n\x1b[0m é→日本😀")
	const total = 400_000
	var chunks []string
	for n := 0; n < total; {
		size := 1 + rng.Intn(8192)
		if size > total-n {
			size = total - n
		}
		var b strings.Builder
		for i := 0; i < size; i++ {
			b.WriteRune(alphabet[rng.Intn(len(alphabet))])
		}
		chunks = append(chunks, b.String())
		n += size
	}
	sb := &messages.Scrollback{Limit: 50_000}
	st, stream := feedScrollback(t, sb, chunks, true)
	sb.Settle(st)
	if n := contentChars(st); n != sb.Limit {
		t.Errorf("after Settle %d characters kept, want exactly the limit %d", n, sb.Limit)
	}
	if got, want := contentText(st), lastChars(stream, sb.Limit); got != want {
		t.Errorf("kept content is not the latest output (%d vs %d bytes)", len(got), len(want))
	}
	if !strings.HasSuffix(contentText(st), chunks[len(chunks)-1]) {
		t.Errorf("content does not end in the last chunk")
	}
	// Nothing left to trim: the Scrollback's count agrees with the content.
	if dropped := messages.TrimContent(st, sb.Limit); dropped != 0 {
		t.Errorf("TrimContent after Settle dropped %d more", dropped)
	}
}

// TestScrollbackSplitRunes feeds multi-byte characters split across chunks, as a
// reader that does not decode would: the count must follow the joined characters.
// (No commands here: a character split across two parts stays two halves.)
func TestScrollbackSplitRunes(t *testing.T) {
	text := strings.Repeat("日本語😀é", 4000) // 20,000 characters
	var chunks []string
	for i := 0; i < len(text); {
		j := i + 1 + (i*7)%13
		if j > len(text) {
			j = len(text)
		}
		chunks = append(chunks, text[i:j])
		i = j
	}
	sb := &messages.Scrollback{Limit: 1000}
	st, stream := feedScrollback(t, sb, chunks, false)
	if stream != text {
		t.Fatal("stream reassembled wrongly")
	}
	sb.Settle(st)
	if n := contentChars(st); n != sb.Limit {
		t.Errorf("after Settle %d characters kept, want exactly %d", n, sb.Limit)
	}
	if got, want := contentText(st), lastChars(text, sb.Limit); got != want {
		t.Errorf("kept content is not the latest output")
	}
}

// TestScrollbackRandomBytes feeds random bytes, valid UTF-8 or not, in random cuts:
// after Settle exactly Limit characters are left, so the running count never drifts.
func TestScrollbackRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	alphabet := []byte("a\n\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9\xff\xbf")
	for iter := 0; iter < 200; iter++ {
		var chunks []string
		for n := rng.Intn(40) + 1; n > 0; n-- {
			b := make([]byte, rng.Intn(12))
			for i := range b {
				b[i] = alphabet[rng.Intn(len(alphabet))]
			}
			chunks = append(chunks, string(b))
		}
		sb := &messages.Scrollback{Limit: 1 + rng.Intn(30)}
		st, stream := feedScrollback(t, sb, chunks, false)
		sb.Settle(st)
		want := min(utf8.RuneCountInString(stream), sb.Limit)
		if n := contentChars(st); n != want {
			t.Fatalf("chunks %q, limit %d: %d characters left, want %d", chunks, sb.Limit, n, want)
		}
		if got := contentText(st); got != lastChars(stream, want) {
			t.Fatalf("chunks %q, limit %d: kept %q, want %q", chunks, sb.Limit, got, lastChars(stream, want))
		}
	}
}

func TestScrollbackClearedResetsTheCount(t *testing.T) {
	sb := &messages.Scrollback{Limit: 100}
	st := &messages.TerminalState{Title: "t", Content: []messages.ContentPart{}, Claim: messages.Claim{Kind: messages.ClaimClient}}
	sb.Apply(st, &messages.Action{Type: messages.TerminalData, Data: messages.Ptr(strings.Repeat("x", 90))})
	sb.Apply(st, &messages.Action{Type: messages.TerminalCleared})
	sb.Apply(st, &messages.Action{Type: messages.TerminalData, Data: messages.Ptr(strings.Repeat("y", 100))})
	sb.Settle(st)
	if got := contentText(st); got != strings.Repeat("y", 100) {
		t.Errorf("content after clear = %d chars %q..., want the 100 y's", len(got), got[:min(len(got), 10)])
	}
	// Limit 0 means no cap.
	sb = &messages.Scrollback{}
	st = &messages.TerminalState{Title: "t", Content: []messages.ContentPart{}}
	sb.Apply(st, &messages.Action{Type: messages.TerminalData, Data: messages.Ptr(strings.Repeat("z", 5000))})
	sb.Settle(st)
	if n := contentChars(st); n != 5000 {
		t.Errorf("limit 0 trimmed to %d", n)
	}
}

// Benchmarks.

func BenchmarkReduceAppend(b *testing.B) {
	chunk := strings.Repeat("0123456789abcdef\r\n\x1b[0m 日本", 4096/29+1)[:4096]
	chunk = strings.ToValidUTF8(chunk, "") // 4 KiB less a split rune
	a := &messages.Action{Type: messages.TerminalData, Data: &chunk}
	sb := &messages.Scrollback{Limit: 200_000}
	st := &messages.TerminalState{Title: "t", Content: []messages.ContentPart{}}
	// Fill the scrollback first so the benchmark measures the steady state.
	for i := 0; i < 200_000/len(chunk)+16; i++ {
		sb.Apply(st, a)
	}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sb.Apply(st, a)
	}
}

func BenchmarkTrimContent(b *testing.B) {
	parts := make([]messages.ContentPart, 0, 64)
	for i := 0; i < 64; i++ {
		if i%2 == 0 {
			parts = append(parts, unclassified(strings.Repeat("$ é ", 1024)))
		} else {
			parts = append(parts, command(fmt.Sprint(i), strings.Repeat("out日本\r\n", 512), true))
		}
	}
	buf := make([]messages.ContentPart, len(parts))
	st := &messages.TerminalState{}
	limit := contentChars(&messages.TerminalState{Content: parts}) * 3 / 4
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, parts)
		st.Content = buf
		if messages.TrimContent(st, limit) == 0 {
			b.Fatal("nothing trimmed")
		}
	}
}
