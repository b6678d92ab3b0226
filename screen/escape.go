package screen

import (
	"strconv"
	"strings"
)

// The escape-sequence parser: the one place the host reads the structure of a
// program's output. It follows ECMA-48 (5th edition, section 5: the C0 set,
// escape sequences, control sequences and control strings) with the 7-bit forms
// only: in UTF-8 output the bytes 0x80–0x9F are parts of characters, never C1
// controls, so CSI is always ESC [ and ST always ESC \.

// MaxSequence bounds what the parser keeps of one sequence: the parameter and
// intermediate bytes of an escape or control sequence, or the content of a control
// string. A sequence may run longer (an OSC 52 clipboard copy can be megabytes, and
// a stray ESC ] in binary output opens a string that only the next BEL or ESC ends);
// the parser reads it to its end all the same but keeps only its first MaxSequence
// bytes and marks the token Overflow, so that its memory stays bounded whatever the
// program writes.
const MaxSequence = 4096

// The C0 controls the parser itself acts on.
const (
	bel = 0x07
	esc = 0x1b
)

// Kind is what a token is.
type Kind uint8

// The kinds of token. The zero Kind, None, is no token: the bytes read began or
// continued a sequence that has not ended yet.
const (
	None    Kind = iota
	Text         // a run of characters: every byte from 0x20 up, UTF-8 and DEL included
	Control      // one C0 control character (0x00–0x1F) other than ESC
	Escape       // ESC, intermediate bytes 0x20–0x2F, a final byte 0x30–0x7E
	CSI          // ESC [, parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, a final byte 0x40–0x7E
	OSC          // ESC ] string: operating system command
	DCS          // ESC P string: device control string
	SOS          // ESC X string: start of string
	PM           // ESC ^ string: privacy message
	APC          // ESC _ string: application program command
)

var kindNames = [...]string{"None", "Text", "Control", "Escape", "CSI", "OSC", "DCS", "SOS", "PM", "APC"}

// String names the kind, for tests and logs.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// IsString reports whether the kind is a control string (OSC, DCS, SOS, PM or APC).
func (k Kind) IsString() bool { return k >= OSC && k <= APC }

// Token is one piece of output as the parser read it. The bytes of a sequence's
// parts are the parser's: see Parser.Params, Intermediates and Data.
type Token struct {
	Kind Kind
	// Final is the final byte of an Escape or a CSI (0 when the sequence was cut
	// short), or the character of a Control.
	Final byte
	// End is what ended a control string: BEL (an OSC only, as xterm allows), or ESC.
	// That ESC is not part of the string: it begins the next token, and when that
	// token is ST (ESC \) the string was terminated as ECMA-48 asks. A control string
	// ended by an ESC that does not begin ST was cut short, as a terminal cuts it.
	End byte
	// Malformed is set when the sequence broke ECMA-48's form: it was cut short
	// before its final byte by a byte that has no place in it (ESC, a control
	// character, or a byte above 0x7E), which then begins the next token; or a CSI
	// had a parameter byte after an intermediate byte.
	Malformed bool
	// Overflow is set when the sequence ran past MaxSequence bytes: the parser kept
	// only its start.
	Overflow bool
}

type state uint8

const (
	ground   state = iota // between sequences
	escape                // after ESC, and any intermediate bytes
	csiParam              // after ESC [, and any parameter bytes
	csiInter              // after a CSI's first intermediate byte
	inString              // inside a control string
)

// Parser is an incremental tokenizer of a program's output. Each call to Next reads
// one token from the front of its input and says how many bytes it read; a sequence
// split across calls is put back together, so a stream gives the same tokens however
// it is split (a run of text excepted, which ends where each input ends).
//
// Every byte belongs to exactly one token: a Text or Control is the bytes read by the
// call that returns it, and a sequence is the bytes read by the calls that returned
// None since it began plus those read by the call that returns it. A sequence cut
// short by a byte that has no place in it, and a control string ended by ESC, end
// before that byte: the call may then return the token having read nothing.
//
// The zero Parser is ready to use. A Parser is not safe for concurrent use.
type Parser struct {
	state state
	str   Kind // the control string being read, in state inString
	bad   bool // the sequence is malformed
	over  bool // the sequence ran past MaxSequence
	// The sequence so far, past its introducer: buf[:n], at most MaxSequence bytes.
	// buf only grows, so that keeping bytes is a copy and not a store of a pointer
	// (a pointer store in the parser, which lives on the heap, costs a write barrier
	// check on every sequence).
	buf    []byte
	n      int
	params int  // CSI: how many of the bytes are parameter bytes
	last   Kind // the Kind of the token Next returned last
}

// Ground reports whether the parser is between sequences. Only an ESC can then begin
// one, so a caller that wants sequences alone may skip to the next ESC without
// calling Next on the text and controls before it.
func (p *Parser) Ground() bool { return p.state == ground }

// Reset forgets any sequence begun and not ended.
func (p *Parser) Reset() {
	p.state, p.str, p.bad, p.over, p.n, p.last = ground, None, false, false, 0, None
}

// Params returns the parameter bytes of the CSI that Next returned last, as written,
// a private marker included: "?1049" for ESC [ ? 1 0 4 9 h. It returns nil after any
// other token. Like Intermediates and Data, it returns the parser's own bytes, valid
// until its next call.
func (p *Parser) Params() []byte {
	if p.last != CSI {
		return nil
	}
	return p.buf[:p.params]
}

// Intermediates returns the intermediate bytes of the Escape or CSI that Next
// returned last: "(" for ESC ( B, "$" for ESC [ ? 2 0 0 4 $ p. It returns nil after
// any other token.
func (p *Parser) Intermediates() []byte {
	switch p.last {
	case Escape:
		return p.buf[:p.n]
	case CSI:
		return p.buf[p.params:p.n]
	}
	return nil
}

// Data returns the content of the control string that Next returned last, between
// its opening and its end. It returns nil after any other token.
func (p *Parser) Data() []byte {
	if !p.last.IsString() {
		return nil
	}
	return p.buf[:p.n]
}

// IsST reports whether t, the token Next returned last, is the string terminator
// ESC \.
func (p *Parser) IsST(t Token) bool {
	return t.Kind == Escape && t.Final == '\\' && !t.Malformed && p.n == 0
}

// Next reads the next token from the front of s. It returns the token and how many
// bytes of s it read. A token of Kind None means all of s was read into a sequence
// that continues in the next call; n is 0 only for an empty s or a token ended by the
// first byte of s.
func (p *Parser) Next(s string) (tok Token, n int) { return next(p, s) }

// NextBytes is Next for a byte slice.
func (p *Parser) NextBytes(b []byte) (tok Token, n int) { return next(p, b) }

func next[T string | []byte](p *Parser, s T) (Token, int) {
	p.last = None
	if len(s) == 0 {
		return Token{}, 0
	}
	i := 0
	if p.state == ground {
		switch c := s[0]; {
		case c == esc:
			p.bad, p.over, p.n = false, false, 0
			if n, final := plainCSI(s); n > 0 {
				keep(p, s[2:n-1])
				p.params, p.last = p.n, CSI
				return Token{Kind: CSI, Final: final}, n
			}
			p.state = escape
			i = 1
		case c < 0x20:
			p.last = Control
			return Token{Kind: Control, Final: c}, 1
		default:
			j := 1
			for j < len(s) && s[j] >= 0x20 {
				j++
			}
			p.last = Text
			return Token{Kind: Text}, j
		}
	}
	for i < len(s) {
		switch p.state {
		case escape:
			j := i
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
				j++
			}
			keep(p, s[i:j])
			if j == len(s) {
				return Token{}, j
			}
			c := s[j]
			if c < 0x30 || c > 0x7e {
				return p.cut(Escape), j
			}
			if p.n == 0 {
				if k := introduced(c); k != None {
					if k == CSI {
						p.state = csiParam
					} else {
						p.state, p.str = inString, k
					}
					i = j + 1
					continue
				}
			}
			return p.finish(Escape, c), j + 1
		case csiParam, csiInter:
			j := i
			if p.state == csiParam {
				for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
					j++
				}
				if j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
					p.state = csiInter
					p.params = min(p.n+j-i, MaxSequence)
				}
			}
			for ; j < len(s); j++ {
				c := s[j]
				if c >= 0x30 && c <= 0x3f {
					// ECMA-48 5.4: parameter bytes come before any intermediate byte.
					p.bad = true
				} else if c < 0x20 || c > 0x2f {
					break
				}
			}
			keep(p, s[i:j])
			if j == len(s) {
				return Token{}, j
			}
			if c := s[j]; c >= 0x40 && c <= 0x7e {
				return p.finish(CSI, c), j + 1
			}
			return p.cut(CSI), j
		case inString:
			j := i
			for j < len(s) && s[j] != esc && (s[j] != bel || p.str != OSC) {
				j++
			}
			keep(p, s[i:j])
			if j == len(s) {
				return Token{}, j
			}
			tok := p.finish(p.str, 0)
			tok.End = s[j]
			if s[j] == bel {
				return tok, j + 1
			}
			return tok, j
		}
	}
	return Token{}, len(s)
}

// plainCSI reads the commonest sequence in output whole, in one go: a CSI with no
// intermediate bytes (SGR colours, cursor moves) at the front of s, begun and ended
// in s. It returns the sequence's length and final byte, or 0 and 0 when s does not
// start with one. A caller between sequences (Parser.Ground) may skip such a CSI
// without Next when its final byte tells it the CSI is of no interest: Next would
// have returned it as a CSI and stayed between sequences.
func plainCSI[T string | []byte](s T) (n int, final byte) {
	if len(s) < 3 || s[0] != esc || s[1] != '[' {
		return 0, 0
	}
	j := 2
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
		j++
	}
	if j == len(s) || s[j] < 0x40 || s[j] > 0x7e || j-2 > MaxSequence {
		return 0, 0
	}
	return j + 1, s[j]
}

// introduced is what the final byte of ESC with no intermediates opens: a control
// sequence or a control string; None for an escape sequence complete in itself.
func introduced(c byte) Kind {
	switch c {
	case '[':
		return CSI
	case ']':
		return OSC
	case 'P':
		return DCS
	case 'X':
		return SOS
	case '^':
		return PM
	case '_':
		return APC
	}
	return None
}

// keep adds run to the sequence, up to MaxSequence bytes.
func keep[T string | []byte](p *Parser, run T) {
	if room := MaxSequence - p.n; len(run) > room {
		run = run[:room]
		p.over = true
	}
	if p.n+len(run) > len(p.buf) {
		p.buf = append(p.buf[:p.n], run...)
		p.buf = p.buf[:cap(p.buf)]
		p.n += len(run)
		return
	}
	p.n += copy(p.buf[p.n:], run)
}

// finish ends the sequence being read as a token of the given kind.
func (p *Parser) finish(kind Kind, final byte) Token {
	if kind == CSI && p.state == csiParam {
		p.params = p.n
	}
	p.state, p.str, p.last = ground, None, kind
	return Token{Kind: kind, Final: final, Malformed: p.bad, Overflow: p.over}
}

// cut ends the sequence being read before its final byte.
func (p *Parser) cut(kind Kind) Token {
	p.bad = true
	return p.finish(kind, 0)
}

// StripEscapes returns the plain text of output: every escape sequence, control
// sequence and control string taken out (one cut off by the end of s too), and
// every carriage return, so that "\r\n" line ends become "\n". Other control
// characters stay.
func StripEscapes(s string) string {
	if strings.IndexByte(s, esc) < 0 && strings.IndexByte(s, '\r') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	var p Parser
	for s != "" {
		if p.Ground() && s[0] != esc {
			i := strings.IndexByte(s, esc)
			if i < 0 {
				i = len(s)
			}
			for text := s[:i]; text != ""; {
				j := strings.IndexByte(text, '\r')
				if j < 0 {
					b.WriteString(text)
					break
				}
				b.WriteString(text[:j])
				text = text[j+1:]
			}
			s = s[i:]
			continue
		}
		_, n := p.Next(s) // a sequence: left out
		s = s[n:]
	}
	return b.String()
}
