package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
)

// Messages of sessions and chats.

// Create opens a session with its default chat; the answer is a *Result.
type Create struct {
	URI                string
	WorkingDirectories []string
}

// CreateChat opens another chat in a session; the answer is a *Result.
type CreateChat struct {
	Session string
	Chat    string
}

// Result answers Create, CreateChat and Dispose.
type Result struct {
	Err  *messages.Error
	Chat string
}

// Dispose ends a session, its chats' terminals and what is kept of it.
type Dispose struct{ URI string }

// DisposeChat ends a chat's terminals and drops it with what was kept of it.
type DisposeChat struct{ Chat string }

// List asks for every session's summary; the answer is a []map[string]any.
type List struct{}

// SummaryQuery asks one session for its summary; the answer is a map[string]any.
type SummaryQuery struct{}

// ChatsOf tells the root which chats a session holds now, so it routes their
// channels to the session.
type ChatsOf struct {
	Session string
	Chats   []string
}

// Chat URIs and retained terminal names.

// commandTerminalPrefix starts the URI of a terminal a `!` command opens: it is named
// after its chat, with the tool call's id as its key, so a subscribe that no live
// terminal answers can find what was kept (seed: "A terminal a tool result names").
const commandTerminalPrefix = "ahp-terminal:/termhost-command/"

func commandTerminalURI(chat, key string) string {
	return commandTerminalPrefix + url.PathEscape(chat) + "/" + url.PathEscape(key)
}

// ParseCommandTerminalURI returns the chat and key a command terminal's URI names.
func ParseCommandTerminalURI(uri string) (chat, key string, ok bool) {
	rest, found := strings.CutPrefix(uri, commandTerminalPrefix)
	if !found {
		return "", "", false
	}
	c, k, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	chat, err1 := url.PathUnescape(c)
	key, err2 := url.PathUnescape(k)
	if err1 != nil || err2 != nil || chat == "" || key == "" {
		return "", "", false
	}
	return chat, key, true
}

// Turn endings, in the seed's (and VS Code's) words.
const (
	endRan         = "Ran command"
	endTimedOut    = "Command timed out"
	endShellExited = "Shell exited unexpectedly"
	endBackground  = "Command is running in the background"
	endInteractive = "Command opened an interactive terminal"
	endFailed      = "Failed to run command"
	noAgent        = "no agent is attached to this session"
	ClosingHost    = "This host is closing, so nothing new starts on it"
)

// previewLimit is how much of a command's printed text its completed call carries.
const previewLimit = 80_000

// sentinelPrefix names the line a shell without integration echoes after a command:
// <<<TERMHOST_SENTINEL_<id>_EXIT_<code>>>>.
const sentinelPrefix = "TERMHOST_SENTINEL_"

var ansiSequence = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// stripEscapes removes terminal escape sequences and carriage returns.
func stripEscapes(s string) string {
	s = ansiSequence.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "")
}

// lastChars keeps the last n characters of s.
func lastChars(s string, n int) (string, bool) {
	r := []rune(s)
	if len(r) <= n {
		return s, false
	}
	return string(r[len(r)-n:]), true
}

// session is one session: its state, its chats with their turns, and the `!`
// commands running in them. It owns the terminals those commands open.
type session struct {
	cfg     Config
	journal *delivery.Journal
	// root is the parent that spawned this session: where its terminals are made.
	root  *actor.PID
	store *persistence.Store

	uri    string
	record persistence.SessionRecord
	state  map[string]any
	subs   map[delivery.Subscriber]bool
	chats  map[string]*chat
	order  []string
	seq    int
	closed bool
	// writes are the disk writes on their way; a shutdown waits for them so a
	// command that ended is kept.
	writes *sync.WaitGroup
	// lastWrite is closed once the newest finished command is kept (nil before the
	// first); the next one's writes wait for it.
	lastWrite chan struct{}
}

type chat struct {
	uri   string
	state map[string]any
	subs  map[delivery.Subscriber]bool
	// runs are the `!` commands of this chat, by tool call id, running or done.
	runs map[string]*commandRun
	// lastTurn is the id of the newest turn, the anchor of the next local turn.
	lastTurn string
	// busy is the turn running now, "" when idle; queued messages wait for it.
	busy string
}

// commandRun is one `!` command from typing to its completed tool call.
type commandRun struct {
	chat       *chat
	turnID     string
	toolCallID string
	command    string
	text       string
	terminal   string
	started    time.Time
	isPty      bool
	marks      bool // its end is read from the integration's finished mark
	sentinel   string
	typed      bool
	output     strings.Builder
	done       bool
	commandID  string
	timer      *time.Timer
	stopAlt    chan struct{}
}

// sessionMsg messages a session sends itself.
type (
	runTimedOut  struct{ toolCallID string }
	runAltScreen struct{ toolCallID string }
	runOpened    struct {
		toolCallID string
		res        *terminal.CreateResult
		err        error
	}
)

// NewProps makes the props of a session, spawned by the root. A restored session
// rebuilds its chats and local turns from what the store kept.
func NewProps(cfg Config, rec persistence.SessionRecord, restored bool) *actor.Props {
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		s := &session{cfg: cfg, journal: cfg.Journal, store: cfg.Store, uri: rec.URI, record: rec, subs: map[delivery.Subscriber]bool{}, chats: map[string]*chat{}, writes: &sync.WaitGroup{}}
		s.state = map[string]any{
			"provider":           "termhost",
			"title":              rec.Title,
			"status":             1,
			"lifecycle":          "ready",
			"activeClients":      []any{},
			"chats":              []any{},
			"workingDirectories": toAny(rec.WorkingDirectories),
		}
		if restored {
			s.restore()
		}
		return s
	})
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *session) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.root = ctx.Parent()
		if len(s.chats) == 0 {
			s.addChat(ctx, s.uri+"/chat")
		}
		s.tellHostChats(ctx)
	case *CreateChat:
		if m.Chat == "" {
			s.seq++
			m.Chat = fmt.Sprintf("%s/chat-%d", s.uri, s.seq+len(s.chats))
		}
		if _, taken := s.chats[m.Chat]; taken {
			ctx.Respond(&Result{Err: messages.Errorf(messages.CodeAlreadyExists, "Chat already exists: %s", m.Chat)})
			return
		}
		s.addChat(ctx, m.Chat)
		s.tellHostChats(ctx)
		ctx.Respond(&Result{Chat: m.Chat})
	case *channel.Subscribe:
		s.subscribe(ctx, m)
	case *channel.Unsubscribe:
		if c := s.chats[m.Channel]; c != nil {
			delete(c.subs, m.Sub)
		} else {
			delete(s.subs, m.Sub)
		}
	case *channel.Dispatch:
		s.dispatch(ctx, m)
	case *SummaryQuery:
		ctx.Respond(s.summary())
	case *runOpened:
		s.opened(ctx, m)
	case *terminal.Event:
		s.terminalEvent(ctx, m)
	case *runTimedOut:
		if r := s.findRun(m.toolCallID); r != nil {
			s.finish(ctx, r, endTimedOut, false, nil)
		}
	case *runAltScreen:
		if r := s.findRun(m.toolCallID); r != nil {
			s.finish(ctx, r, endInteractive, true, nil)
		}
	case *DisposeChat:
		c := s.chats[m.Chat]
		if c == nil {
			ctx.Respond(&Result{})
			return
		}
		s.disposeChat(ctx, c)
		delete(s.chats, c.uri)
		for i, u := range s.order {
			if u == c.uri {
				s.order = append(s.order[:i], s.order[i+1:]...)
				break
			}
		}
		s.sessionAction(map[string]any{"type": "session/chatRemoved", "chat": c.uri})
		s.tellHostChats(ctx)
		// What was kept goes once the writes on their way have landed, then the
		// answer: nothing of the chat is written after its disposal was answered.
		s.afterWrites(ctx, func() {
			if err := s.store.DeleteChat(s.uri, c.uri); err != nil {
				s.cfg.Logger.Warn("a disposed chat's kept data could not be removed", "chat", c.uri, "err", err)
			}
		})
	case *Dispose:
		s.dispose(ctx)
		s.afterWrites(ctx, func() {
			if err := s.store.DeleteSession(s.uri); err != nil {
				s.cfg.Logger.Warn("a disposed session's kept data could not be removed", "session", s.uri, "err", err)
			}
		})
		ctx.Stop(ctx.Self())
	case *channel.Shutdown:
		s.closed = true
		for _, c := range s.chats {
			for _, r := range c.runs {
				if !r.done {
					s.finish(ctx, r, endFailed, false, fmt.Errorf("%s", ClosingHost))
				}
			}
		}
		sender, system, writes := ctx.Sender(), ctx.ActorSystem(), s.writes
		go func() {
			writes.Wait()
			system.Root.Send(sender, &channel.ShutdownDone{})
		}()
	}
}

func (s *session) findRun(id string) *commandRun {
	for _, c := range s.chats {
		if r := c.runs[id]; r != nil && !r.done {
			return r
		}
	}
	return nil
}

func (s *session) addChat(ctx actor.Context, uri string) *chat {
	now := time.Now()
	c := &chat{uri: uri, subs: map[delivery.Subscriber]bool{}, runs: map[string]*commandRun{}}
	c.state = map[string]any{
		"resource":   uri,
		"title":      "Chat",
		"status":     1,
		"modifiedAt": isoTime(now),
		"turns":      []any{},
	}
	s.chats[uri] = c
	s.order = append(s.order, uri)
	summary := map[string]any{"resource": uri, "title": "Chat", "status": 1, "modifiedAt": isoTime(now)}
	s.sessionAction(map[string]any{"type": "session/chatAdded", "summary": summary})
	if _, ok := s.state["defaultChat"]; !ok {
		s.state["defaultChat"] = uri
	}
	return c
}

func (s *session) tellHostChats(ctx actor.Context) {
	ctx.Send(s.root, &ChatsOf{Session: s.uri, Chats: append([]string(nil), s.order...)})
}

func (s *session) summary() map[string]any {
	// A session of commands is dated from its first command's start to its last
	// one's end (seed: "Who opens one").
	created := s.record.Created
	if !s.record.FirstStart.IsZero() {
		created = s.record.FirstStart
	}
	modified := s.record.LastEnd
	if modified.IsZero() {
		modified = created
	}
	return map[string]any{
		"provider": "termhost", "title": s.state["title"], "status": 1, "resource": s.uri,
		"createdAt": isoTime(created), "modifiedAt": isoTime(modified),
		"workingDirectories": toAny(s.record.WorkingDirectories),
	}
}

// sessionAction folds and broadcasts an action on the session channel.
func (s *session) sessionAction(a map[string]any) {
	messages.ReduceSession(s.state, a)
	raw, _ := json.Marshal(a)
	frame := s.journal.Stamp(&messages.Envelope{Channel: s.uri, Action: raw})
	for sub := range s.subs {
		sub.Deliver(s.uri, frame)
	}
}

// chatAction folds and broadcasts an action on a chat channel.
func (s *session) chatAction(c *chat, a map[string]any, origin *messages.Origin, raw json.RawMessage) {
	messages.ReduceChat(c.state, a)
	c.state["modifiedAt"] = isoTime(time.Now())
	if raw == nil {
		raw, _ = json.Marshal(a)
	}
	frame := s.journal.Stamp(&messages.Envelope{Channel: c.uri, Action: raw, Origin: origin})
	for sub := range c.subs {
		sub.Deliver(c.uri, frame)
	}
}

func (s *session) subscribe(ctx actor.Context, m *channel.Subscribe) {
	if m.Channel == s.uri {
		s.subs[m.Sub] = true
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: s.uri, State: cloneJSON(s.state), FromSeq: s.journal.Current()}})
		return
	}
	if c := s.chats[m.Channel]; c != nil {
		c.subs[m.Sub] = true
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: c.uri, State: cloneJSON(c.state), FromSeq: s.journal.Current()}})
		return
	}
	// A terminal a tool call of one of our chats names: rebuilt from what was kept.
	if chatURI, key, ok := ParseCommandTerminalURI(m.Channel); ok {
		ctx.Respond(s.retained(chatURI, key, m.Channel))
		return
	}
	ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", m.Channel)})
}

// cloneJSON deep-copies a decoded JSON value so a snapshot is not changed by later
// actions while it is encoded.
func cloneJSON(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// retained answers a subscribe to a command terminal no live terminal holds: an
// exited state in the five fields the seed names, from the newest call in the chat
// that names it and what the host kept.
func (s *session) retained(chatURI, key, uri string) *channel.SubscribeResult {
	notFound := &channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No terminal %s on this host", uri)}
	c := s.chats[chatURI]
	if c == nil {
		return notFound
	}
	block := findTerminalBlock(c.state, key, uri)
	if block == nil {
		return notFound
	}
	kept, err := s.store.LoadTerminal(s.uri, chatURI, key)
	if err != nil && !errorsIsNotFound(err) {
		s.cfg.Logger.Warn("a kept terminal could not be read; refusing it", "terminal", uri, "err", err)
		return notFound
	}
	title, _ := block["title"].(string)
	isPty, _ := block["isPty"].(bool)
	var exit *int
	output := kept.Output
	if res, ok := block["result"].(map[string]any); ok {
		if code, ok := res["exitCode"].(float64); ok {
			exit = messages.Ptr(int(code))
		}
		if err != nil {
			preview, _ := res["preview"].(string)
			if truncated, _ := res["truncated"].(bool); truncated {
				// A cut preview with nothing kept to show the rest is refused.
				return notFound
			}
			output = preview
		}
	}
	if exit == nil && err == nil {
		exit = kept.ExitCode
	}
	if err == nil {
		isPty = kept.IsPty
	}
	st := messages.TerminalState{
		Title:     title,
		Content:   []messages.ContentPart{},
		Claim:     messages.Claim{Kind: messages.ClaimSession, Session: s.uri, Chat: chatURI, ToolCallID: key},
		Lifecycle: &messages.Lifecycle{Status: messages.StatusExited, ExitCode: exit},
		ExitCode:  exit,
		IsPty:     messages.Ptr(isPty),
	}
	if output != "" {
		st.Content = append(st.Content, messages.ContentPart{Type: messages.PartUnclassified, Value: output})
	}
	return &channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: uri, State: st, FromSeq: s.journal.Current()}}
}

// findTerminalBlock finds the terminal block of the newest tool call with id key in
// the chat's turns (and active turn) that names uri.
func findTerminalBlock(state map[string]any, key, uri string) map[string]any {
	var turns []any
	if ts, ok := state["turns"].([]any); ok {
		turns = append(turns, ts...)
	}
	if at, ok := state["activeTurn"].(map[string]any); ok {
		turns = append(turns, at)
	}
	var found map[string]any
	for _, t := range turns {
		turn, _ := t.(map[string]any)
		parts, _ := turn["responseParts"].([]any)
		for _, p := range parts {
			part, _ := p.(map[string]any)
			tc, _ := part["toolCall"].(map[string]any)
			if tc == nil || tc["toolCallId"] != key {
				continue
			}
			content, _ := tc["content"].([]any)
			for _, b := range content {
				block, _ := b.(map[string]any)
				if block["type"] == "terminal" && block["resource"] == uri {
					found = block
				}
			}
		}
	}
	return found
}

func errorsIsNotFound(err error) bool { return errors.Is(err, persistence.ErrNotFound) }

func (s *session) dispatch(ctx actor.Context, m *channel.Dispatch) {
	c := s.chats[m.Channel]
	origin := m.Origin
	if c == nil {
		// Session channel actions from clients: only a rename is taken.
		if m.Channel == s.uri {
			s.rejectTo(m, fmt.Sprintf("%s is not dispatched by clients on this host", m.Action.Type))
		}
		return
	}
	var a map[string]any
	if err := json.Unmarshal(m.Raw, &a); err != nil {
		s.rejectTo(m, "the action is malformed")
		return
	}
	switch m.Action.Type {
	case "chat/turnStarted":
		turnID, _ := a["turnId"].(string)
		msg, _ := a["message"].(map[string]any)
		text, _ := msg["text"].(string)
		if turnID == "" || msg == nil {
			s.rejectTo(m, "chat/turnStarted needs a turnId and a message")
			return
		}
		if _, ok := a["startedAt"]; !ok {
			a["startedAt"] = isoTime(time.Now())
		}
		s.chatAction(c, a, &origin, m.Raw)
		s.startTurn(ctx, c, turnID, text)
	case "chat/pendingMessageSet":
		s.chatAction(c, a, &origin, m.Raw)
		if kind, _ := a["kind"].(string); kind == "queued" && c.busy == "" {
			s.drainQueue(ctx, c)
		}
	case "chat/pendingMessageRemoved", "chat/queuedMessagesReordered":
		s.chatAction(c, a, &origin, m.Raw)
	case "chat/turnCancelled":
		turnID, _ := a["turnId"].(string)
		at, _ := c.state["activeTurn"].(map[string]any)
		if at == nil || at["id"] != turnID {
			s.rejectTo(m, "no turn with that id is running")
			return
		}
		s.chatAction(c, a, &origin, m.Raw)
		c.busy = ""
		s.drainQueue(ctx, c)
	default:
		if strings.HasPrefix(m.Action.Type, "terminal/") {
			s.rejectTo(m, fmt.Sprintf("%s is not a terminal here", m.Channel))
			return
		}
		s.rejectTo(m, fmt.Sprintf("%s is not dispatched by clients on this host", m.Action.Type))
	}
}

func (s *session) rejectTo(m *channel.Dispatch, reason string) {
	s.journal.Reject(m.Sub, m.Channel, m.Raw, m.Origin, reason)
}

// commandOf is the shell command a turn's text asks for: text after a leading `!`.
// A lone `!`, or one followed only by spaces, is somebody typing an exclamation point.
func commandOf(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "!")
	if !ok {
		return "", false
	}
	cmd := strings.TrimSpace(rest)
	return cmd, cmd != ""
}

func (s *session) startTurn(ctx actor.Context, c *chat, turnID, text string) {
	c.busy = turnID
	command, isCommand := commandOf(text)
	if !isCommand {
		// This host runs no language model: the turn ends with a clear error.
		errInfo := map[string]any{"errorType": "noAgent", "message": noAgent}
		s.chatAction(c, map[string]any{"type": "chat/error", "turnId": turnID, "duration": 0,
			"part": map[string]any{"kind": "error", "error": errInfo}, "error": errInfo}, nil, nil)
		c.lastTurn = turnID
		c.busy = ""
		s.drainQueue(ctx, c)
		return
	}
	s.runCommand(ctx, c, turnID, text, command)
}

// drainQueue starts the first queued message once the chat is idle.
func (s *session) drainQueue(ctx actor.Context, c *chat) {
	if c.busy != "" {
		return
	}
	queued, _ := c.state["queuedMessages"].([]any)
	if len(queued) == 0 {
		return
	}
	first, _ := queued[0].(map[string]any)
	id, _ := first["id"].(string)
	msg, _ := first["message"].(map[string]any)
	s.chatAction(c, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "queued", "id": id}, nil, nil)
	s.seq++
	turnID := fmt.Sprintf("turn-%d-%d", time.Now().UnixNano(), s.seq)
	text, _ := msg["text"].(string)
	s.chatAction(c, map[string]any{"type": "chat/turnStarted", "turnId": turnID, "startedAt": isoTime(time.Now()), "message": msg, "queuedMessageId": id}, nil, nil)
	s.startTurn(ctx, c, turnID, text)
}

func (s *session) runCommand(ctx actor.Context, c *chat, turnID, text, command string) {
	s.seq++
	toolCallID := fmt.Sprintf("cmd-%d-%d", time.Now().UnixNano(), s.seq)
	r := &commandRun{chat: c, turnID: turnID, toolCallID: toolCallID, command: command, text: text, started: time.Now(),
		terminal: commandTerminalURI(c.uri, toolCallID), sentinel: strconv.FormatInt(time.Now().UnixNano(), 36), stopAlt: make(chan struct{})}
	c.runs[toolCallID] = r
	s.chatAction(c, map[string]any{"type": "chat/toolCallStart", "turnId": turnID, "toolCallId": toolCallID,
		"toolName": "terminal", "displayName": "Terminal", "intention": command}, nil, nil)
	s.chatAction(c, map[string]any{"type": "chat/toolCallReady", "turnId": turnID, "toolCallId": toolCallID,
		"invocationMessage": command, "toolInput": command, "intention": command, "confirmed": "not-needed"}, nil, nil)
	if s.closed {
		s.finish(ctx, r, endFailed, false, fmt.Errorf("%s", ClosingHost))
		return
	}
	cwd := ""
	if len(s.record.WorkingDirectories) > 0 {
		cwd = s.record.WorkingDirectories[0]
	}
	shell := s.cfg.DefaultShell
	if shell == "" {
		shell = pty.DefaultShell()
	}
	create := &terminal.Create{
		URI:     r.terminal,
		Claim:   messages.Claim{Kind: messages.ClaimSession, Session: s.uri, Chat: c.uri, TurnID: turnID, ToolCallID: toolCallID},
		Name:    "Terminal",
		Cwd:     cwd,
		Spec:    terminal.Spec{Shell: shell, PreventShellHistory: true, NonInteractive: true, StrictCwd: true},
		Watcher: ctx.Self(),
	}
	f := ctx.RequestFuture(s.root, create, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		cr, _ := res.(*terminal.CreateResult)
		s.opened(ctx, &runOpened{toolCallID: toolCallID, res: cr, err: err})
	})
}

// opened types the command once its terminal is listed.
func (s *session) opened(ctx actor.Context, m *runOpened) {
	r := s.findRun(m.toolCallID)
	if r == nil {
		return
	}
	if m.err != nil || m.res == nil || m.res.Err != nil {
		reason := "the terminal did not start"
		if m.res != nil && m.res.Err != nil {
			reason = m.res.Err.Message
		} else if m.err != nil {
			reason = m.err.Error()
		}
		s.finish(ctx, r, endFailed, false, fmt.Errorf("%s", reason))
		return
	}
	r.isPty = m.res.IsPty
	r.marks = m.res.Detection
	s.chatAction(r.chat, map[string]any{"type": "chat/toolCallContentChanged", "turnId": r.turnID, "toolCallId": r.toolCallID,
		"content": []any{map[string]any{"type": "terminal", "resource": r.terminal, "title": "Terminal", "isPty": r.isPty}}}, nil, nil)
	// A leading space keeps the command out of a POSIX shell's history.
	line := " " + r.command
	if !r.marks {
		line += fmt.Sprintf("\necho \"<<<%s%s_EXIT_$?>>>\"", sentinelPrefix, r.sentinel)
	}
	r.typed = true
	ctx.Send(s.root, &terminal.Write{URI: r.terminal, Data: line + "\r"})
	self, system := ctx.Self(), ctx.ActorSystem()
	timeout := s.cfg.CommandTimeout
	r.timer = time.AfterFunc(timeout, func() { system.Root.Send(self, &runTimedOut{toolCallID: r.toolCallID}) })
	if r.isPty {
		fq := system.Root.RequestFuture(s.root, &terminal.ScreenQuery{URI: r.terminal}, channel.RequestTimeout)
		go func() {
			res, err := fq.Result()
			info, _ := res.(*terminal.ScreenInfo)
			if err != nil || info == nil || !info.IsPty {
				return
			}
			select {
			case <-info.WhenAltBuffer:
				system.Root.Send(self, &runAltScreen{toolCallID: r.toolCallID})
			case <-r.stopAlt:
			}
		}()
	}
}

// terminalEvent reads a command's terminal as a client reads it.
func (s *session) terminalEvent(ctx actor.Context, m *terminal.Event) {
	chatURI, key, ok := ParseCommandTerminalURI(m.URI)
	if !ok {
		return
	}
	c := s.chats[chatURI]
	if c == nil {
		return
	}
	r := c.runs[key]
	if r == nil || r.done {
		return
	}
	a := m.Action
	switch a.Type {
	case messages.TerminalData:
		if !r.typed || a.Data == nil {
			return
		}
		r.output.WriteString(*a.Data)
		if !r.marks {
			if code, ok := sentinelCode(r.output.String(), r.sentinel); ok {
				s.endWithCode(ctx, r, code)
			}
		}
	case messages.TerminalCommandExecuted:
		if r.marks && r.typed && r.commandID == "" {
			r.commandID = a.CommandID
			r.output.Reset()
		}
	case messages.TerminalCommandFinished:
		if r.marks && r.commandID != "" && a.CommandID == r.commandID {
			code := 0
			if a.ExitCode != nil {
				code = *a.ExitCode
			}
			s.endWithCode(ctx, r, code)
		}
	case messages.TerminalExited:
		s.finish(ctx, r, endShellExited, false, nil)
	case messages.TerminalClaimed:
		if a.Claim != nil && a.Claim.Kind == messages.ClaimSession && a.Claim.Session == s.uri && a.Claim.ToolCallID == "" {
			s.finish(ctx, r, endBackground, true, nil)
		}
	}
}

var sentinelLine = regexp.MustCompile(`<<<` + sentinelPrefix + `([0-9a-z]+)_EXIT_(\d+)>>>`)

func sentinelCode(out, id string) (int, bool) {
	for _, m := range sentinelLine.FindAllStringSubmatch(out, -1) {
		if m[1] == id {
			code, err := strconv.Atoi(m[2])
			return code, err == nil
		}
	}
	return 0, false
}

func (s *session) endWithCode(ctx actor.Context, r *commandRun, code int) {
	if code == 0 {
		s.finish(ctx, r, endRan, true, nil, code)
		return
	}
	s.finish(ctx, r, fmt.Sprintf("Command exited with code %d", code), false, nil, code)
}

// printed is the command's text without escape sequences or the sentinel's lines.
func (r *commandRun) printed() string {
	text := stripEscapes(r.output.String())
	if r.marks {
		return text
	}
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, sentinelPrefix+r.sentinel) {
			continue
		}
		keep = append(keep, line)
	}
	out := strings.Join(keep, "\n")
	// Under a pseudoterminal the shell echoes the typed line first.
	out = strings.TrimPrefix(out, " "+r.command+"\n")
	return out
}

// finish completes a command's tool call and its turn, however it ended.
func (s *session) finish(ctx actor.Context, r *commandRun, how string, success bool, failure error, code ...int) {
	if r.done {
		return
	}
	r.done = true
	if r.timer != nil {
		r.timer.Stop()
	}
	close(r.stopAlt)
	c := r.chat
	text, truncated := lastChars(r.printed(), previewLimit)
	block := map[string]any{"type": "terminal", "resource": r.terminal, "title": "Terminal", "isPty": r.isPty}
	result := map[string]any{"success": success, "pastTenseMessage": how}
	if failure != nil {
		result["pastTenseMessage"] = endFailed
		result["error"] = map[string]any{"message": failure.Error()}
		result["success"] = false
	} else {
		cmdResult := map[string]any{"preview": text, "truncated": truncated}
		if len(code) > 0 {
			cmdResult["exitCode"] = code[0]
		}
		block["result"] = cmdResult
		if how == endTimedOut || how == endShellExited {
			result["error"] = map[string]any{"message": how}
		}
	}
	if r.typed || failure == nil {
		result["content"] = []any{block}
	}
	s.chatAction(c, map[string]any{"type": "chat/toolCallComplete", "turnId": r.turnID, "toolCallId": r.toolCallID, "result": result}, nil, nil)
	duration := time.Since(r.started).Milliseconds()
	s.chatAction(c, map[string]any{"type": "chat/turnComplete", "turnId": r.turnID, "duration": duration}, nil, nil)
	anchor := c.lastTurn
	c.lastTurn = r.turnID
	if c.busy == r.turnID {
		c.busy = ""
	}
	s.keep(ctx, r, anchor, result, code)
	s.drainQueue(ctx, c)
}

// keep records a finished command off the mailbox: what its terminal printed, the
// session's dates and title, and its turn as a local turn of its chat, in that order
// (persistence.KeepTurn), so a host killed at any moment never leaves a turn naming
// output that was never written. The writes of one session go one after another, in
// the order the commands finished, so no turn lands before the turn it is anchored to.
func (s *session) keep(ctx actor.Context, r *commandRun, anchor string, result map[string]any, code []int) {
	raw, _ := json.Marshal(result)
	turn := persistence.LocalTurn{ID: r.turnID, AnchorTurnID: anchor, Text: r.text, StartedAt: r.started, EndedAt: time.Now(),
		ToolCallID: r.toolCallID, TerminalURI: r.terminal, TerminalKey: r.toolCallID, Result: raw, State: persistence.TurnComplete}
	if s.record.FirstStart.IsZero() {
		s.record.FirstStart = r.started
		if !s.record.Renamed && s.record.Title == "" {
			s.record.Title = persistence.TitleFromCommand(r.command)
			s.sessionAction(map[string]any{"type": "session/titleChanged", "title": s.record.Title})
		}
	}
	s.record.LastEnd = turn.EndedAt
	rec := s.record

	// The terminal's scrollback is what is kept of it; should the terminal not answer
	// (it is gone, or the host is closing), what the run read of it is kept instead,
	// so the turn's terminal still opens with the command's whole output.
	var snapshot *actor.Future
	var printed string
	var exit *int
	if r.typed {
		snapshot = ctx.RequestFuture(s.root, &terminal.SnapshotQuery{URI: r.terminal}, channel.RequestTimeout)
		printed = r.printed()
		if len(code) > 0 {
			exit = messages.Ptr(code[0])
		}
	}
	store, logger, sessionURI, chatURI := s.store, s.cfg.Logger, s.uri, r.chat.uri
	uri, isPty := r.terminal, r.isPty
	before, done := s.lastWrite, make(chan struct{})
	s.lastWrite = done
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer close(done)
		f := persistence.FinishedTurn{Record: &rec, Turn: turn}
		if snapshot != nil {
			output := printed
			if res, err := snapshot.Result(); err == nil {
				if st, _ := res.(*messages.TerminalState); st != nil {
					output = st.Text()
				}
			}
			f.Terminal = &persistence.RetainedTerminal{URI: uri, Title: "Terminal", Output: output, ExitCode: exit, IsPty: isPty,
				Session: sessionURI, Chat: chatURI, ToolCallID: turn.ToolCallID, Saved: time.Now()}
		}
		if before != nil {
			<-before
		}
		if err := store.KeepTurn(sessionURI, chatURI, f); err != nil {
			logger.Warn("a command's turn was not wholly kept", "session", sessionURI, "terminal", uri, "err", err)
		}
	}()
}

// restore rebuilds the chats and their local turns from the store after a restart.
func (s *session) restore() {
	for _, chatURI := range s.record.Chats {
		c := &chat{uri: chatURI, subs: map[delivery.Subscriber]bool{}, runs: map[string]*commandRun{}}
		c.state = map[string]any{"resource": chatURI, "title": "Chat", "status": 1, "modifiedAt": isoTime(s.record.LastEnd), "turns": []any{}}
		turns, err := s.store.Turns(s.uri, chatURI)
		if err != nil {
			s.cfg.Logger.Warn("a chat's kept turns could not be read", "chat", chatURI, "err", err)
		}
		_, kept := persistence.MergeTurns(nil, turns)
		var list []any
		for _, t := range kept {
			var result map[string]any
			_ = json.Unmarshal(t.Result, &result)
			cmd, _ := commandOf(t.Text)
			toolCall := map[string]any{"status": "completed", "toolCallId": t.ToolCallID, "toolName": "terminal", "displayName": "Terminal",
				"intention": cmd, "invocationMessage": cmd, "toolInput": cmd, "confirmed": "not-needed"}
			for k, v := range result {
				toolCall[k] = v
			}
			list = append(list, map[string]any{"id": t.ID, "startedAt": isoTime(t.StartedAt), "duration": t.EndedAt.Sub(t.StartedAt).Milliseconds(),
				"message":       map[string]any{"text": t.Text, "origin": map[string]any{"kind": "user"}},
				"responseParts": []any{map[string]any{"kind": "toolCall", "toolCall": toolCall}}, "state": t.State})
			c.lastTurn = t.ID
		}
		if list != nil {
			c.state["turns"] = list
		}
		s.chats[chatURI] = c
		s.order = append(s.order, chatURI)
		s.state["chats"] = append(s.state["chats"].([]any), map[string]any{"resource": chatURI, "title": "Chat", "status": 1, "modifiedAt": isoTime(s.record.LastEnd)})
		if _, ok := s.state["defaultChat"]; !ok {
			s.state["defaultChat"] = chatURI
		}
	}
}

// dispose ends and unlists the session's terminals.
func (s *session) dispose(ctx actor.Context) {
	for _, c := range s.chats {
		s.disposeChat(ctx, c)
	}
}

// afterWrites runs then once every write on its way has landed, off the mailbox, and
// then answers the request being handled with an empty Result.
func (s *session) afterWrites(ctx actor.Context, then func()) {
	sender, system, writes := ctx.Sender(), ctx.ActorSystem(), s.writes
	go func() {
		writes.Wait()
		then()
		if sender != nil {
			system.Root.Send(sender, &Result{})
		}
	}()
}

// disposeChat ends and unlists the terminals of a chat's commands.
func (s *session) disposeChat(ctx actor.Context, c *chat) {
	for _, r := range c.runs {
		if !r.done {
			r.done = true
			if r.timer != nil {
				r.timer.Stop()
			}
			close(r.stopAlt)
		}
		ctx.Send(s.root, &terminal.Dispose{URI: r.terminal})
	}
}
