package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/actors/session/commandcall"
	"github.com/termhost/termhost/actors/session/shellpool"
	"github.com/termhost/termhost/actors/session/turnwindow"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/integration"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/toolterm"
	"github.com/termhost/termhost/persistence"
)

// Messages of sessions and chats.

// Create opens a session with its default chat; the answer is a *Result. Agent names
// the agent behind it, one of Config.Agents ("" for none: its turns are `!` commands
// only); By is the user who asks ("" when unknown), kept as the session's creator.
//
// On a cluster node a session is placed on a node, and runs its terminals and agent
// there: Node names it; otherwise Anywhere lets the cluster place it (the least loaded
// node, as a terminal is placed), and without Anywhere it stays on this node. Who is
// the client who asks, as signed in: the node that makes it checks the grant again.
type Create struct {
	URI                string
	WorkingDirectories []string
	Agent              string
	By                 string
	Node               string
	Anywhere           bool
	Who                auth.Principal
}

// CreateChat opens another chat in a session; the answer is a *Result. Who, in this
// message and in Dispose, DisposeChat and StopBackgroundWork, is the client who asks,
// for a session on another cluster node to check again.
type CreateChat struct {
	Session string
	Chat    string
	Who     auth.Principal
}

// Result answers Create, CreateChat, Dispose and DisposeChat.
type Result struct {
	Err  *messages.Error
	Chat string
}

// Dispose ends a session, its chats' terminals and what is kept of it.
type Dispose struct {
	URI string
	Who auth.Principal
}

// DisposeChat ends a chat's terminals and drops it with what was kept of it.
type DisposeChat struct {
	Chat string
	Who  auth.Principal
}

// List asks the root for every session's summary; the answer is a
// []map[string]any, one SummaryQuery answer per session.
type List struct{}

// SummaryChanged tells the root that a session's summary changed, with the fields
// that did (as root/sessionSummaryChanged carries them).
type SummaryChanged struct {
	Session string
	Changes map[string]any
}

// SummaryQuery asks one session for its summary (a SessionSummary of the
// listSessions answer); the answer is a map[string]any, the form the root gathers
// into List's answer.
type SummaryQuery struct{}

// ChatsOf tells the root which chats a session holds now, so it routes their
// channels to the session.
type ChatsOf struct {
	Session string
	Chats   []string
}

// noAgent ends every turn that is not a `!` command: this host runs no language model.
const noAgent = "no agent is attached to this session"

// ClosingHost is why nothing starts once the host is shutting down: a command
// waiting for its terminal, or a session created then.
const ClosingHost = "This host is closing, so nothing new starts on it"

// session is one session: its state, its chats with their turns, and the `!`
// commands running in them. It owns the terminals those commands open.
type session struct {
	cfg     Config
	journal *delivery.Journal
	// told is the summary's mutable fields as the root last heard them: a change
	// goes to it as SummaryChanged, for root/sessionSummaryChanged.
	told summaryFields
	// root is the parent that spawned this session (the root actor): where its
	// terminals are made, and who routes its chats' channels to it.
	root  *actor.PID
	store *persistence.Store

	uri    string
	record persistence.SessionRecord
	state  messages.SessionState
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
	// away are the active clients whose connections all went, each with the timer
	// of its grace (see presence.go).
	away map[string]*grace
	// tools is the agent shell service, a child spawned on the first
	// ToolServiceQuery; nil before, and after it stopped.
	tools *actor.PID
	// disposed is set once the session is disposed: it is stopping, and spawns no
	// tool service again.
	disposed bool
	// agent is the agent runner, a child spawned when the session starts if it has
	// an agent (record.Agent); nil before, without one, and after it stopped.
	agent *actor.PID
	// agentGone says why the session's agent is gone for good ("" while it is not):
	// every turn for it ends with that error.
	agentGone string
	// restored says the session was brought back from the store after a restart.
	restored bool
	// shells are the spares started ahead for the next `!` commands (spare.go) and
	// the commands' shells at their prompt that nobody has used since (retire.go);
	// idleTimer ends them once no command has come for Config.ShellIdle.
	shells    *shellpool.Pool[*terminal.Spare]
	idleTimer *time.Timer
}

type chat struct {
	uri   string
	state messages.ChatState
	subs  map[delivery.Subscriber]bool
	// runs are the `!` commands of this chat, by tool call id, from their start until
	// their turn is kept.
	runs map[string]*commandRun
	// shells are the terminals this chat's commands opened, each sitting at its
	// prompt until the chat or the session goes (seed: "Who opens one"), or until
	// it is retired, idle (retire.go).
	shells []string
	// lastTurn is the id of the newest turn, the anchor of the next local turn.
	lastTurn string
	// busy is the turn running now, "" when idle; queued messages wait for it.
	busy string
	// owners are the owners of the chat's background work, by row id: who a
	// client's stop goes to (see background.go).
	owners map[string]*actor.PID
	// The agent's side of the chat (agentside.go).
	agentChat
	// Which of the chat's turns its state holds (history.go).
	window *turnwindow.Window
}

// Messages a session sends itself, from a timer or a goroutine watching a terminal.
type (
	// runTimedOut: a command ran past Config.CommandTimeout.
	runTimedOut struct{ toolCallID string }
	// runAltScreen: a command switched its terminal to the alternate screen.
	runAltScreen struct{ toolCallID string }
	// turnKept: a finished command's output and turn are on disk, at kept, its
	// terminal's scrollback having arrived at snapshot.
	turnKept struct {
		run            *commandRun
		snapshot, kept time.Time
		// whole says the turn and its output were written without an error.
		whole bool
	}
)

// provider names this host as the provider of its sessions.
const provider = "termhost"

// NewProps makes the props of a session, spawned by the root. A restored session
// rebuilds its chats and local turns from what the store kept.
func NewProps(cfg Config, rec persistence.SessionRecord, restored bool) *actor.Props {
	cfg = cfg.withDefaults()
	return actor.PropsFromProducer(func() actor.Actor {
		s := &session{cfg: cfg, journal: cfg.Journal, store: cfg.Store, uri: rec.URI, record: rec, subs: map[delivery.Subscriber]bool{}, chats: map[string]*chat{}, writes: &sync.WaitGroup{},
			away: map[string]*grace{}, restored: restored, shells: shellpool.New[*terminal.Spare](cfg.Spares, cfg.LiveShells, cfg.ShellIdle, cfg.SpareBudget)}
		s.state = messages.NewSessionState(s.provider(), rec.Title, rec.WorkingDirectories)
		if restored {
			s.restore()
		}
		return s
	}, actor.WithDispatcher(channel.Pooled))
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *session) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.started(ctx)
		s.told = s.summaryFields() // what sessionAdded or listSessions will say
		return
	case *CreateChat:
		s.createChat(ctx, m)
	case *DisposeChat:
		s.disposeChat(ctx, m)
	case *Dispose:
		s.dispose(ctx)
	case *SummaryQuery:
		ctx.Respond(s.summary())
	case *channel.Subscribe:
		s.subscribe(ctx, m)
	case *channel.Unsubscribe:
		s.unsubscribe(m)
	case *channel.Dispatch:
		s.dispatch(ctx, m)
	case *terminal.Event:
		s.terminalEvent(ctx, m)
	case *runTimedOut:
		s.endRun(ctx, m.toolCallID, commandcall.Ending{How: commandcall.TimedOut})
	case *runAltScreen:
		s.endRun(ctx, m.toolCallID, commandcall.Ending{How: commandcall.Interactive, Success: true})
	case *integration.SentinelDue:
		s.sentinelDue(m)
	case *integration.SentinelLooked:
		s.sentinelLooked(ctx, m)
	case *terminal.Written:
		s.written(m)
	case *turnKept:
		s.turnKept(ctx, m)
	case *channel.Shutdown:
		s.shutdown(ctx)
	case *ClientLeft:
		s.clientLeft(ctx, m.ClientID)
	case *ClientBack:
		s.stopAway(m.ClientID)
	case *presenceLapsed:
		s.presenceLapsed(m)
	case *SetBackgroundWork:
		s.setBackgroundWork(ctx, m)
	case *RemoveBackgroundWork:
		s.removeBackgroundWork(m)
	case *StopBackgroundWork:
		s.stopBackgroundWork(ctx, m)
	case *FetchTurns:
		s.fetchTurns(ctx, m)
	case *ShowTurns:
		s.showTurns(ctx, m)
	case *Wake:
		s.wake(ctx, m)
	case *ToolServiceQuery:
		s.toolService(ctx)
	case *agentmsg.Actions:
		s.agentActions(m)
	case *agentmsg.Permission:
		s.agentPermission(ctx, m)
	case *agentmsg.TurnEnded:
		s.agentTurnEnded(ctx, m)
	case *agentmsg.Started:
		s.agentStarted(m)
	case *agentmsg.Restarted:
		s.agentRestarted(ctx, m)
	case *agentmsg.Lost:
		s.agentLost(ctx, m.Reason)
	case *agentCancelLapsed:
		s.agentCancelLapsed(ctx, m)
	case *actor.Terminated:
		s.ownerGone(ctx, m.Who)
	case *spareReady:
		s.spareReady(ctx, m)
	case *shellsIdle:
		s.checkIdle(ctx)
	case *actor.Stopping:
		s.stopIdle()
		for _, sp := range s.shells.Stop() {
			go sp.Release()
		}
		s.stopAllAway()
		s.answerAllPermissions()
		// The runner stops with the session: that is no agent lost.
		s.agent = nil
		return
	}
	s.tellSummaryChanges(ctx)
}

// summaryFields are the fields of a session's summary that change while it lives.
type summaryFields struct {
	title    string
	modified time.Time
	dirs     []string
}

func (s *session) summaryFields() summaryFields {
	return summaryFields{title: s.state.Title(), modified: s.modifiedAt(), dirs: s.record.WorkingDirectories}
}

// tellSummaryChanges tells the root what of the summary changed since it last heard:
// a message changes at most a few fields, and most change none (this is a few
// comparisons, not an encode).
func (s *session) tellSummaryChanges(ctx actor.Context) {
	if s.root == nil {
		return
	}
	now := s.summaryFields()
	if now.title == s.told.title && now.modified.Equal(s.told.modified) && slices.Equal(now.dirs, s.told.dirs) {
		return // most messages (a command's output, a keystroke's echo) change nothing here
	}
	changes := map[string]any{}
	if now.title != s.told.title {
		changes["title"] = now.title
	}
	if !now.modified.Equal(s.told.modified) {
		changes["modifiedAt"] = isoTime(now.modified)
	}
	if !slices.Equal(now.dirs, s.told.dirs) {
		dirs := now.dirs
		if dirs == nil {
			dirs = []string{}
		}
		changes["workingDirectories"] = dirs
	}
	s.told = now
	ctx.Send(s.root, &SummaryChanged{Session: s.uri, Changes: changes})
}

// started opens the default chat of a new session and tells the root which chats
// it holds.
func (s *session) started(ctx actor.Context) {
	s.root = ctx.Parent()
	if len(s.chats) == 0 {
		s.addChat(s.uri + "/chat")
	}
	s.tellRootChats(ctx)
	if s.record.Agent != "" {
		s.startAgent(ctx)
	}
}

func (s *session) createChat(ctx actor.Context, m *CreateChat) {
	uri := m.Chat
	if uri == "" {
		s.seq++
		uri = fmt.Sprintf("%s/chat-%d", s.uri, s.seq+len(s.chats))
	}
	if _, taken := s.chats[uri]; taken {
		ctx.Respond(&Result{Err: messages.Errorf(messages.CodeAlreadyExists, "Chat already exists: %s", uri)})
		return
	}
	s.addChat(uri)
	s.tellRootChats(ctx)
	ctx.Respond(&Result{Chat: uri})
}

// disposeChat ends a chat's commands and drops it with what was kept of it.
func (s *session) disposeChat(ctx actor.Context, m *DisposeChat) {
	c := s.chats[m.Chat]
	if c == nil {
		ctx.Respond(&Result{})
		return
	}
	s.endRuns(ctx, c)
	s.endAgentTurn(ctx, c, "", true)
	delete(s.chats, c.uri)
	for i, u := range s.order {
		if u == c.uri {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.sessionAction(messages.SessionChatRemovedAction{Chat: c.uri})
	s.tellRootChats(ctx)
	// What was kept goes once the writes on their way have landed, then the answer:
	// nothing of the chat is written after its disposal was answered.
	s.afterWrites(ctx, nil, func() {
		if err := s.store.DeleteChat(s.uri, c.uri); err != nil {
			s.cfg.Logger.Warn("a disposed chat's kept data could not be removed", "chat", c.uri, "err", err)
		}
	})
}

// dispose ends the session: its chats' commands and terminals, then what was kept of
// it, then the actor.
func (s *session) dispose(ctx actor.Context) {
	for _, c := range s.chats {
		s.endRuns(ctx, c)
		s.endAgentTurn(ctx, c, "", true)
	}
	// The agent and the tool service keep and release their terminals as they stop,
	// while the root still serves; what was kept of the session goes once that is
	// written too.
	s.disposed = true
	s.afterWrites(ctx, []*actor.Future{s.stopAgent(ctx), s.stopTools(ctx)}, func() {
		if err := s.store.DeleteSession(s.uri); err != nil {
			s.cfg.Logger.Warn("a disposed session's kept data could not be removed", "session", s.uri, "err", err)
		}
	})
	ctx.Stop(ctx.Self())
}

// shutdown fails the commands still waiting and answers once what must be kept is
// written.
func (s *session) shutdown(ctx actor.Context) {
	s.closed = true
	s.dropSpare()
	for _, c := range s.chats {
		for _, r := range c.runs {
			if !r.done {
				s.finish(ctx, r, commandcall.Ending{How: commandcall.Failed, Failure: errors.New(ClosingHost)})
			}
		}
		s.endAgentTurn(ctx, c, ClosingHost, true)
	}
	// The agent and the tool service stop now, while the root still holds the
	// terminals they keep and release as they stop; the root disposes the rest once
	// every session is done. The writes they began as they stopped are counted once
	// they have (ToolServiceSpec.Writes, agentmsg.Spec.Writes).
	stopped := []*actor.Future{s.stopAgent(ctx), s.stopTools(ctx)}
	sender, system, writes := ctx.Sender(), ctx.ActorSystem(), s.writes
	go func() {
		for _, f := range stopped {
			if f != nil {
				_ = f.Wait()
			}
		}
		writes.Wait()
		system.Root.Send(sender, &channel.ShutdownDone{})
	}()
}

func (s *session) unsubscribe(m *channel.Unsubscribe) {
	if c := s.chats[m.Channel]; c != nil {
		delete(c.subs, m.Sub)
		s.letGo(c)
	} else {
		delete(s.subs, m.Sub)
	}
}

// addChat opens a chat, lists it on the session, and makes it the default chat when
// the session has none.
func (s *session) addChat(uri string) *chat {
	now := isoTime(time.Now())
	c := &chat{uri: uri, state: messages.NewChatState(uri, "Chat", now), subs: map[delivery.Subscriber]bool{}, runs: map[string]*commandRun{}}
	c.agentChat.init()
	c.window = turnwindow.New()
	s.chats[uri] = c
	s.order = append(s.order, uri)
	s.sessionAction(messages.SessionChatAddedAction{Summary: messages.ChatSummary{Resource: uri, Title: "Chat", Status: messages.SessionStatusIdle, ModifiedAt: now}})
	s.state.SetDefaultChat(uri)
	return c
}

// tellRootChats tells the root which chats the session holds now, so it routes their
// channels here.
func (s *session) tellRootChats(ctx actor.Context) {
	ctx.Send(s.root, &ChatsOf{Session: s.uri, Chats: append([]string(nil), s.order...)})
}

// sessionSummary is a session's entry in the listSessions answer.
type sessionSummary struct {
	Provider           string                 `json:"provider"`
	Title              string                 `json:"title"`
	Status             messages.SessionStatus `json:"status"`
	Resource           string                 `json:"resource"`
	CreatedAt          string                 `json:"createdAt"`
	ModifiedAt         string                 `json:"modifiedAt"`
	WorkingDirectories []string               `json:"workingDirectories"`
}

// createdAt dates a session: a session of commands from its first command's start
// (seed: "Who opens one").
func (s *session) createdAt() time.Time {
	if !s.record.FirstStart.IsZero() {
		return s.record.FirstStart
	}
	return s.record.Created
}

// modifiedAt is when the session last changed: its last command's end.
func (s *session) modifiedAt() time.Time {
	if s.record.LastEnd.IsZero() {
		return s.createdAt()
	}
	return s.record.LastEnd
}

// summary answers SummaryQuery: the session's sessionSummary, as the decoded JSON
// object the root gathers into the list.
func (s *session) summary() map[string]any {
	// A session of commands is dated from its first command's start to its last
	// one's end (seed: "Who opens one").
	created, modified := s.createdAt(), s.modifiedAt()
	dirs := s.record.WorkingDirectories
	if dirs == nil {
		dirs = []string{}
	}
	raw, _ := json.Marshal(sessionSummary{Provider: s.provider(), Title: s.state.Title(), Status: messages.SessionStatusIdle, Resource: s.uri,
		CreatedAt: isoTime(created), ModifiedAt: isoTime(modified), WorkingDirectories: dirs})
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// sessionAction folds an action the host built into the session and sends it to the
// session's subscribers.
func (s *session) sessionAction(a messages.SessionAction) {
	raw, err := s.state.Apply(a)
	if err != nil {
		s.cfg.Logger.Error("a session action does not encode", "session", s.uri, "type", a.SessionActionType(), "err", err)
		return
	}
	frame := s.journal.Stamp(&messages.Envelope{Channel: s.uri, Action: raw})
	for sub := range s.subs {
		sub.Deliver(s.uri, frame)
	}
}

// chatAction folds an action the host built into a chat and sends it to the chat's
// subscribers.
func (s *session) chatAction(c *chat, a messages.ChatAction) {
	raw, err := c.state.ApplyKnowing(a, c.window.Had)
	if err != nil {
		s.cfg.Logger.Error("a chat action does not encode", "chat", c.uri, "type", a.ChatActionType(), "err", err)
		return
	}
	if started, ok := a.(messages.ChatTurnStartedAction); ok {
		c.window.Started(started.TurnID)
	}
	s.publish(c, raw, nil)
}

// publish dates a chat's change and sends the action that made it, stamped, to the
// chat's subscribers; origin names the client dispatch it echoes, if any.
func (s *session) publish(c *chat, raw json.RawMessage, origin *messages.Origin) {
	at := isoTime(time.Now())
	c.state.SetModifiedAt(at)
	s.publishAt(c, raw, origin, at)
}

// publishAt sends an action to the chat's subscribers, stamped, with the date of the
// chat's last change.
func (s *session) publishAt(c *chat, raw json.RawMessage, origin *messages.Origin, at string) {
	frame := s.journal.Stamp(&messages.Envelope{Channel: c.uri, Action: raw, Origin: origin})
	for sub := range c.subs {
		if d, ok := sub.(DatedSubscriber); ok {
			d.DeliverDated(c.uri, frame, at)
			continue
		}
		sub.Deliver(c.uri, frame)
	}
}

// DatedSubscriber is a chat subscriber that keeps the chat's state itself, away from
// this session (another node's proxy of it, actors/cluster): it is handed each
// change's modifiedAt with the frame, since no action carries it, so a snapshot it
// answers has the session's date and not its own.
type DatedSubscriber interface {
	DeliverDated(channel string, frame []byte, modifiedAt string)
}

func (s *session) subscribe(ctx actor.Context, m *channel.Subscribe) {
	if m.Channel == s.uri {
		s.subs[m.Sub] = true
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: s.uri, State: s.state.Clone(), FromSeq: s.journal.Current()}})
		return
	}
	if c := s.chats[m.Channel]; c != nil {
		s.bringInFor(c, m.Turns)
		c.subs[m.Sub] = true
		ctx.Respond(&channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: c.uri, State: c.state.Clone(), FromSeq: s.journal.Current()}})
		return
	}
	// A terminal a tool call of one of our chats names: rebuilt from what was kept.
	if chatURI, key, ok := toolterm.Parse(m.Channel); ok {
		ctx.Respond(s.retained(chatURI, key, m.Channel))
		return
	}
	ctx.Respond(&channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No channel %s on this host", m.Channel)})
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
	block, named := c.state.TerminalContent(key, uri)
	if !named {
		block, named = s.olderTerminal(c, key, uri)
	}
	if !named {
		// An agent tool's shell, or a terminal an agent ran through the backend seam
		// (its key is the seam's, not a tool call's): answered from what was kept.
		return s.keptAgentShell(chatURI, key, uri)
	}
	kept, err := s.store.LoadTerminal(s.uri, chatURI, key)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		s.cfg.Logger.Warn("a kept terminal could not be read; refusing it", "terminal", uri, "err", err)
		return notFound
	}
	isPty := block.IsPty
	var exit *int
	output := kept.Output
	if res := block.Result; res != nil {
		exit = res.ExitCode
		if err != nil {
			if res.Truncated {
				// A cut preview with nothing kept to show the rest is refused.
				return notFound
			}
			output = res.Preview
		}
	}
	if err == nil {
		if exit == nil {
			exit = kept.ExitCode
		}
		isPty = kept.IsPty
	}
	st := messages.TerminalState{
		Title:     block.Title,
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

// keptAgentShell answers a subscribe to an agent tool's shell that is gone from
// what the store kept of it: its output and how it ended.
func (s *session) keptAgentShell(chatURI, key, uri string) *channel.SubscribeResult {
	kept, err := s.store.LoadTerminal(s.uri, chatURI, key)
	if err != nil {
		if !errors.Is(err, persistence.ErrNotFound) {
			s.cfg.Logger.Warn("a kept agent shell could not be read; refusing it", "terminal", uri, "err", err)
		}
		return &channel.SubscribeResult{Err: messages.Errorf(messages.CodeNotFound, "No terminal %s on this host", uri)}
	}
	st := messages.TerminalState{
		Title:     kept.Title,
		Content:   []messages.ContentPart{},
		Claim:     messages.Claim{Kind: messages.ClaimSession, Session: s.uri, Chat: chatURI, ToolCallID: kept.ToolCallID},
		Lifecycle: &messages.Lifecycle{Status: messages.StatusExited, ExitCode: kept.ExitCode},
		ExitCode:  kept.ExitCode,
		IsPty:     messages.Ptr(kept.IsPty),
	}
	if kept.Output != "" {
		st.Content = append(st.Content, messages.ContentPart{Type: messages.PartUnclassified, Value: kept.Output})
	}
	return &channel.SubscribeResult{Snapshot: &messages.Snapshot{Resource: uri, State: st, FromSeq: s.journal.Current()}}
}

// afterWrites runs then once every write on its way has landed, off the mailbox, and
// then answers the request being handled with an empty Result. With first, actors'
// stops (nil entries are skipped), the writes are counted once they have stopped:
// those they began as they stopped (ToolServiceSpec.Writes, agentmsg.Spec.Writes) are
// waited for too.
func (s *session) afterWrites(ctx actor.Context, first []*actor.Future, then func()) {
	sender, system, writes := ctx.Sender(), ctx.ActorSystem(), s.writes
	go func() {
		for _, f := range first {
			if f != nil {
				_ = f.Wait()
			}
		}
		writes.Wait()
		then()
		if sender != nil {
			system.Root.Send(sender, &Result{})
		}
	}()
}

// endRuns ends a chat's commands and ends and unlists their terminals.
func (s *session) endRuns(ctx actor.Context, c *chat) {
	for _, r := range c.runs {
		if !r.done {
			r.done = true
			if r.timer != nil {
				r.timer.Stop()
			}
			close(r.stopAlt)
		}
	}
	s.shells.ForgetChat(c.uri)
	for _, uri := range c.shells {
		ctx.Send(s.root, &terminal.Dispose{URI: uri})
	}
	c.shells = nil
}
