package messages

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceScrollback is Scrollback as it was before it kept the last part's text in
// its buffer: every fold turns the pending data into a string and appends it to the
// last part, and every trim goes through trimTo. Scrollback must behave exactly like
// it, so it stays here as the reference.
type referenceScrollback struct {
	Limit   int
	chars   int
	pending []byte
}

func (b *referenceScrollback) Apply(s *TerminalState, a *Action) {
	if a.Type == TerminalData {
		if a.Data != nil {
			b.pending = append(b.pending, *a.Data...)
			if b.Limit > 0 && b.chars+len(b.pending) > 2*b.Limit {
				b.Settle(s)
			}
		}
		return
	}
	b.flush(s)
	ReduceTerminal(s, a)
	if a.Type == TerminalCleared {
		b.chars = 0
	}
}

func (b *referenceScrollback) flush(s *TerminalState) {
	if len(b.pending) == 0 {
		return
	}
	data := string(b.pending)
	b.pending = b.pending[:0]
	appendData(s, data)
	b.chars += referenceAppendedChars(s, data)
}

func referenceAppendedChars(s *TerminalState, data string) int {
	if data == "" || utf8.RuneStart(data[0]) || len(s.Content) == 0 {
		return utf8.RuneCountInString(data)
	}
	text := s.Content[len(s.Content)-1].Text()
	head := text[:len(text)-len(data)]
	for k := 1; k < utf8.UTFMax && k <= len(head); k++ {
		if j := len(head) - k; utf8.RuneStart(head[j]) {
			return utf8.RuneCountInString(text[j:]) - utf8.RuneCountInString(head[j:])
		}
	}
	return utf8.RuneCountInString(data)
}

func (b *referenceScrollback) Settle(s *TerminalState) {
	b.flush(s)
	if b.Limit > 0 && b.chars > b.Limit {
		b.chars -= trimTo(s, b.chars, b.Limit)
	}
}

// streamGen makes terminal output a piece at a time: ASCII, two-, three- and
// four-byte characters, and bytes that are not UTF-8 (stray continuation bytes, a
// lead byte with nothing after it, 0xff). Cut into chunks anywhere, it splits
// characters across chunks as a reader that does not decode would.
type streamGen struct {
	rng  *rand.Rand
	rest []byte // generated, not yet handed out
}

var streamTokens = []string{
	"a", "b", "z", " ", "\n", "\r\n", "\x1b[0m", "0123456789", "é", "→", "日本", "語", "😀",
	"\xff", "\x80", "\xbf", "\xe6", "\xe6\x97", "\xf0\x9f", "\xf0\x9f\x98", "\xc3",
}

// take returns the next n bytes of the stream.
func (g *streamGen) take(n int) string {
	for len(g.rest) < n {
		// Runs of one kind of character, so that some stretches are all ASCII
		// and others all multi-byte, as well as mixed ones.
		switch g.rng.Intn(4) {
		case 0:
			tok := streamTokens[g.rng.Intn(len(streamTokens))]
			for i := g.rng.Intn(64); i >= 0; i-- {
				g.rest = append(g.rest, tok...)
			}
		default:
			for i := g.rng.Intn(64); i >= 0; i-- {
				g.rest = append(g.rest, streamTokens[g.rng.Intn(len(streamTokens))]...)
			}
		}
	}
	out := string(g.rest[:n])
	g.rest = g.rest[n:]
	return out
}

// randomParts is a starting content: nil, empty, or a few parts of every kind.
func randomParts(rng *rand.Rand, g *streamGen, limit int) []ContentPart {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1:
		return []ContentPart{}
	}
	var parts []ContentPart
	for i := rng.Intn(4); i >= 0; i-- {
		text := g.take(rng.Intn(2*limit + 2))
		switch rng.Intn(3) {
		case 0:
			parts = append(parts, ContentPart{Type: PartUnclassified, Value: text})
		case 1:
			parts = append(parts, ContentPart{Type: PartCommand, CommandID: "c0", CommandLine: "make", Output: text, Timestamp: 7})
		default:
			parts = append(parts, ContentPart{Type: PartCommand, CommandID: "c1", Output: text, IsComplete: true, ExitCode: Ptr(1), DurationMs: Ptr(int64(3))})
		}
	}
	return parts
}

// randomAction is mostly terminal/data of every size around the limit, with now and
// then an action that adds, finishes or clears parts, or leaves the content alone.
// Command ids repeat, so that commandFinished may find an earlier part of the same id.
func randomAction(rng *rand.Rand, g *streamGen, limit int) *Action {
	id := fmt.Sprintf("c%d", rng.Intn(3))
	switch r := rng.Intn(100); {
	case r < 3:
		return &Action{Type: TerminalCommandExecuted, CommandID: id, CommandLine: Ptr("ls"), Timestamp: Ptr(int64(r))}
	case r < 6:
		return &Action{Type: TerminalCommandFinished, CommandID: id, ExitCode: Ptr(r), DurationMs: Ptr(int64(r))}
	case r < 7:
		return &Action{Type: TerminalCleared}
	case r < 8:
		return &Action{Type: TerminalTitleChanged, Title: Ptr(id)}
	case r < 9:
		return &Action{Type: TerminalResized, Cols: Ptr(80), Rows: Ptr(r)}
	case r < 10:
		return &Action{Type: TerminalInput, Data: Ptr("ignored")}
	case r < 11:
		return &Action{Type: TerminalData}
	case r < 14:
		// Exactly limit wide characters at once: past twice the limit in bytes, so
		// it trims, and with empty parts before it, which only a longer last part
		// pushes out.
		wide := []string{"é", "日", "😀"}[rng.Intn(3)]
		return &Action{Type: TerminalData, Data: Ptr(strings.Repeat(wide, limit))}
	}
	var n int
	switch rng.Intn(6) {
	case 0:
		n = rng.Intn(4) // a byte or three: a character split in pieces
	case 1:
		n = rng.Intn(limit + 1)
	case 2:
		n = limit + rng.Intn(3*limit+8)
	default:
		n = rng.Intn(limit/4 + 8)
	}
	return &Action{Type: TerminalData, Data: Ptr(g.take(n))}
}

// clonedParts copies a content list so that two reducers never share it.
func clonedParts(parts []ContentPart) []ContentPart {
	if parts == nil {
		return nil
	}
	return append([]ContentPart{}, parts...)
}

// checkAgainstReference runs one random sequence of actions through Scrollback and
// referenceScrollback side by side. It compares the states after every action that
// folds the data (everything but terminal/data) and after every Settle, taken at
// random points, and the character counts after each of those.
func checkAgainstReference(t *testing.T, seed int64, limit, steps int) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	g := &streamGen{rng: rng}
	parts := randomParts(rng, g, limit)
	got := &TerminalState{Title: "t", Content: clonedParts(parts)}
	want := &TerminalState{Title: "t", Content: clonedParts(parts)}
	sb := &Scrollback{Limit: limit}
	ref := &referenceScrollback{Limit: limit}
	// The reference's count must start right: it is the content's own count.
	for i := range parts {
		n := utf8.RuneCountInString(parts[i].Text())
		sb.chars += n
		ref.chars += n
	}
	var log []string
	for step := 0; step < steps; step++ {
		a := randomAction(rng, g, limit)
		if a.Data != nil {
			log = append(log, fmt.Sprintf("%s %q", a.Type, *a.Data))
		} else {
			log = append(log, a.Type)
		}
		sb.Apply(got, a)
		ref.Apply(want, a)
		settled := rng.Intn(8) == 0
		if settled {
			log = append(log, "settle")
			sb.Settle(got)
			ref.Settle(want)
		}
		if a.Type == TerminalData && !settled {
			continue
		}
		if !reflect.DeepEqual(got, want) || sb.chars != ref.chars {
			if len(log) > 20 {
				log = log[len(log)-20:]
			}
			t.Fatalf("seed %d, limit %d, step %d: states differ after\n\t%s\ngot  %d chars %+v\nwant %d chars %+v",
				seed, limit, step, strings.Join(log, "\n\t"), sb.chars, got.Content, ref.chars, want.Content)
		}
	}
	sb.Settle(got)
	ref.Settle(want)
	if !reflect.DeepEqual(got, want) || sb.chars != ref.chars {
		t.Fatalf("seed %d, limit %d: final states differ\ngot  %d chars %+v\nwant %d chars %+v", seed, limit, sb.chars, got.Content, ref.chars, want.Content)
	}
}

// TestScrollbackMatchesReference checks that Scrollback, however it holds the text,
// leaves exactly the state the plain fold-and-trim reference does: small limits,
// where characters split across chunks and trims land next to them, and the default
// limit, where a flood goes through the path that keeps the text in the buffer.
func TestScrollbackMatchesReference(t *testing.T) {
	seed := int64(1)
	for limit := 1; limit <= 50; limit++ {
		for i := 0; i < 40; i++ {
			checkAgainstReference(t, seed, limit, 60)
			seed++
		}
	}
	for _, limit := range []int{100, 1000, 4096} {
		for i := 0; i < 10; i++ {
			checkAgainstReference(t, seed, limit, 60)
			seed++
		}
	}
	for i := 0; i < 2; i++ {
		checkAgainstReference(t, seed, 200_000, 30)
		seed++
	}
}

// TestScrollbackEmptyPartsBeforeTheLimit pins the cases where the last part ends up
// with exactly the limit: trimTo drops the characters before it and no more, so an
// empty command part just before it stays.
func TestScrollbackEmptyPartsBeforeTheLimit(t *testing.T) {
	done := ContentPart{Type: PartCommand, CommandID: "c1", IsComplete: true, ExitCode: Ptr(0)}
	running := ContentPart{Type: PartCommand, CommandID: "c2"}
	cases := [][]ContentPart{
		{done},
		{{Type: PartUnclassified, Value: "ab"}, done},
		{{Type: PartUnclassified, Value: "ab"}, done, running},
		{done, {Type: PartUnclassified}},
		{running},
	}
	for i, parts := range cases {
		for _, data := range []string{"日本語日本", "😀😀😀😀😀", "x日本語日本"} {
			got := &TerminalState{Content: clonedParts(parts)}
			want := &TerminalState{Content: clonedParts(parts)}
			sb, ref := &Scrollback{Limit: 5}, &referenceScrollback{Limit: 5}
			for j := range parts {
				sb.chars += utf8.RuneCountInString(parts[j].Text())
			}
			ref.chars = sb.chars
			a := &Action{Type: TerminalData, Data: Ptr(data)}
			sb.Apply(got, a)
			ref.Apply(want, a)
			sb.Settle(got)
			ref.Settle(want)
			if !reflect.DeepEqual(got, want) || sb.chars != ref.chars {
				t.Errorf("case %d, %q:\ngot  %d chars %+v\nwant %d chars %+v", i, data, sb.chars, got.Content, ref.chars, want.Content)
			}
		}
	}
}

// TestScrollbackLimitChanges checks the same with the limit changed between actions
// (0 is no limit), which the Scrollback must survive with any text it holds.
func TestScrollbackLimitChanges(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		g := &streamGen{rng: rng}
		got := &TerminalState{Content: []ContentPart{}}
		want := &TerminalState{Content: []ContentPart{}}
		sb, ref := &Scrollback{Limit: 1 + rng.Intn(20)}, &referenceScrollback{}
		ref.Limit = sb.Limit
		for step := 0; step < 80; step++ {
			if rng.Intn(10) == 0 {
				sb.Limit = rng.Intn(20)
				ref.Limit = sb.Limit
			}
			a := randomAction(rng, g, max(sb.Limit, 1))
			sb.Apply(got, a)
			ref.Apply(want, a)
		}
		sb.Settle(got)
		ref.Settle(want)
		if !reflect.DeepEqual(got, want) || sb.chars != ref.chars {
			t.Fatalf("seed %d: final states differ\ngot  %d chars %+v\nwant %d chars %+v", seed, sb.chars, got.Content, ref.chars, want.Content)
		}
	}
}

// TestCharsFromEnd checks where the last n characters begin against counting from
// the front, over text that ends in, begins in, or is made of broken sequences.
func TestCharsFromEnd(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alphabet := []byte("a\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9\xff\x80\xbf")
	for iter := 0; iter < 20000; iter++ {
		text := make([]byte, rng.Intn(24))
		for i := range text {
			text[i] = alphabet[rng.Intn(len(alphabet))]
		}
		total := utf8.RuneCount(text)
		n := 1 + rng.Intn(total+2)
		cut, ok := charsFromEnd(text, n, true)
		if ok != (total >= n) {
			t.Fatalf("%q, n %d: ok %v, but it has %d characters", text, n, ok, total)
		}
		if ok {
			// Skipping total-n characters from the front lands on the same byte.
			front := 0
			for i := 0; i < total-n; i++ {
				_, size := utf8.DecodeRune(text[front:])
				front += size
			}
			if cut != front {
				t.Fatalf("%q, n %d: cut at %d, want %d", text, n, cut, front)
			}
		}
		// The text as the end of a longer one: any cut found must hold, whatever came
		// before.
		for _, before := range []string{"", "x", "\xe6", "\xf0\x9f", "\xf0\x9f\x98", "\x80"} {
			whole := append([]byte(before), text...)
			cut, ok := charsFromEnd(text, n, false)
			if !ok {
				continue
			}
			if got := utf8.RuneCount(whole[len(before)+cut:]); got != n {
				t.Fatalf("%q after %q, n %d: cut at %d leaves %d characters", text, before, n, cut, got)
			}
			// And the cut is a place where decoding the whole text stops.
			at := 0
			for at < len(before)+cut {
				_, size := utf8.DecodeRune(whole[at:])
				at += size
			}
			if at != len(before)+cut {
				t.Fatalf("%q after %q, n %d: cut at %d is inside a character", text, before, n, cut)
			}
		}
	}
}

// TestCountChars checks countChars against utf8.RuneCount on valid and broken text of
// every length around the eight bytes it takes at a time.
func TestCountChars(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	alphabets := [][]byte{
		[]byte("abc \n"),
		[]byte("a日本\xc3\xa9😀"),
		[]byte("a\xe6\x97\xa5\xf0\x9f\x98\x80\xc3\xa9\xff\x80\xbf\xed\xa0\xc0"),
	}
	for iter := 0; iter < 20000; iter++ {
		alphabet := alphabets[iter%len(alphabets)]
		text := make([]byte, rng.Intn(40))
		for i := range text {
			text[i] = alphabet[rng.Intn(len(alphabet))]
		}
		if iter%len(alphabets) == 1 {
			// Valid text, cut at a random place.
			text = []byte(strings.Repeat("a日本é😀", 8))[rng.Intn(8):][:rng.Intn(30)]
		}
		if iter%7 == 0 {
			// Cut off inside a character.
			text = append(text, "\xf0\x9f\x98\x80"[:1+rng.Intn(3)]...)
		}
		if got, want := countChars(text), utf8.RuneCount(text); got != want {
			t.Fatalf("countChars(%q) = %d, want %d", text, got, want)
		}
	}
}
