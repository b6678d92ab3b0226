package integration

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termhost/termhost/messages"
)

// NonceEnv is the environment variable VS Code's scripts read the terminal's nonce
// from; they write it after the command line of every OSC 633 E.
const NonceEnv = "VSCODE_NONCE"

// NewNonce returns a fresh random nonce for one terminal: 16 bytes from crypto/rand,
// in hex.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail; it crashes the program if it cannot read
	return hex.EncodeToString(b[:])
}

// Tracker turns a terminal's output, and what was typed into it, into the terminal
// channel's actions. Marks are taken out of the output; from them come
// terminal/commandDetectionAvailable, terminal/commandExecuted,
// terminal/commandFinished and terminal/cwdChanged, each where its mark stood, after
// the terminal/data of the output printed before it.
//
// Which marks are read:
//   - OSC 133 and 633 A, B, C, D[;code]; OSC 633 E;line;nonce; OSC 633 P;Cwd=path
//     and OSC 7.
//   - Once any OSC 633 mark has been read, OSC 133 marks are still taken out of
//     the output but no longer read, so a prompt that writes both does not count a
//     command twice.
//   - An E counts only with this tracker's own nonce (never when that nonce is
//     empty); one with another nonce is ignored altogether.
//
// The command line at C:
//   - E's line, if one with the right nonce came since the last C.
//   - Otherwise, what was typed since the prompt began: A, or B where the prompt
//     had no A.
//   - The typed line is read simply: up to its first \r or \n; backspace (\x7f, \b)
//     takes back a character, ^U and ^C clear the line, ^W takes back a word;
//     escape sequences and other control characters are dropped; the result is
//     trimmed of spaces.
//
// terminal/commandDetectionAvailable goes out once, at the first OSC 133 or 633 mark
// read. OSC 7 alone does not announce it: plenty of prompts write OSC 7 and mark no
// command. A D with no command executed is ignored; a C while a command is still
// running finishes that one first, with no exit code. terminal/cwdChanged goes out
// only when the directory's URI changes.
//
// A Tracker is safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	p     Parser
	nonce string
	now   func() time.Time
	newID func() string

	detected   bool
	seen633    bool
	promptOpen bool // an A was read and no C or D since: B does not restart the line
	line       *string
	typed      lineReader

	running  bool
	cmdID    string
	cmdStart time.Time

	cwd string // the last cwd URI announced
}

var trackerIDs atomic.Uint64

// NewTracker returns a tracker for one terminal. nonce is the terminal's own (see
// NewNonce); now is the clock of timestamps and durations; newID names each command.
// A nil now is time.Now, and a nil newID numbers commands "cmd-1", "cmd-2", ... .
func NewTracker(nonce string, now func() time.Time, newID func() string) *Tracker {
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = func() string { return "cmd-" + strconv.FormatUint(trackerIDs.Add(1), 10) }
	}
	return &Tracker{nonce: nonce, now: now, newID: newID}
}

// Input records bytes a client typed into the terminal (the data of terminal/input),
// so that a C mark can read its command line back when the shell gave no E.
func (t *Tracker) Input(data string) {
	t.mu.Lock()
	t.typed.feed(data)
	t.mu.Unlock()
}

// Output feeds the next piece of the terminal's output and returns the actions it
// makes, in order. Adjacent output is one terminal/data action; empty output makes
// none.
func (t *Tracker) Output(s string) []messages.Action {
	t.mu.Lock()
	defer t.mu.Unlock()
	segs := t.p.Feed(s)
	if len(segs) == 1 && segs[0].Event == nil {
		return []messages.Action{dataAction(segs[0].Text)}
	}
	e := emitter{}
	for _, sg := range segs {
		if sg.Event == nil {
			e.text = append(e.text, sg.Text)
			continue
		}
		t.handle(sg.Event, &e)
	}
	e.flushText()
	return e.out
}

// Flush returns what is still held back, a mark that never finished, as
// terminal/data. Call it when the output has ended.
func (t *Tracker) Flush() []messages.Action {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.p.Flush(); h != "" {
		return []messages.Action{dataAction(h)}
	}
	return nil
}

// Detected reports whether the shell has marked a boundary, that is whether
// terminal/commandDetectionAvailable has gone out.
func (t *Tracker) Detected() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.detected
}

type emitter struct {
	out  []messages.Action
	text []string
}

func (e *emitter) flushText() {
	var s string
	switch len(e.text) {
	case 0:
		return
	case 1:
		s = e.text[0]
	default:
		s = strings.Join(e.text, "")
	}
	e.text = e.text[:0]
	if s != "" {
		e.out = append(e.out, dataAction(s))
	}
}

func (e *emitter) emit(a messages.Action) {
	e.flushText()
	e.out = append(e.out, a)
}

func dataAction(s string) messages.Action {
	return messages.Action{Type: messages.TerminalData, Data: messages.Ptr(s)}
}

func (t *Tracker) handle(ev *Event, e *emitter) {
	switch ev.Family {
	case 133:
		if t.seen633 {
			return
		}
	case 633:
		if ev.Kind == CommandLine && !t.ownNonce(ev.Nonce) {
			return
		}
		t.seen633 = true
	}
	if ev.Family != 7 && !t.detected {
		t.detected = true
		e.emit(messages.Action{Type: messages.TerminalCommandDetectionAvailable})
	}
	switch ev.Kind {
	case PromptStart:
		t.typed.reset()
		t.line = nil
		t.promptOpen = true
	case PromptEnd:
		if !t.promptOpen {
			t.typed.reset()
			t.line = nil
		}
		t.promptOpen = true
	case CommandLine:
		t.line = messages.Ptr(ev.Line)
	case CommandStart:
		now := t.now()
		if t.running {
			e.emit(t.finished(nil, now))
		}
		line := t.typed.line()
		if t.line != nil {
			line = *t.line
		}
		t.line = nil
		t.typed.reset()
		t.promptOpen = false
		t.running, t.cmdID, t.cmdStart = true, t.newID(), now
		e.emit(messages.Action{
			Type:        messages.TerminalCommandExecuted,
			CommandID:   t.cmdID,
			CommandLine: messages.Ptr(line),
			Timestamp:   messages.Ptr(now.UnixMilli()),
		})
	case CommandFinished:
		t.promptOpen = false
		t.line = nil
		if t.running {
			e.emit(t.finished(ev.ExitCode, t.now()))
		}
	case Cwd:
		u := messages.FileURI(ev.Cwd)
		if u != t.cwd {
			t.cwd = u
			e.emit(messages.Action{Type: messages.TerminalCwdChanged, Cwd: messages.Ptr(u)})
		}
	}
}

// finished ends the running command.
func (t *Tracker) finished(code *int, now time.Time) messages.Action {
	a := messages.Action{
		Type:       messages.TerminalCommandFinished,
		CommandID:  t.cmdID,
		DurationMs: messages.Ptr(max(now.Sub(t.cmdStart).Milliseconds(), 0)),
	}
	if code != nil {
		a.ExitCode = messages.Ptr(*code)
	}
	t.running, t.cmdID = false, ""
	return a
}

func (t *Tracker) ownNonce(n string) bool {
	return t.nonce != "" && subtle.ConstantTimeCompare([]byte(n), []byte(t.nonce)) == 1
}

// maxLine is how many characters of a typed line are kept.
const maxLine = 4096

// lineReader reads a command line back out of typed bytes, simply.
type lineReader struct {
	cur       []rune
	submitted *string // the first line ended with \r or \n
	esc       escState
}

type escState int

const (
	escNone escState = iota
	escStart
	escCSI
	escSS3
	escString
	escStringEsc
)

func (r *lineReader) reset() {
	r.cur = r.cur[:0]
	r.submitted = nil
}

func (r *lineReader) line() string {
	if r.submitted != nil {
		return strings.TrimSpace(*r.submitted)
	}
	return strings.TrimSpace(string(r.cur))
}

func (r *lineReader) feed(data string) {
	for _, c := range data {
		switch r.esc {
		case escStart:
			switch c {
			case '[':
				r.esc = escCSI
			case 'O':
				r.esc = escSS3
			case ']', 'P', '_', '^', 'X':
				r.esc = escString
			case '\x1b':
				// still at the start of a sequence
			default:
				r.esc = escNone // ESC and one character: Alt and a key
			}
			continue
		case escCSI:
			if c >= 0x40 && c <= 0x7e {
				r.esc = escNone
			}
			continue
		case escSS3:
			r.esc = escNone
			continue
		case escString:
			switch c {
			case '\x07':
				r.esc = escNone
			case '\x1b':
				r.esc = escStringEsc
			}
			continue
		case escStringEsc:
			if c == '\\' {
				r.esc = escNone
			} else {
				r.esc = escString
			}
			continue
		}
		switch c {
		case '\x1b':
			r.esc = escStart
		case '\r', '\n':
			if r.submitted == nil {
				r.submitted = messages.Ptr(string(r.cur))
			}
			r.cur = r.cur[:0]
		case '\x7f', '\b':
			if len(r.cur) > 0 {
				r.cur = r.cur[:len(r.cur)-1]
			}
		case '\x15', '\x03': // ^U, ^C
			r.cur = r.cur[:0]
		case '\x17': // ^W
			n := len(r.cur)
			for n > 0 && r.cur[n-1] == ' ' {
				n--
			}
			for n > 0 && r.cur[n-1] != ' ' {
				n--
			}
			r.cur = r.cur[:n]
		default:
			if c < 0x20 || (c >= 0x80 && c < 0xa0) {
				continue
			}
			if len(r.cur) < maxLine {
				r.cur = append(r.cur, c)
			}
		}
	}
}
