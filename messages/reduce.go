package messages

import "unicode/utf8"

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
// chunk. terminal/data is gathered in a pending buffer and folded into the state's
// tail part in one append when anything else happens, when the state is read
// (Settle), or when the content passes twice the limit, so a flood costs about two
// copies of each byte instead of one copy of the whole tail per chunk. The state's
// content is only current after Settle.
type Scrollback struct {
	Limit   int
	chars   int    // characters in the state's content, pending excluded
	pending []byte // terminal/data not yet folded into the state
}

// Apply folds a into s (data lazily) and keeps the content near the limit.
func (b *Scrollback) Apply(s *TerminalState, a *Action) {
	if a.Type == TerminalData {
		if a.Data != nil {
			b.pending = append(b.pending, *a.Data...)
			// len(pending) counts bytes, never fewer than its characters.
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

// flush folds the pending data into the state's tail part.
func (b *Scrollback) flush(s *TerminalState) {
	if len(b.pending) == 0 {
		return
	}
	data := string(b.pending)
	b.pending = b.pending[:0]
	if cap(b.pending) > 64<<10 {
		b.pending = nil
	}
	appendData(s, data)
	b.chars += appendedChars(s, data)
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

// Settle trims the content to exactly the limit, before a snapshot is taken.
func (b *Scrollback) Settle(s *TerminalState) {
	b.flush(s)
	if b.Limit > 0 && b.chars > b.Limit {
		b.chars -= trimTo(s, b.chars, b.Limit)
	}
}
