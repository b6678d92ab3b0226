package messages

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// ReduceTerminal folds one action into a terminal's state, as every client does
// (PROTOCOL.md 5.2). Unknown action types change nothing. It mutates s in place: the
// host's terminal actor owns its state alone, and copying a 200,000-character
// scrollback for every chunk of output would put a copy on the hottest path.
func ReduceTerminal(s *TerminalState, a *Action) {
	switch a.Type {
	case TerminalData:
		if a.Data != nil {
			appendData(s, *a.Data)
		}
	case TerminalResized:
		if a.Cols != nil {
			s.Cols = Ptr(*a.Cols)
		}
		if a.Rows != nil {
			s.Rows = Ptr(*a.Rows)
		}
	case TerminalClaimed:
		if a.Claim != nil {
			s.Claim = *a.Claim
		}
	case TerminalTitleChanged:
		if a.Title != nil {
			s.Title = *a.Title
		}
	case TerminalCwdChanged:
		if a.Cwd != nil {
			s.Cwd = *a.Cwd
		}
	case TerminalExited:
		var code *int
		if a.ExitCode != nil {
			code = Ptr(*a.ExitCode)
		}
		s.Lifecycle = &Lifecycle{Status: StatusExited, ExitCode: code}
		s.ExitCode = code
	case TerminalCleared:
		s.Content = []ContentPart{}
	case TerminalCommandDetectionAvailable:
		s.SupportsCommandDetection = Ptr(true)
	case TerminalCommandExecuted:
		part := ContentPart{Type: PartCommand, CommandID: a.CommandID}
		if a.CommandLine != nil {
			part.CommandLine = *a.CommandLine
		}
		if a.Timestamp != nil {
			part.Timestamp = *a.Timestamp
		}
		s.Content = append(s.Content, part)
		s.SupportsCommandDetection = Ptr(true)
	case TerminalCommandFinished:
		for i := range s.Content {
			p := &s.Content[i]
			if p.Type == PartCommand && p.CommandID == a.CommandID {
				p.IsComplete = true
				if a.ExitCode != nil {
					p.ExitCode = Ptr(*a.ExitCode)
				}
				if a.DurationMs != nil {
					p.DurationMs = Ptr(*a.DurationMs)
				}
				break
			}
		}
	}
}

func appendData(s *TerminalState, data string) {
	if n := len(s.Content); n > 0 {
		tail := &s.Content[n-1]
		switch {
		case tail.Type == PartCommand && !tail.IsComplete:
			tail.Output += data
			return
		case tail.Type == PartUnclassified:
			tail.Value += data
			return
		}
	}
	s.Content = append(s.Content, ContentPart{Type: PartUnclassified, Value: data})
}

// ReduceRoot folds one action into the root state. Unknown action types change nothing.
func ReduceRoot(s *RootState, a *Action) {
	switch a.Type {
	case RootTerminalsChanged:
		if a.Terminals != nil {
			list := append([]TerminalInfo{}, (*a.Terminals)...)
			s.Terminals = &list
		}
	case RootConfigChanged:
		if s.Config == nil {
			return
		}
		values := make(map[string]any, len(s.Config.Values)+len(a.Config))
		if a.Replace == nil || !*a.Replace {
			for k, v := range s.Config.Values {
				values[k] = v
			}
		}
		for k, v := range a.Config {
			values[k] = v
		}
		s.Config = &RootConfig{Schema: s.Config.Schema, Values: values}
	}
}

// TrimContent caps a terminal's content at limit characters, as the seed's scrollback
// rule says: whole parts go from the front first, then the oldest characters of the
// first part left. It returns how many characters it dropped. Characters are runes.
func TrimContent(s *TerminalState, limit int) int {
	total := 0
	for i := range s.Content {
		total += utf8.RuneCountInString(s.Content[i].Text())
	}
	return trimTo(s, total, limit)
}

// trimTo trims content whose length in characters is known to be total.
func trimTo(s *TerminalState, total, limit int) int {
	if total <= limit {
		return 0
	}
	dropped := 0
	over := total - limit
	first := 0
	// Drop whole parts while that is not too much, and no more once enough has gone:
	// an empty part after the cut (a command with no output) stays.
	for over > 0 && first < len(s.Content) {
		n := utf8.RuneCountInString(s.Content[first].Text())
		if n > over {
			break
		}
		over -= n
		dropped += n
		first++
	}
	if first > 0 {
		// A fresh slice, never nil: an empty content is [] on the wire, not null.
		rest := make([]ContentPart, len(s.Content)-first)
		copy(rest, s.Content[first:])
		s.Content = rest
	}
	if over > 0 && len(s.Content) > 0 {
		p := &s.Content[0]
		text := p.Text()
		cut := 0
		for i := 0; i < over; i++ {
			_, size := utf8.DecodeRuneInString(text[cut:])
			cut += size
		}
		if p.Type == PartCommand {
			p.Output = text[cut:]
		} else {
			p.Value = text[cut:]
		}
		dropped += over
	}
	return dropped
}

// Scrollback keeps a terminal's content under a cap without copying it on every
// chunk. terminal/data is gathered in a buffer and folded into the state's last part
// when anything else happens, when the state is read (Settle), or when the content
// passes twice the limit. The state's content is only current after Settle or an
// action other than terminal/data; in between, the last part's text may be missing
// altogether, and nothing but the Scrollback may change the content.
//
// Under a flood the content soon becomes a single part holding the last Limit
// characters, and folding the data into it as a string every time would copy and
// count each byte several times over. So once the content passes twice the limit,
// the last part's text moves into the buffer and stays there: new data is appended
// to it, a trim only moves the start of the buffer forward, and the text becomes a
// string again when the state is read or another action comes. What Settle and
// the other actions leave is exactly what folding every time left: the limit is
// checked at the same points against the same count, and the same characters go.
type Scrollback struct {
	Limit int
	// chars is how many characters the content has, the last fresh bytes of buf
	// excluded.
	chars int
	// buf[off:] is the data not yet folded into the state (its last fresh bytes) and,
	// while own is set, before it the text of the state's last part.
	buf   []byte
	off   int
	fresh int
	// own says the text of the state's last part is in buf and the part's own text
	// field is stale. The part is unclassified or a running command, one that
	// terminal/data goes on extending.
	own bool
}

// Apply folds a into s (data lazily) and keeps the content near the limit.
func (b *Scrollback) Apply(s *TerminalState, a *Action) {
	if a.Type == TerminalData {
		if a.Data != nil {
			b.add(*a.Data)
			// fresh counts bytes, never fewer than their characters.
			if b.Limit > 0 && b.chars+b.fresh > 2*b.Limit {
				b.trimOverflow(s)
			}
		}
		return
	}
	if a.Type == TerminalCleared {
		// Whatever was waiting would be folded in only to be cleared.
		b.drop()
		ReduceTerminal(s, a)
		b.chars = 0
		return
	}
	b.flush(s)
	ReduceTerminal(s, a)
}

// Settle trims the content to exactly the limit, before a snapshot is taken.
func (b *Scrollback) Settle(s *TerminalState) {
	if b.own {
		if b.Limit > 0 {
			b.trimOwn(s)
		} else {
			b.fold()
		}
		b.release(s)
		return
	}
	b.flush(s)
	if b.Limit > 0 && b.chars > b.Limit {
		b.chars -= trimTo(s, b.chars, b.Limit)
	}
}

// add appends data to the buffer. When the buffer is full and its cut-off front is
// at least as long as what is still in use, the rest moves down instead of the
// buffer growing: each byte moves at most once for every byte cut, so a flood costs
// a bounded amount of copying per byte. A new buffer has room for as much again as
// it keeps, not for another chunk as big as this one, and one left far too big by
// a huge chunk is replaced the next time it fills, so it stays a small multiple of
// what it holds.
func (b *Scrollback) add(data string) {
	if len(b.buf)+len(data) > cap(b.buf) {
		live := len(b.buf) - b.off
		need := live + len(data)
		if b.off >= live && need <= cap(b.buf) && cap(b.buf) <= 4*need {
			b.buf = b.buf[:copy(b.buf, b.buf[b.off:])]
		} else {
			grown := make([]byte, live, need+live)
			copy(grown, b.buf[b.off:])
			b.buf = grown
		}
		b.off = 0
	}
	b.buf = append(b.buf, data...)
	b.fresh += len(data)
}

// drop forgets the buffer, and frees it if it is big: a terminal that flooded once
// and then went quiet should not hold on to it.
func (b *Scrollback) drop() {
	b.buf, b.off, b.fresh, b.own = b.buf[:0], 0, 0, false
	if cap(b.buf) > 64<<10 {
		b.buf = nil
	}
}

// flush folds the buffered data into the state's last part.
func (b *Scrollback) flush(s *TerminalState) {
	if b.own {
		b.fold()
		b.release(s)
		return
	}
	if b.fresh == 0 {
		return
	}
	data := string(b.buf[b.off:])
	b.drop()
	appendData(s, data)
	b.chars += appendedChars(s, data)
}

// fold counts the fresh data into chars, while own.
func (b *Scrollback) fold() {
	live := b.buf[b.off:]
	b.chars += addedChars(live, len(live)-b.fresh)
	b.fresh = 0
}

// release puts the buffered text back into the state's last part and leaves own.
func (b *Scrollback) release(s *TerminalState) {
	if len(s.Content) == 0 {
		// Only if s was changed behind the Scrollback's back; keep the text anyway.
		s.Content = append(s.Content, ContentPart{Type: PartUnclassified})
	}
	setText(&s.Content[len(s.Content)-1], string(b.buf[b.off:]))
	b.drop()
}

// trimOverflow folds the data and trims the content to the limit, as Settle does,
// when the content has passed twice the limit; it takes the last part's text into
// the buffer for good.
func (b *Scrollback) trimOverflow(s *TerminalState) {
	if b.own {
		b.trimOwn(s)
		return
	}
	if b.fresh == 0 {
		// Nothing to fold: only a lowered Limit gets here.
		if b.chars > b.Limit {
			b.chars -= trimTo(s, b.chars, b.Limit)
		}
		return
	}
	n := len(s.Content)
	last := n > 0 && takesData(&s.Content[n-1])
	var head string
	if last {
		head = s.Content[n-1].Text()
	}
	// Usually the data alone holds more than the limit: then the last part keeps the
	// end of the data, all else goes, and the part's old text need not be copied. The
	// part must have more than Limit characters, some before the data's last Limit:
	// with exactly Limit, trimTo would keep any empty parts just before it.
	if cut, ok := charsFromEnd(b.buf[b.off:], b.Limit, false); ok && (cut > 0 || head != "") {
		part := ContentPart{Type: PartUnclassified}
		if last {
			part = s.Content[n-1]
		}
		setText(&part, "")
		if n == 1 && last {
			s.Content[0] = part
		} else {
			s.Content = []ContentPart{part}
		}
		b.off += cut
		b.fresh = 0
		b.chars = b.Limit
		b.own = true
		return
	}
	if last {
		setText(&s.Content[n-1], "")
	} else {
		s.Content = append(s.Content, ContentPart{Type: PartUnclassified})
	}
	if head != "" {
		data := b.buf[b.off:]
		buf := make([]byte, 0, 2*(len(head)+len(data)))
		b.buf = append(append(buf, head...), data...)
		b.off = 0
	}
	b.own = true
	b.trimOwn(s)
}

// trimOwn folds the fresh data and trims the content to the limit, while own.
func (b *Scrollback) trimOwn(s *TerminalState) {
	live := b.buf[b.off:]
	cut, ok := charsFromEnd(live, b.Limit, true)
	if ok && cut > 0 {
		// The last part alone has more than the limit: it keeps its last Limit
		// characters and every part before it goes, even an empty one, so the fresh
		// data's count is moot.
		b.keepLast(s)
		b.off += cut
		b.fresh = 0
		b.chars = b.Limit
		return
	}
	b.fold()
	if b.chars > b.Limit {
		// The last part has at most Limit characters, so trimTo has cut enough
		// before it reaches the part, and never reads its stale text.
		b.chars -= trimTo(s, b.chars, b.Limit)
	}
}

// keepLast drops every part but the last, in a fresh slice as trimTo would.
func (b *Scrollback) keepLast(s *TerminalState) {
	if n := len(s.Content); n > 1 {
		s.Content = []ContentPart{s.Content[n-1]}
	}
}

// takesData reports whether appendData extends p rather than starting a new part.
func takesData(p *ContentPart) bool {
	return p.Type == PartUnclassified || p.Type == PartCommand && !p.IsComplete
}

// setText sets the text Text returns.
func setText(p *ContentPart, text string) {
	if p.Type == PartCommand {
		p.Output = text
	} else {
		p.Value = text
	}
}

// appendedChars is how many characters the content gained when data was appended to
// its last part. That is the data's own count unless the data begins with
// continuation bytes that complete a character the part ended in the middle of (a
// reader that splits output without decoding it): counted apart, the halves are
// several characters; joined, they are one.
func appendedChars(s *TerminalState, data string) int {
	if data == "" || utf8.RuneStart(data[0]) || len(s.Content) == 0 {
		return utf8.RuneCountInString(data)
	}
	text := s.Content[len(s.Content)-1].Text()
	head := text[:len(text)-len(data)]
	// A byte that is not a continuation byte starts a character whatever follows
	// it, so the count up to the last such byte among head's final UTFMax-1 bytes
	// is the same before and after; a start further back cannot take more bytes.
	for k := 1; k < utf8.UTFMax && k <= len(head); k++ {
		if j := len(head) - k; utf8.RuneStart(head[j]) {
			return utf8.RuneCountInString(text[j:]) - utf8.RuneCountInString(head[j:])
		}
	}
	return utf8.RuneCountInString(data)
}

// addedChars is appendedChars for a text held in a byte slice: how many characters
// text has more than text[:head].
func addedChars(text []byte, head int) int {
	data := text[head:]
	if len(data) == 0 || utf8.RuneStart(data[0]) {
		return countChars(data)
	}
	for k := 1; k < utf8.UTFMax && k <= head; k++ {
		if j := head - k; utf8.RuneStart(text[j]) {
			return countChars(text[j:]) - countChars(text[j:head])
		}
	}
	return countChars(data)
}

// How characters are counted: utf8.RuneCount decodes from the start of a part's
// text, a valid sequence at a time and an invalid byte on its own. Wherever decoding
// began, a step always begins at a byte that is not a continuation byte, and at a
// continuation byte right after three others (no sequence is longer than four
// bytes, so none can reach it). From such a byte on, the rest of the text decodes
// exactly as it does within the whole, so the characters of a tail can be counted
// without reading what comes before it.

// boundary returns a position at or before p where decoding text always begins a
// character. whole says decoding begins at text[0]; otherwise text may be the end of
// a longer text, and there may be no such position.
func boundary(text []byte, p int, whole bool) (int, bool) {
	for i := p; i > p-utf8.UTFMax; i-- {
		if i < 0 {
			// text[:p+1] is continuation bytes, each a character of its own when
			// decoding begins at text[0].
			return p, whole
		}
		if utf8.RuneStart(text[i]) {
			return i, true
		}
	}
	return p, true
}

// charsFromEnd returns where the last n characters of text begin, reading no more of
// text than those characters. ok is false when text has fewer than n characters
// (whole) or fewer than n after its first boundary (not whole).
func charsFromEnd(text []byte, n int, whole bool) (cut int, ok bool) {
	q, got := len(text), 0
	for got < n {
		if q == 0 {
			return 0, false
		}
		// The characters still wanted take at least as many bytes.
		p := max(q-(n-got), 0)
		start, found := boundary(text, p, whole)
		if !found {
			return 0, false
		}
		got += countChars(text[start:q])
		q = start
	}
	// Backing up to a boundary may have taken a few characters too many.
	for ; got > n; got-- {
		_, size := utf8.DecodeRune(text[q:])
		q += size
	}
	return q, true
}

// countChars is utf8.RuneCount(p) without the copy RuneCount makes of anything past
// the first non-ASCII byte. In valid UTF-8 every byte but a continuation byte
// (10xxxxxx) begins a character, so once utf8.Valid (quick on ASCII) has passed p,
// those bytes are counted eight at a time; anything else is decoded a character at
// a time, as RuneCount does.
func countChars(p []byte) int {
	// Output read in pieces often ends inside a character, which would send all of p
	// the slow way. Those last bytes are one character each until the rest comes.
	for i := len(p) - 1; i >= 0 && i > len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return countWhole(p[:i]) + len(p) - i
			}
			break
		}
	}
	return countWhole(p)
}

// countWhole is countChars without the look at how p ends.
func countWhole(p []byte) int {
	if !utf8.Valid(p) {
		n := 0
		for i := 0; i < len(p); n++ {
			if p[i] < utf8.RuneSelf {
				i++
				continue
			}
			_, size := utf8.DecodeRune(p[i:])
			i += size
		}
		return n
	}
	n, i := len(p), 0
	for ; i+8 <= len(p); i += 8 {
		w := binary.LittleEndian.Uint64(p[i:])
		// A byte's top bit set and the next one clear: shifting left by one lines each
		// byte's bit 6 up under its bit 7.
		n -= bits.OnesCount64(w &^ (w << 1) & 0x8080808080808080)
	}
	for ; i < len(p); i++ {
		if !utf8.RuneStart(p[i]) {
			n--
		}
	}
	return n
}
