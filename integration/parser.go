package integration

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/termhost/termhost/screen"
)

// Kind is what a mark says.
type Kind int

// The kinds of mark. The zero Kind is none of them.
const (
	PromptStart     Kind = iota + 1 // A: the prompt begins
	PromptEnd                       // B: the prompt ends, typing begins
	CommandStart                    // C: the command starts running
	CommandFinished                 // D[;code]: the command finished
	CommandLine                     // 633 E;line;nonce: the command line itself
	Cwd                             // 633 P;Cwd=path, or OSC 7 file URI: the directory
)

// String names the kind, for tests and logs.
func (k Kind) String() string {
	switch k {
	case PromptStart:
		return "PromptStart"
	case PromptEnd:
		return "PromptEnd"
	case CommandStart:
		return "CommandStart"
	case CommandFinished:
		return "CommandFinished"
	case CommandLine:
		return "CommandLine"
	case Cwd:
		return "Cwd"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one mark read out of the output.
type Event struct {
	Kind Kind
	// Family is the OSC number the mark came as: 133, 633 or 7.
	Family int
	// ExitCode is D's code; nil when the mark carried none (or none that is a number).
	ExitCode *int
	// Line is E's command line, unescaped (\x3b is ';', \\ is '\', any \xHH its byte).
	Line string
	// Nonce is E's nonce, as written; empty when the mark carried none.
	Nonce string
	// Cwd is the directory as a path (a file URI's host dropped, percent-decoded).
	Cwd string
}

// Segment is one piece of the output: either text (with the marks taken out) or the
// event of a mark, never both. Two text segments may follow each other where a mark
// that carries no event (an OSC 133 or 633 the parser does not read) stood between.
type Segment struct {
	Text  string
	Event *Event
}

// MaxHeld is how many bytes of a possible mark the parser holds back waiting for the
// rest of it. A candidate longer than that is not a mark: it goes out as output,
// unchanged, and so does a terminated mark longer than MaxHeld+1 bytes (the longest a
// mark can be and still have every unterminated prefix of it held), so that the
// result does not depend on where the input was split.
const MaxHeld = 1024

const esc = '\x1b'

// Parser is a streaming parser of shell-integration marks: OSC 133, OSC 633 and OSC
// 7, each ended by BEL or ST (ESC \). It reads the output with screen.Parser, takes
// every complete mark of those three out of it and reports the ones it reads as
// events, in place. Every other byte, including every other escape sequence, passes
// through untouched. A mark split between two Feed calls is held for the next one;
// nothing else is held.
//
// The zero Parser is ready to use. A Parser is not safe for concurrent use.
type Parser struct {
	seq  screen.Parser
	held string // the start of a possible mark, whose sequence seq has read
}

// Feed parses the next piece of output. It returns that output with the marks taken
// out, interleaved in order with the marks' events. A trailing piece that may still
// become a mark is held back and put in front of the next call's input. When nothing
// is held, no sequence is open and s holds no ESC, the result is s itself as a single
// segment, not copied.
func (p *Parser) Feed(s string) []Segment {
	if p.held == "" && p.seq.Ground() && strings.IndexByte(s, esc) < 0 {
		if s == "" {
			return nil
		}
		return []Segment{{Text: s}}
	}
	data := s
	if p.held != "" {
		// The held bytes are a sequence from its start: read them again with the rest.
		data = p.held + s
		p.held = ""
		p.seq.Reset()
	}
	var out []Segment
	text := func(t string) {
		if t != "" {
			out = append(out, Segment{Text: t})
		}
	}
	// data[:textStart] is done with: given out as text or taken out as a mark. A mark
	// whose string ended at an ESC starts at markStart (-1 for none), and is one only
	// if that ESC begins its ST.
	textStart, i, markStart := 0, 0, -1
	var markEv *Event
	start := -1 // where the last token read began; -1 for one begun, and given out, in an earlier call
	for i < len(data) {
		start = -1
		if p.seq.Ground() {
			// Only an ESC begins a sequence, and every mark is one.
			j := strings.IndexByte(data[i:], esc)
			if j < 0 {
				break
			}
			i += j
			// A mark begins ESC ], and an ESC ends any sequence before it: an ESC
			// followed by anything else is passed over unread (unless it may begin
			// the ST of a mark), which leaves seq between sequences at the next ESC
			// as reading it would have.
			if markStart < 0 && i+1 < len(data) && data[i+1] != ']' {
				i++
				continue
			}
			start = i
		}
		tok, n := p.seq.Next(data[i:])
		i += n
		if tok.Kind == screen.None {
			break // the sequence goes on in the next call
		}
		if markStart >= 0 {
			if p.seq.IsST(tok) && i-markStart <= MaxHeld+1 {
				text(data[textStart:markStart])
				if markEv != nil {
					out = append(out, Segment{Event: markEv})
				}
				textStart = i
			}
			markStart, markEv = -1, nil
		}
		if tok.Kind != screen.OSC || start < 0 || tok.Overflow {
			continue
		}
		body := data[start+2 : start+2+len(p.seq.Data())]
		family := 0
		for _, pf := range prefixes {
			if strings.HasPrefix(body, pf.text) {
				family, body = pf.family, body[len(pf.text):]
				break
			}
		}
		if family == 0 {
			continue
		}
		ev := parseMark(family, body)
		if tok.End == esc {
			markStart, markEv = start, ev
			continue
		}
		if i-start <= MaxHeld+1 {
			text(data[textStart:start])
			if ev != nil {
				out = append(out, Segment{Event: ev})
			}
			textStart = i
		}
	}
	if !p.seq.Ground() && start >= 0 {
		// The sequence begun at start goes on in the next call: hold it while it may
		// still be a mark. The ESC that may begin a mark's ST is held with the mark.
		from := start
		if markStart >= 0 && data[start:] == "\x1b" && len(data)-markStart <= MaxHeld {
			from = markStart
		}
		if len(data)-from <= MaxHeld && mayBeMark(data[from:]) {
			text(data[textStart:from])
			p.held = strings.Clone(data[from:])
			return out
		}
	}
	text(data[textStart:])
	return out
}

// Flush returns whatever is held, as output text, and forgets it and any sequence
// begun. Call it when the output has ended.
func (p *Parser) Flush() string {
	h := p.held
	p.held = ""
	p.seq.Reset()
	return h
}

// Held reports how many bytes are held back waiting for the rest of a mark.
func (p *Parser) Held() int { return len(p.held) }

var prefixes = [...]struct {
	text   string
	family int
}{
	{"133;", 133},
	{"633;", 633},
	{"7;", 7},
}

// mayBeMark reports whether raw, the start of a sequence, is or may become the start
// of a mark: ESC ] and one of the prefixes.
func mayBeMark(raw string) bool {
	if len(raw) < 2 {
		return raw == "\x1b"
	}
	if raw[:2] != "\x1b]" {
		return false
	}
	raw = raw[2:]
	for _, pf := range prefixes {
		if strings.HasPrefix(raw, pf.text) || strings.HasPrefix(pf.text, raw) {
			return true
		}
	}
	return false
}

// parseMark reads a mark's body (what follows "133;", "633;" or "7;").
func parseMark(family int, body string) *Event {
	if family == 7 {
		path := uriPath(body)
		if path == "" {
			return nil
		}
		return &Event{Kind: Cwd, Family: 7, Cwd: path}
	}
	cmd, params, _ := strings.Cut(body, ";")
	switch cmd {
	case "A":
		return &Event{Kind: PromptStart, Family: family}
	case "B":
		return &Event{Kind: PromptEnd, Family: family}
	case "C":
		return &Event{Kind: CommandStart, Family: family}
	case "D":
		ev := &Event{Kind: CommandFinished, Family: family}
		code, _, _ := strings.Cut(params, ";")
		if n, err := strconv.Atoi(strings.TrimSpace(code)); err == nil {
			ev.ExitCode = &n
		}
		return ev
	}
	if family != 633 {
		return nil
	}
	switch cmd {
	case "E":
		line, nonce, _ := strings.Cut(params, ";")
		return &Event{Kind: CommandLine, Family: 633, Line: unescape(line), Nonce: nonce}
	case "P":
		key, value, _ := strings.Cut(params, "=")
		if key != "Cwd" {
			return nil
		}
		value = unescape(value)
		if strings.Contains(value, "://") {
			value = uriPath(value)
		}
		if value == "" {
			return nil
		}
		return &Event{Kind: Cwd, Family: 633, Cwd: value}
	}
	return nil
}

// unescape undoes the escaping of VS Code's scripts: \\ is a backslash and \xHH the
// byte HH (\x3b is the ';' a value cannot carry raw). Any other backslash is kept.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			if s[i+1] == '\\' {
				b = append(b, '\\')
				i++
				continue
			}
			if s[i+1] == 'x' && i+3 < len(s) {
				hi, ok1 := unhex(s[i+2])
				lo, ok2 := unhex(s[i+3])
				if ok1 && ok2 {
					b = append(b, hi<<4|lo)
					i += 3
					continue
				}
			}
		}
		b = append(b, c)
	}
	return string(b)
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// uriPath reads the path out of OSC 7's URI: file://host/path with the host dropped
// and the path percent-decoded (kept as written where it does not decode, since
// many prompts print $PWD without encoding it). kitty-shell-cwd://host/path is read
// the same way without decoding, and a bare absolute path is taken as it is.
// Anything else yields "".
func uriPath(u string) string {
	if strings.HasPrefix(u, "/") {
		return u
	}
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	scheme = strings.ToLower(scheme)
	if scheme != "file" && scheme != "kitty-shell-cwd" {
		return ""
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return ""
	}
	path := rest[slash:]
	if scheme == "file" {
		if dec, err := url.PathUnescape(path); err == nil {
			path = dec
		}
	}
	return path
}
