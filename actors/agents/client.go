package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	acp "github.com/coder/acp-go-sdk"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/messages"
)

// client is the host's side of ACP (acp.Client) for one runner, across the runs of
// its process. The SDK calls it on goroutines of its own (and demux calls
// sessionUpdate on the reader's), so it never touches the runner's state: it sends
// the session what it has to say, and keeps what it must remember under mu.
type client struct {
	system *actor.ActorSystem
	parent *actor.PID // the session
	spec   agentmsg.Spec
	log    *slog.Logger
	// cwd is the first working directory, an absolute path; roots are the
	// working directories with their symlinks resolved: where files may be read
	// and written.
	cwd   string
	roots []string
	// life ends when the runner stops; wg counts the goroutines the client starts.
	life context.Context
	wg   *sync.WaitGroup

	mu sync.Mutex // guards the fields below, and orders what is sent to the session
	// closed: the runner is stopping; nothing new starts.
	closed bool
	// turn is the turn the agent is taking, nil between turns; lastChat the chat of
	// the latest turn (where a terminal opened between turns is listed).
	turn     *turnState
	lastChat string
	lastTurn string
	terms    map[string]*agentTerminal
	termSeq  int
}

// turnState is what the client knows of the running turn: the parts it streamed and
// the tool calls it announced.
type turnState struct {
	chat, id string
	// cancelled is closed when the turn is cancelled or ends: a permission still
	// waiting is answered cancelled.
	cancelled chan struct{}
	ended     bool

	parts int // numbers the turn's parts
	// last is the id of the part appended last, and lastKind its kind ("toolCall"
	// for a tool call): a chunk continues it when it is of the same kind (and the
	// same message, when the agent names its messages).
	last, lastKind, lastMessage string
	plan                        string // the plan shown last, as markdown

	calls    map[string]*toolCall
	lastCall string // the tool call announced last
}

// toolCall is a tool call of the turn as the chat has it.
type toolCall struct {
	title   string
	content []any
	// terminal: a terminal is open for it (a second gets no tool call of its own,
	// as the terminal's URI is named after the call).
	terminal bool
	done     bool
}

func newClient(system *actor.ActorSystem, parent *actor.PID, spec agentmsg.Spec, cwd string, roots []string, life context.Context, wg *sync.WaitGroup, log *slog.Logger) *client {
	return &client{system: system, parent: parent, spec: spec, cwd: cwd, roots: roots, life: life, wg: wg, log: log, terms: map[string]*agentTerminal{}}
}

var _ acp.Client = (*client)(nil)

// beginTurn makes the chat's turn the one what the agent streams belongs to.
func (c *client) beginTurn(chat, turnID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.turn != nil {
		c.turn.end()
	}
	c.turn = &turnState{chat: chat, id: turnID, cancelled: make(chan struct{}), calls: map[string]*toolCall{}}
	c.lastChat, c.lastTurn = chat, turnID
}

// endTurn ends the turn, if it is still the running one: what the agent sends for
// it afterwards is dropped, and a permission still waiting is answered cancelled.
func (c *client) endTurn(chat, turnID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.turn; t != nil && t.chat == chat && t.id == turnID {
		t.end()
		c.turn = nil
	}
}

// cancelTurn answers the turn's waiting permissions cancelled (ACP: a client that
// cancels a turn answers every pending session/request_permission so).
func (c *client) cancelTurn(chat, turnID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.turn; t != nil && t.chat == chat && t.id == turnID {
		t.end()
	}
}

func (t *turnState) end() {
	if !t.ended {
		t.ended = true
		close(t.cancelled)
	}
}

// close refuses anything new: the runner is stopping.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.turn != nil {
		c.turn.end()
		c.turn = nil
	}
}

// sendLocked sends the session a turn's actions; c.mu is held, so that actions and
// permissions sent from different goroutines reach the session in the order the
// client made them.
func (c *client) sendLocked(t *turnState, actions []any) {
	if len(actions) > 0 {
		c.system.Root.Send(c.parent, &agentmsg.Actions{Chat: t.chat, TurnID: t.id, Actions: actions})
	}
}

// SessionUpdate is not reached: demux hands updates to sessionUpdate before the SDK
// sees them. It is here for the interface, and does the same.
func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.sessionUpdate(n)
	return nil
}

// sessionUpdate turns one update of the agent into chat actions of the running turn.
func (c *client) sessionUpdate(n acp.SessionNotification) {
	u := n.Update
	// A tool call that finishes names its terminals with how their commands ended;
	// what they printed is read before the lock is taken (it is a request to the
	// root).
	var results map[string]*messages.TerminalCommandResult
	switch {
	case u.ToolCall != nil && finished(u.ToolCall.Status):
		results = c.terminalResults(u.ToolCall.Content)
	case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil && finished(*u.ToolCallUpdate.Status):
		results = c.terminalResults(u.ToolCallUpdate.Content)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turn
	if t == nil {
		c.log.Debug("an agent's update outside a turn is dropped", "update", updateKind(u))
		return
	}
	var actions []any
	switch {
	case u.AgentMessageChunk != nil:
		actions = t.chunk(partMarkdown, u.AgentMessageChunk.Content, u.AgentMessageChunk.MessageId)
	case u.AgentThoughtChunk != nil:
		actions = t.chunk(partReasoning, u.AgentThoughtChunk.Content, u.AgentThoughtChunk.MessageId)
	case u.Plan != nil:
		actions = t.showPlan(u.Plan.Entries)
	case u.ToolCall != nil:
		tc := u.ToolCall
		status := tc.Status
		actions = t.update(string(tc.ToolCallId), &tc.Title, tc.Kind, tc.RawInput, &status, c.contentLocked(tc.Content, results), tc.Content != nil)
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		kind := acp.ToolKind("")
		if tc.Kind != nil {
			kind = *tc.Kind
		}
		actions = t.update(string(tc.ToolCallId), tc.Title, kind, tc.RawInput, tc.Status, c.contentLocked(tc.Content, results), tc.Content != nil)
	default:
		c.log.Debug("an agent's update with no chat action is ignored", "update", updateKind(u))
	}
	c.sendLocked(t, actions)
}

func finished(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed
}

// newPart numbers a new part of the turn and makes it the last.
func (t *turnState) newPart(kind, message string) string {
	t.parts++
	t.last = fmt.Sprintf("%s-%s-%d", t.id, kind, t.parts)
	t.lastKind, t.lastMessage = kind, message
	return t.last
}

// chunk streams a message's or a thought's chunk: the first chunk of a message is a
// new part (chat/responsePart), the next are appended to it (chat/delta,
// chat/reasoning), until something else is appended to the turn.
func (t *turnState) chunk(kind string, block acp.ContentBlock, messageID *string) []any {
	text := blockText(block)
	if text == "" {
		return nil
	}
	message := ""
	if messageID != nil {
		message = *messageID
	}
	if t.lastKind != kind || t.lastMessage != message {
		id := t.newPart(kind, message)
		return []any{responsePartAction{TurnID: t.id, Part: textPart{Kind: kind, ID: id, Content: text}}}
	}
	if kind == partReasoning {
		return []any{reasoningAction{TurnID: t.id, PartID: t.last, Content: text}}
	}
	return []any{deltaAction{TurnID: t.id, PartID: t.last, Content: text}}
}

// showPlan shows the agent's plan as a markdown part, a new one each time it
// changes: the chat's parts can only be appended to (no action replaces one), and
// ACP sends the whole plan each time.
func (t *turnState) showPlan(entries []acp.PlanEntry) []any {
	var b strings.Builder
	b.WriteString("**Plan**\n")
	for _, e := range entries {
		mark := " "
		switch e.Status {
		case acp.PlanEntryStatusCompleted:
			mark = "x"
		case acp.PlanEntryStatusInProgress:
			mark = "~"
		}
		fmt.Fprintf(&b, "- [%s] %s\n", mark, e.Content)
	}
	if b.String() == t.plan {
		return nil
	}
	t.plan = b.String()
	id := t.newPart(partMarkdown, "plan")
	return []any{responsePartAction{TurnID: t.id, Part: textPart{Kind: partMarkdown, ID: id, Content: t.plan}}}
}

// update applies a tool_call or tool_call_update: a call the chat has not seen
// starts (chat/toolCallStart, then chat/toolCallReady confirmed not-needed: ACP's
// client is asked separately, with session/request_permission, when the agent
// wants a person to allow it); content replaces the running call's
// (chat/toolCallContentChanged); completed or failed finishes it
// (chat/toolCallComplete). hasContent says the update carried content, which may be
// empty.
func (t *turnState) update(id string, title *string, kind acp.ToolKind, rawInput any, status *acp.ToolCallStatus, content []any, hasContent bool) []any {
	var actions []any
	tc := t.calls[id]
	if tc == nil {
		name := ""
		if title != nil {
			name = *title
		}
		tc, actions = t.start(id, name, kind, rawInput)
	} else if title != nil && *title != "" {
		tc.title = *title
	}
	if tc.done {
		return actions
	}
	if hasContent {
		tc.content = content
	}
	if status != nil && finished(*status) {
		tc.done = true
		return append(actions, complete(t.id, id, tc, *status == acp.ToolCallStatusCompleted))
	}
	if hasContent {
		actions = append(actions, contentChanged(t.id, id, tc.content))
	}
	return actions
}

// start announces a tool call.
func (t *turnState) start(id, title string, kind acp.ToolKind, rawInput any) (*toolCall, []any) {
	name := string(kind)
	if name == "" {
		name = string(acp.ToolKindOther)
	}
	if title == "" {
		title = name
	}
	tc := &toolCall{title: title}
	t.calls[id] = tc
	t.lastCall = id
	t.last, t.lastKind, t.lastMessage = id, "toolCall", ""
	return tc, []any{
		messages.ChatToolCallStartAction{TurnID: t.id, ToolCallID: id, ToolName: name, DisplayName: title},
		messages.ChatToolCallReadyAction{TurnID: t.id, ToolCallID: id, InvocationMessage: title, ToolInput: toolInput(rawInput), Confirmed: messages.ConfirmedNotNeeded},
	}
}

// maxToolInput caps the tool input a call shows (a file's whole text, say): the
// chat keeps it in every snapshot.
const maxToolInput = 10_000

func toolInput(raw any) string {
	if raw == nil {
		return ""
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ""
	}
	if s, ok := raw.(string); ok {
		b = []byte(s)
	}
	if len(b) > maxToolInput {
		return string(truncateUTF8(b, maxToolInput)) + "…"
	}
	return string(b)
}

// terminalOnly is content that is only terminal blocks, as package messages' typed
// tool-call actions carry it.
func terminalOnly(content []any) ([]messages.TerminalContent, bool) {
	out := make([]messages.TerminalContent, 0, len(content))
	for _, c := range content {
		tc, ok := c.(messages.TerminalContent)
		if !ok {
			return nil, false
		}
		out = append(out, tc)
	}
	return out, true
}

func contentChanged(turnID, id string, content []any) any {
	if content == nil {
		content = []any{}
	}
	if terms, ok := terminalOnly(content); ok {
		return messages.ChatToolCallContentChangedAction{TurnID: turnID, ToolCallID: id, Content: terms}
	}
	return toolCallContentChangedAction{TurnID: turnID, ToolCallID: id, Content: content}
}

func complete(turnID, id string, tc *toolCall, success bool) any {
	var failure *messages.ToolCallError
	if !success {
		failure = &messages.ToolCallError{Message: tc.title + " failed"}
	}
	if terms, ok := terminalOnly(tc.content); ok {
		if len(terms) == 0 {
			terms = nil
		}
		return messages.ChatToolCallCompleteAction{TurnID: turnID, ToolCallID: id,
			Result: messages.ToolCallResult{Success: success, PastTenseMessage: tc.title, Content: terms, Error: failure}}
	}
	return toolCallCompleteAction{TurnID: turnID, ToolCallID: id,
		Result: toolCallResult{Success: success, PastTenseMessage: tc.title, Content: tc.content, Error: failure}}
}

// contentLocked turns a tool call's ACP content into tool result blocks: text as
// text, a diff as text, a terminal as the host terminal's block (with how its
// command ended, from results). c.mu is held.
func (c *client) contentLocked(content []acp.ToolCallContent, results map[string]*messages.TerminalCommandResult) []any {
	if content == nil {
		return nil
	}
	out := make([]any, 0, len(content))
	for _, tc := range content {
		switch {
		case tc.Content != nil:
			if text := blockText(tc.Content.Content); text != "" {
				out = append(out, textContent{Text: text})
			}
		case tc.Diff != nil:
			out = append(out, textContent{Text: diffText(tc.Diff)})
		case tc.Terminal != nil:
			at := c.terms[tc.Terminal.TerminalId]
			if at == nil {
				out = append(out, textContent{Text: "terminal " + tc.Terminal.TerminalId + " (not one this host opened)"})
				continue
			}
			out = append(out, messages.TerminalContent{Resource: at.bt.URI, Title: at.title, IsPty: at.bt.IsPty(), Result: results[tc.Terminal.TerminalId]})
		}
	}
	return out
}

// blockText is a content block as markdown text: text as it is, a link to a
// resource, a placeholder for what a chat cannot show.
func blockText(b acp.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri)
	case b.Resource != nil:
		if r := b.Resource.Resource.TextResourceContents; r != nil {
			return r.Text
		}
		return "[resource]"
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	}
	return ""
}

// diffText shows a diff as a unified-diff-like text: the old lines taken out, the
// new put in (no hunks: ACP sends whole texts).
func diffText(d *acp.ToolCallContentDiff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", d.Path, d.Path)
	if d.OldText != nil && *d.OldText != "" {
		for line := range strings.Lines(*d.OldText) {
			b.WriteString("-" + strings.TrimSuffix(line, "\n") + "\n")
		}
	}
	for line := range strings.Lines(d.NewText) {
		b.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
	}
	return b.String()
}

func updateKind(u acp.SessionUpdate) string {
	b, _ := json.Marshal(u)
	var head struct {
		Kind string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(b, &head)
	return head.Kind
}

// RequestPermission asks the people in the chat (agentmsg.Permission) and waits
// for their answer, the turn's cancellation or the agent's.
func (c *client) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	cancelled := acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	id := string(p.ToolCall.ToolCallId)
	reply := make(chan string, 1)

	c.mu.Lock()
	t := c.turn
	if t == nil || c.closed {
		c.mu.Unlock()
		c.log.Debug("a permission asked outside a turn is answered cancelled", "toolCall", id)
		return cancelled, nil
	}
	kind := acp.ToolKind("")
	if p.ToolCall.Kind != nil {
		kind = *p.ToolCall.Kind
	}
	title := ""
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	// A call the agent did not announce first is announced now: the session shows
	// the call it asks about.
	if t.calls[id] == nil {
		_, started := t.start(id, title, kind, p.ToolCall.RawInput)
		c.sendLocked(t, started)
	}
	if title == "" {
		title = t.calls[id].title
	}
	options := make([]agentmsg.PermissionOption, len(p.Options))
	for i, o := range p.Options {
		options[i] = agentmsg.PermissionOption{ID: string(o.OptionId), Name: o.Name, Kind: string(o.Kind)}
	}
	c.system.Root.Send(c.parent, &agentmsg.Permission{Chat: t.chat, TurnID: t.id, ToolCallID: id, Title: title, Options: options, Reply: reply})
	turnCancelled := t.cancelled
	c.mu.Unlock()

	select {
	case option := <-reply:
		if option == "" {
			return cancelled, nil
		}
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(option))}, nil
	case <-turnCancelled:
		return cancelled, nil
	case <-ctx.Done():
		return cancelled, nil
	}
}
