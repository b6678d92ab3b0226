package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/backendterm"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session/commandcall"
	"github.com/termhost/termhost/actors/session/permission"
	"github.com/termhost/termhost/messages"
)

// The session's side of the agent behind it (agent.go has the contract).
//
// A session made with an agent spawns its runner as a child when it starts, and
// stops it, and waits for the writes it began as it stopped, before a disposal or a
// shutdown is answered, as it does its tool service. A turn that is not a `!` command
// - a person's message, or a wake from a monitor or a background command - goes to
// the agent through the chat's one turn gate: a chat runs one turn at a time, and
// messages queued meanwhile start in order once the agent has ended the turn. What
// the agent streams is applied to the chat as the runner typed it, in order, as long
// as its turn is the chat's active one; a question the agent asks is shown as a tool
// call awaiting confirmation, and answered once, by the first person with chat:send
// who confirms or refuses it, or with "" when its turn ends first.

// HostProvider is the provider of a session without an agent, as its state and
// summary name it: createSession may name it for such a session.
const HostProvider = provider

// CodeProviderNotFound answers a createSession naming an agent this host does not run
// (PROTOCOL.md 7, ProviderNotFound).
const CodeProviderNotFound = -32002

// What the chat says when its agent cannot take a turn, and of what befell it.
const (
	errorTypeAgent     = "agentError"
	errorTypeAgentGone = "agentGone"
	// AgentNoticeMeta is the _meta key of the host's message saying what befell
	// the agent: "restarted" or "lost".
	AgentNoticeMeta = "termhost.agent"
)

// agentChat is what a chat holds of the turns its agent takes.
type agentChat struct {
	// agentTurn is the turn the agent is taking: prompted, not yet ended by an
	// agentmsg.TurnEnded. It is the chat's active turn unless a `!` command took its
	// place, in which case the agent is asked to stop and the gate waits for it.
	agentTurn  string
	agentSince time.Time
	// permissions are the agent's questions waiting for somebody, by tool call id.
	permissions map[string]*question
	// cancelling is a cancel of the agent's turn waiting for the agent to end it.
	cancelling *cancelling
	// queuedBy is who queued each pending message, by its id: whose turn it is
	// when it starts.
	queuedBy map[string]string
	// notices are what the chat is to say of the agent once no turn runs.
	notices []notice
}

func (a *agentChat) init() {
	a.permissions = map[string]*question{}
	a.queuedBy = map[string]string{}
}

// question is one question of the agent's, shown as a tool call of its turn.
type question struct {
	turnID  string
	options []agentmsg.PermissionOption
	reply   chan<- string
}

// cancelling is a cancel of an agent's turn on its way to the agent: a client's
// chat/turnCancelled (dispatch, echoed once the turn ends) or, with none, the host's,
// for a turn a `!` command took the place of.
type cancelling struct {
	turnID   string
	dispatch *channel.Dispatch
	folded   map[string]any
	timer    *time.Timer
}

// agentCancelLapsed: the agent did not end a cancelled turn within
// Config.AgentCancelGrace.
type agentCancelLapsed struct{ chat, turnID string }

// notice is a message the chat shows of the agent: what befell it.
type notice struct{ text, kind string }

// hasAgent reports whether the session was made with an agent.
func (s *session) hasAgent() bool { return s.record.Agent != "" }

// provider names who answers the session's turns: its agent, else this host.
func (s *session) provider() string {
	if s.record.Agent != "" {
		return s.record.Agent
	}
	return provider
}

// startAgent spawns the session's agent runner (in started). A session whose agent
// this host no longer runs has none: its turns say so.
func (s *session) startAgent(ctx actor.Context) {
	if !s.restored {
		// A session with an agent is listed after a restart even before anything
		// else of it is kept: the agent holds its conversation.
		s.saveRecord()
	}
	name := s.record.Agent
	if s.cfg.Agent == nil || (len(s.cfg.Agents) > 0 && !slices.Contains(s.cfg.Agents, name)) {
		s.agentGone = "this host no longer runs it"
		return
	}
	spec := agentmsg.Spec{Session: s.uri, Agent: name, AgentSessionID: s.record.AgentSessionID,
		WorkingDirectories: append([]string(nil), s.record.WorkingDirectories...), Root: s.root,
		Terminals: backendterm.NewTerminals(ctx.ActorSystem(), s.root, s.store), Writes: s.writes}
	props := s.cfg.Agent(spec)
	if props == nil {
		s.agentGone = "this host no longer runs it"
		return
	}
	pid, err := ctx.SpawnNamed(props, "agent")
	if err != nil {
		pid = ctx.Spawn(props)
	}
	s.agent = pid
}

// stopAgent stops the agent runner, if there is one, and returns the future of its
// stop (nil when there is none).
func (s *session) stopAgent(ctx actor.Context) *actor.Future {
	s.answerPermissions(nil, "")
	if s.agent == nil {
		return nil
	}
	f := ctx.StopFuture(s.agent)
	s.agent = nil
	return f
}

// agentUnavailable is why the agent cannot take a turn now, or "".
func (s *session) agentUnavailable() string {
	switch {
	case s.closed:
		return ClosingHost
	case s.agentGone != "":
		return fmt.Sprintf("The agent %s is gone: %s. Start a new session to talk to it again.", s.record.Agent, s.agentGone)
	case s.agent == nil:
		return fmt.Sprintf("The agent %s is not running on this host.", s.record.Agent)
	}
	return ""
}

// promptAgent hands the turn that started with msg to the agent; by is whose turn it
// is, else the person a wake's _meta names.
func (s *session) promptAgent(ctx actor.Context, c *chat, turnID string, msg messages.Message, by string) {
	if reason := s.agentUnavailable(); reason != "" {
		s.chatAction(c, messages.ChatErrorAction{TurnID: turnID, Duration: 0, Error: messages.ErrorInfo{ErrorType: errorTypeAgentGone, Message: reason}})
		c.lastTurn = turnID
		c.busy = ""
		s.drainQueue(ctx, c)
		return
	}
	if by == "" {
		if meta, ok := msg["_meta"].(map[string]any); ok {
			by, _ = meta[WakeByMeta].(string)
		}
	}
	c.agentTurn, c.agentSince = turnID, time.Now()
	ctx.Send(s.agent, &agentmsg.Prompt{Chat: c.uri, TurnID: turnID, Text: msg.Text(), By: by})
}

// agentTakes reports whether the agent is the one to take a message: a session with
// an agent gives it every turn but a `!` command. A system notification is never a
// command, whatever its text.
func (s *session) agentTakes(msg messages.Message) bool {
	if !s.hasAgent() {
		return false
	}
	if msg.OriginKind() == messages.OriginSystemNotification {
		return true
	}
	_, isCommand := commandcall.Parse(msg.Text())
	return !isCommand
}

// agentActionTypes are what an agent's turn may do to its chat: stream content and
// show its tool calls. Turns start and end by the session alone.
var agentActionTypes = map[string]bool{
	messages.ChatResponsePart:           true,
	messages.ChatDelta:                  true,
	messages.ChatReasoning:              true,
	messages.ChatUsage:                  true,
	messages.ChatToolCallStart:          true,
	messages.ChatToolCallDelta:          true,
	messages.ChatToolCallReady:          true,
	messages.ChatToolCallContentChanged: true,
	messages.ChatToolCallComplete:       true,
}

// agentActions applies a running turn's actions to its chat, in order; those of a
// turn that is no longer the chat's active one are dropped.
func (s *session) agentActions(m *agentmsg.Actions) {
	c := s.chats[m.Chat]
	if c == nil || m.TurnID == "" || c.agentTurn != m.TurnID || c.state.ActiveTurnID() != m.TurnID {
		s.cfg.Logger.Debug("agent actions for a turn that is not running are dropped", "session", s.uri, "chat", m.Chat, "turn", m.TurnID, "actions", len(m.Actions))
		return
	}
	for _, a := range m.Actions {
		s.agentAction(c, m.TurnID, a)
	}
}

// agentAction applies one typed action (a messages.ChatAction, or anything else that
// encodes as a chat action) of the agent's turn.
func (s *session) agentAction(c *chat, turnID string, a any) {
	raw, err := json.Marshal(a)
	var fields map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &fields)
	}
	if err != nil || fields == nil {
		s.cfg.Logger.Error("an agent's action does not encode as an object", "session", s.uri, "type", fmt.Sprintf("%T", a), "err", err)
		return
	}
	typ, _ := fields["type"].(string)
	if !agentActionTypes[typ] {
		s.cfg.Logger.Warn("an agent's action of a type it may not send is dropped", "session", s.uri, "type", typ)
		return
	}
	if id, _ := fields["turnId"].(string); id != turnID {
		s.cfg.Logger.Warn("an agent's action naming another turn is dropped", "session", s.uri, "type", typ, "turn", id, "want", turnID)
		return
	}
	messages.ReduceChat(c.state, fields)
	s.publish(c, raw, nil)
}

// agentPermission shows the agent's question as its tool call awaiting confirmation,
// with the agent's choices as the call's options. A question of a turn that is not
// running is answered "" at once.
func (s *session) agentPermission(ctx actor.Context, m *agentmsg.Permission) {
	c := s.chats[m.Chat]
	if c == nil || m.ToolCallID == "" || c.agentTurn != m.TurnID || c.state.ActiveTurnID() != m.TurnID {
		answer(m.Reply, "")
		return
	}
	if old := c.permissions[m.ToolCallID]; old != nil {
		// Asked again about the same call: the newer question replaces it.
		delete(c.permissions, m.ToolCallID)
		answer(old.reply, "")
	}
	status, input := activeToolCall(c.state, m.ToolCallID)
	switch status {
	case "":
		s.chatAction(c, messages.ChatToolCallStartAction{TurnID: m.TurnID, ToolCallID: m.ToolCallID, ToolName: permission.ToolName,
			DisplayName: permission.DisplayName, Intention: m.Title})
	case "completed", "cancelled":
		s.cfg.Logger.Warn("an agent asked about a tool call that has ended; refused", "session", s.uri, "toolCall", m.ToolCallID, "status", status)
		answer(m.Reply, "")
		return
	}
	s.chatAction(c, permission.Ready{TurnID: m.TurnID, ToolCallID: m.ToolCallID, Title: m.Title, ToolInput: input, Options: m.Options})
	c.permissions[m.ToolCallID] = &question{turnID: m.TurnID, options: append([]agentmsg.PermissionOption(nil), m.Options...), reply: m.Reply}
}

// activeToolCall is the status and input of the active turn's tool call with that id
// ("" when it has none).
func activeToolCall(st messages.ChatState, toolCallID string) (status string, input any) {
	raw, err := json.Marshal(st["activeTurn"])
	if err != nil {
		return "", nil
	}
	var at struct {
		ResponseParts []struct {
			Kind     string `json:"kind"`
			ToolCall *struct {
				ToolCallID string `json:"toolCallId"`
				Status     string `json:"status"`
				ToolInput  any    `json:"toolInput"`
			} `json:"toolCall"`
		} `json:"responseParts"`
	}
	_ = json.Unmarshal(raw, &at)
	for _, p := range at.ResponseParts {
		if p.Kind == "toolCall" && p.ToolCall != nil && p.ToolCall.ToolCallID == toolCallID {
			return p.ToolCall.Status, p.ToolCall.ToolInput
		}
	}
	return "", nil
}

// confirmPermission takes a client's chat/toolCallConfirmed of an agent's question:
// the connection has checked its chat:send grant. It is echoed and answered on the
// question's Reply, once; a confirmation of a call nobody waits on is refused.
func (s *session) confirmPermission(c *chat, m *channel.Dispatch, folded map[string]any) {
	var a struct {
		TurnID           string `json:"turnId"`
		ToolCallID       string `json:"toolCallId"`
		Approved         *bool  `json:"approved"`
		SelectedOptionID string `json:"selectedOptionId"`
	}
	readLoosely(m.Raw, &a)
	p := c.permissions[a.ToolCallID]
	if p == nil || p.turnID != a.TurnID || c.state.ActiveTurnID() != a.TurnID {
		m.Reject(s.journal, fmt.Sprintf("no tool call %q of the running turn waits for a confirmation", a.ToolCallID))
		return
	}
	if a.Approved == nil {
		m.Reject(s.journal, "chat/toolCallConfirmed needs approved")
		return
	}
	id, refusal := permission.Choose(p.options, *a.Approved, a.SelectedOptionID)
	if refusal != "" {
		m.Reject(s.journal, refusal)
		return
	}
	delete(c.permissions, a.ToolCallID)
	// What the schema requires and the client left out is filled in, and the echo is
	// the action as folded, so every client folds the same.
	raw := m.Raw
	if _, ok := folded["confirmed"]; *a.Approved && !ok {
		folded["confirmed"] = "user-action"
		raw = nil
	}
	if _, ok := folded["reason"]; !*a.Approved && !ok {
		folded["reason"] = "denied"
		raw = nil
	}
	if raw == nil {
		raw, _ = json.Marshal(folded)
	}
	messages.ReduceChat(c.state, folded)
	origin := m.Origin
	s.publish(c, raw, &origin)
	answer(p.reply, id)
}

// answerPermissions answers "" to the questions of a chat's turn (every turn's with
// turnID ""; every chat's with c nil): nobody will answer them now.
func (s *session) answerPermissions(c *chat, turnID string) {
	chats := []*chat{c}
	if c == nil {
		chats = chats[:0]
		for _, x := range s.chats {
			chats = append(chats, x)
		}
	}
	for _, x := range chats {
		for id, p := range x.permissions {
			if turnID == "" || p.turnID == turnID {
				delete(x.permissions, id)
				answer(p.reply, "")
			}
		}
	}
}

func (s *session) answerAllPermissions() { s.answerPermissions(nil, "") }

// answer sends id on a permission's reply, exactly once per question, without
// blocking the session: a reply nobody is reading yet gets it from a goroutine that
// gives up after channel.RequestTimeout.
func answer(reply chan<- string, id string) {
	if reply == nil {
		return
	}
	select {
	case reply <- id:
		return
	default:
	}
	go func() {
		t := time.NewTimer(channel.RequestTimeout)
		defer t.Stop()
		select {
		case reply <- id:
		case <-t.C:
		}
	}()
}

// cancelAgentTurn takes a client's chat/turnCancelled of the agent's turn: the agent
// is asked to stop, and the cancel is echoed once the agent has ended the turn
// (agentTurnEnded), or after Config.AgentCancelGrace without it.
func (s *session) cancelAgentTurn(ctx actor.Context, c *chat, m *channel.Dispatch, folded map[string]any) {
	if c.cancelling != nil {
		m.Reject(s.journal, "the turn is being cancelled already")
		return
	}
	if s.agent == nil {
		s.echo(c, m, folded)
		s.endAgentTurn(ctx, c, "", false)
		c.busy = ""
		s.drainQueue(ctx, c)
		return
	}
	s.askAgentToStop(ctx, c, m, folded)
}

// askAgentToStop sends agentmsg.Cancel for the chat's agent turn and starts the grace the
// agent has to end it; dispatch is the client's cancel, nil for the host's.
func (s *session) askAgentToStop(ctx actor.Context, c *chat, dispatch *channel.Dispatch, folded map[string]any) {
	turnID := c.agentTurn
	self, system, chatURI := ctx.Self(), ctx.ActorSystem(), c.uri
	c.cancelling = &cancelling{turnID: turnID, dispatch: dispatch, folded: folded,
		timer: time.AfterFunc(s.cfg.AgentCancelGrace, func() { system.Root.Send(self, &agentCancelLapsed{chat: chatURI, turnID: turnID}) })}
	if s.agent != nil {
		ctx.Send(s.agent, &agentmsg.Cancel{Chat: c.uri, TurnID: turnID})
	}
}

// takeCancel returns the chat's cancel of turnID, if one is on its way, with its
// grace stopped.
func (c *chat) takeCancel(turnID string) *cancelling {
	cn := c.cancelling
	if cn == nil || cn.turnID != turnID {
		return nil
	}
	c.cancelling = nil
	cn.timer.Stop()
	return cn
}

// refuse refuses a client's cancel that did not end the turn.
func (cn *cancelling) refuse(s *session, reason string) {
	if cn != nil && cn.dispatch != nil {
		cn.dispatch.Reject(s.journal, reason)
	}
}

// displaceAgentTurn asks the agent to stop the turn a `!` command has just taken the
// place of: the chat shows one active turn, so what the agent would go on streaming
// could not be shown. The gate lets no message to the agent through until the agent
// has ended it.
func (s *session) displaceAgentTurn(ctx actor.Context, c *chat) {
	s.answerPermissions(c, c.agentTurn)
	if c.cancelling != nil {
		return // the agent is being asked already
	}
	s.askAgentToStop(ctx, c, nil, nil)
}

// agentTurnEnded ends the agent's turn as the agent ended it, answers its open
// questions with "", and starts the next queued message.
func (s *session) agentTurnEnded(ctx actor.Context, m *agentmsg.TurnEnded) {
	c := s.chats[m.Chat]
	if c == nil || c.agentTurn == "" || c.agentTurn != m.TurnID {
		s.cfg.Logger.Debug("the end of an agent turn that is not running is dropped", "session", s.uri, "chat", m.Chat, "turn", m.TurnID)
		return
	}
	s.answerPermissions(c, m.TurnID)
	c.agentTurn = ""
	cn := c.takeCancel(m.TurnID)
	if c.busy != m.TurnID || c.state.ActiveTurnID() != m.TurnID {
		// A `!` command took its place: the agent is free again.
		cn.refuse(s, "another turn took the place of the turn")
		s.drainQueue(ctx, c)
		return
	}
	duration := time.Since(c.agentSince).Milliseconds()
	switch {
	case m.Err != "":
		cn.refuse(s, "the turn ended with an error before it was cancelled")
		s.chatAction(c, messages.ChatErrorAction{TurnID: m.TurnID, Duration: duration, Error: messages.ErrorInfo{ErrorType: errorTypeAgent, Message: m.Err}})
	case m.StopReason == "cancelled" && cn != nil && cn.dispatch != nil:
		s.echo(c, cn.dispatch, cn.folded)
	case m.StopReason == "cancelled":
		s.chatAction(c, messages.ChatTurnCancelledAction{TurnID: m.TurnID, Duration: duration})
	default:
		cn.refuse(s, "the turn ended before it could be cancelled")
		s.chatAction(c, messages.ChatTurnCompleteAction{TurnID: m.TurnID, Duration: duration})
	}
	c.lastTurn = m.TurnID
	c.busy = ""
	s.drainQueue(ctx, c)
}

// agentCancelLapsed ends a cancelled turn the agent did not end in time, as
// cancelled; an agentmsg.TurnEnded for it after this is dropped.
func (s *session) agentCancelLapsed(ctx actor.Context, m *agentCancelLapsed) {
	c := s.chats[m.chat]
	if c == nil || c.cancelling == nil || c.cancelling.turnID != m.turnID || c.agentTurn != m.turnID {
		return
	}
	cn := c.takeCancel(m.turnID)
	s.cfg.Logger.Warn("the agent did not end a cancelled turn in time; it ends without it", "session", s.uri, "chat", c.uri, "turn", m.turnID, "grace", s.cfg.AgentCancelGrace)
	s.answerPermissions(c, m.turnID)
	c.agentTurn = ""
	if c.busy == m.turnID && c.state.ActiveTurnID() == m.turnID {
		if cn.dispatch != nil {
			s.echo(c, cn.dispatch, cn.folded)
		} else {
			s.chatAction(c, messages.ChatTurnCancelledAction{TurnID: m.turnID, Duration: time.Since(c.agentSince).Milliseconds()})
		}
		c.lastTurn = m.turnID
		c.busy = ""
	} else {
		cn.refuse(s, "another turn took the place of the turn")
	}
	s.drainQueue(ctx, c)
}

// endAgentTurn ends the chat's agent turn without the agent: its questions are
// answered "", the agent is asked to stop it (with tell: it may still be on it), and
// with errText the turn, if still the chat's active one, ends with that error. The
// queue is the caller's to drain.
func (s *session) endAgentTurn(ctx actor.Context, c *chat, errText string, tell bool) {
	turnID := c.agentTurn
	if turnID == "" {
		return
	}
	s.answerPermissions(c, turnID)
	cn := c.takeCancel(turnID)
	if tell && s.agent != nil {
		ctx.Send(s.agent, &agentmsg.Cancel{Chat: c.uri, TurnID: turnID})
	}
	c.agentTurn = ""
	if errText == "" || c.busy != turnID || c.state.ActiveTurnID() != turnID {
		cn.refuse(s, "another turn took the place of the turn")
		return
	}
	cn.refuse(s, "the turn ended with an error before it was cancelled")
	s.chatAction(c, messages.ChatErrorAction{TurnID: turnID, Duration: time.Since(c.agentSince).Milliseconds(),
		Error: messages.ErrorInfo{ErrorType: errorTypeAgentGone, Message: errText}})
	c.lastTurn = turnID
	c.busy = ""
}

// agentStarted keeps the agent's id for its conversation in the session's record, for
// the agent to resume it after the host restarts.
func (s *session) agentStarted(m *agentmsg.Started) {
	if m.AgentSessionID == "" || m.AgentSessionID == s.record.AgentSessionID {
		return
	}
	s.record.AgentSessionID = m.AgentSessionID
	s.saveRecord()
}

// agentRestarted: the agent crashed and came back with its conversation. A turn it
// was taking was lost with the process; every chat says what happened.
func (s *session) agentRestarted(ctx actor.Context, m *agentmsg.Restarted) {
	reason := strings.TrimSpace(m.Reason)
	if reason == "" {
		reason = "it stopped unexpectedly"
	}
	text := fmt.Sprintf("The agent %s restarted: %s. It resumed the conversation.", s.record.Agent, strings.TrimSuffix(reason, "."))
	for _, uri := range s.order {
		c := s.chats[uri]
		s.endAgentTurn(ctx, c, fmt.Sprintf("The agent %s restarted and lost this turn: %s.", s.record.Agent, strings.TrimSuffix(reason, ".")), false)
		s.notify(ctx, c, notice{text: text, kind: "restarted"})
	}
}

// agentLost: the agent is gone for good. A turn it was taking ends with the reason,
// every chat says so, and every turn for it from now on ends with an error.
func (s *session) agentLost(ctx actor.Context, reason string) {
	if s.agentGone != "" {
		return
	}
	reason = strings.TrimSuffix(strings.TrimSpace(reason), ".")
	if reason == "" {
		reason = "it stopped"
	}
	s.agentGone = reason
	s.cfg.Logger.Warn("a session's agent is gone", "session", s.uri, "agent", s.record.Agent, "reason", reason)
	text := fmt.Sprintf("The agent %s is gone: %s. Turns for it now end with an error; start a new session to talk to it again.", s.record.Agent, reason)
	for _, uri := range s.order {
		c := s.chats[uri]
		s.endAgentTurn(ctx, c, s.agentUnavailable(), false)
		s.notify(ctx, c, notice{text: text, kind: "lost"})
	}
}

// notify shows a notice of the agent in the chat: a turn of the host's whose message
// is the notice, with origin systemNotification, started and completed at once and
// never sent to the agent. A chat running a turn shows it once that turn ends. A
// notice is not kept, so no local turn is anchored to it (lastTurn stays).
func (s *session) notify(ctx actor.Context, c *chat, n notice) {
	c.notices = append(c.notices, n)
	if c.busy == "" {
		s.drainQueue(ctx, c)
	}
}

// flushNotices shows the notices waiting for the chat to be idle.
func (s *session) flushNotices(c *chat) {
	for _, n := range c.notices {
		s.seq++
		turnID := fmt.Sprintf("notice-%d-%d", time.Now().UnixNano(), s.seq)
		msg := messages.SystemNotificationMessage(n.text, map[string]any{AgentNoticeMeta: n.kind})
		s.chatAction(c, messages.ChatTurnStartedAction{TurnID: turnID, StartedAt: isoTime(time.Now()), Message: msg})
		s.chatAction(c, messages.ChatTurnCompleteAction{TurnID: turnID, Duration: 0})
	}
	c.notices = nil
}

// saveRecord keeps the session's record as it is now, off the mailbox, after the
// session's writes before it (so an older record never lands after it).
func (s *session) saveRecord() {
	rec, store, logger := s.record, s.store, s.cfg.Logger
	rec.Chats = nil
	before, done := s.lastWrite, make(chan struct{})
	s.lastWrite = done
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer close(done)
		if before != nil {
			<-before
		}
		if err := store.SaveSession(rec); err != nil {
			logger.Warn("a session's record was not kept", "session", rec.URI, "err", err)
		}
	}()
}
