package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	acp "github.com/coder/acp-go-sdk"

	"github.com/termhost/termhost/actors/agentmsg"
	"github.com/termhost/termhost/pty"
)

// phase is where the runner is in its life; it only moves forward, but for a
// restart (ready → starting).
type phase int

const (
	// starting: a process is up and being initialized, its session made or loaded.
	starting phase = iota
	// ready: the agent holds the conversation; prompts run one at a time.
	ready
	// lost: no process, and none will be started again; prompts end at once.
	lost
	// stopping: the runner is going away.
	stopping
)

// stopWait bounds what Stopping waits for once the process is gone: the terminals
// released and every goroutine of the runner ended.
const stopWait = 5 * time.Second

// Messages the runner sends itself from the goroutines that make its calls.

// initialized: the agent answered initialize.
type initialized struct {
	proc *agentProc
	resp acp.InitializeResponse
	err  error
}

// sessionOpened: the agent answered session/new or session/load.
type sessionOpened struct {
	proc   *agentProc
	id     string
	loaded bool
	err    error
}

// promptDone: the agent answered session/prompt.
type promptDone struct {
	proc   *agentProc
	prompt *agentmsg.Prompt
	resp   acp.PromptResponse
	err    error
}

// procExited: the process exited and its output was read.
type procExited struct {
	proc *agentProc
}

// runner is one session's agent.
type runner struct {
	opts Options
	spec agentmsg.Spec
	log  *slog.Logger

	self, parent *actor.PID
	system       *actor.ActorSystem
	argv         []string
	cwd          string
	client       *client

	// life ends when the runner stops: every call to the agent is made with it.
	life   context.Context
	cancel context.CancelFunc
	// wg counts every goroutine the runner and its client start.
	wg sync.WaitGroup

	phase phase
	proc  *agentProc
	// canLoad: the agent offers session/load; mcpHTTP: it takes MCP over HTTP.
	canLoad, mcpHTTP bool
	// sessionID is the agent's id for the conversation, once it has one.
	sessionID string
	// restarting: the process being started replaces one that crashed, whose
	// reason is restartReason; its conversation is loaded, then agentmsg.Restarted.
	restarting    bool
	restartReason string
	crashes       []time.Time
	// lostReason says why the agent is lost, for the prompts that come after.
	lostReason string

	queue []*agentmsg.Prompt
	turn  *agentmsg.Prompt // the prompt the agent is taking, nil when none
}

func newRunner(o Options, spec agentmsg.Spec) *runner {
	return &runner{opts: o, spec: spec, log: o.Logger.With("session", spec.Session, "agent", spec.Agent)}
}

// Receive is the runner's mailbox.
func (r *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.started(ctx)
	case *actor.Stopping, *actor.Restarting:
		// A restart (the runner failed) makes a fresh runner, with a process of
		// its own: this one's goes first.
		r.stop()
	case *agentmsg.Prompt:
		r.prompt(ctx, m)
	case *agentmsg.Cancel:
		r.cancelTurn(ctx, m)
	case *initialized:
		r.initialized(ctx, m)
	case *sessionOpened:
		r.sessionOpened(ctx, m)
	case *promptDone:
		r.promptDone(ctx, m)
	case *procExited:
		r.procExited(ctx, m)
	}
}

func (r *runner) started(ctx actor.Context) {
	r.self, r.parent, r.system = ctx.Self(), ctx.Parent(), ctx.ActorSystem()
	r.life, r.cancel = context.WithCancel(context.Background())
	dirs := make([]string, 0, len(r.spec.WorkingDirectories))
	for _, d := range r.spec.WorkingDirectories {
		p, err := pty.DirFromURI(d)
		if err != nil || p == "" {
			r.log.Warn("a working directory of the session is not one a file can be in; it is left out", "dir", d, "err", err)
			continue
		}
		dirs = append(dirs, p)
	}
	if len(dirs) > 0 {
		r.cwd = dirs[0]
	} else if wd, err := os.Getwd(); err == nil {
		r.cwd = wd
	}
	r.client = newClient(r.system, r.parent, r.spec, r.cwd, resolveRoots(dirs), r.life, &r.wg, r.log)

	argv := r.opts.Agents[r.spec.Agent]
	if len(argv) == 0 {
		r.lose(ctx, fmt.Sprintf("this host has no agent %q", r.spec.Agent))
		return
	}
	r.argv = argv
	r.start(ctx)
}

// send sends the session a message of the contract.
func (r *runner) send(ctx actor.Context, m any) { ctx.Send(r.parent, m) }

// tell sends the runner a message from one of its goroutines, unless it is stopping.
func (r *runner) tell(m any) {
	if r.life.Err() == nil {
		r.system.Root.Send(r.self, m)
	}
}

// start starts a process and initializes it.
func (r *runner) start(ctx actor.Context) {
	r.phase = starting
	proc, err := startProcess(r.argv, r.cwd, r.client, r.log, &r.wg, func(p *agentProc) { r.tell(&procExited{proc: p}) })
	if err != nil {
		r.lose(ctx, fmt.Sprintf("it could not start: %v", err))
		return
	}
	r.proc = proc
	r.log.Debug("the agent started", "pid", proc.cmd.Process.Pid, "argv", r.argv, "cwd", r.cwd)
	r.goCall(func() {
		resp, err := proc.conn.Initialize(r.life, acp.InitializeRequest{
			ProtocolVersion:    acp.ProtocolVersionNumber,
			ClientInfo:         &acp.Implementation{Name: "termhost", Version: "1"},
			ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true},
		})
		r.tell(&initialized{proc: proc, resp: resp, err: err})
	})
}

// goCall runs a blocking call to the agent on a goroutine of the runner's.
func (r *runner) goCall(call func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		call()
	}()
}

func (r *runner) initialized(ctx actor.Context, m *initialized) {
	if m.proc != r.proc || r.phase != starting {
		return
	}
	if m.err != nil {
		r.fail(ctx, "it did not initialize: "+errorText(m.err))
		return
	}
	caps := m.resp.AgentCapabilities
	r.canLoad, r.mcpHTTP = caps.LoadSession, caps.McpCapabilities.Http
	loadID := r.spec.AgentSessionID
	if r.restarting {
		loadID = r.sessionID
		if !r.canLoad || loadID == "" {
			r.fail(ctx, r.restartReason+"; started again, it cannot load the conversation")
			return
		}
	}
	if loadID != "" && r.canLoad {
		r.openSession(loadID)
		return
	}
	r.openSession("")
}

// openSession loads the conversation id, or makes a new one when id is "".
func (r *runner) openSession(id string) {
	proc, servers, cwd := r.proc, r.mcpServers(), r.cwd
	r.goCall(func() {
		if id != "" {
			_, err := proc.conn.LoadSession(r.life, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: cwd, McpServers: servers})
			r.tell(&sessionOpened{proc: proc, id: id, loaded: true, err: err})
			return
		}
		resp, err := proc.conn.NewSession(r.life, acp.NewSessionRequest{Cwd: cwd, McpServers: servers})
		r.tell(&sessionOpened{proc: proc, id: string(resp.SessionId), err: err})
	})
}

// mcpServers is the host's MCP server for the session, for an agent that takes MCP
// over HTTP; none otherwise.
func (r *runner) mcpServers() []acp.McpServer {
	servers := []acp.McpServer{}
	if r.opts.MCP == nil {
		return servers
	}
	url, headers, ok := r.opts.MCP(r.spec.Session)
	if !ok {
		return servers
	}
	if !r.mcpHTTP {
		r.log.Info("the agent does not take MCP over HTTP; it is offered no MCP server")
		return servers
	}
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	hs := make([]acp.HttpHeader, len(names))
	for i, name := range names {
		hs[i] = acp.HttpHeader{Name: name, Value: headers[name]}
	}
	return append(servers, acp.McpServer{Http: &acp.McpServerHttpInline{Type: "http", Name: "termhost", Url: url, Headers: hs}})
}

func (r *runner) sessionOpened(ctx actor.Context, m *sessionOpened) {
	if m.proc != r.proc || r.phase != starting {
		return
	}
	if m.err != nil {
		switch {
		case r.restarting:
			r.fail(ctx, fmt.Sprintf("%s; started again, it could not load the conversation: %s", r.restartReason, errorText(m.err)))
		case m.loaded:
			// The conversation of an earlier run is gone: the agent starts afresh.
			r.log.Warn("the agent could not load the conversation of an earlier run; it starts a new one", "id", m.id, "err", errorText(m.err))
			r.openSession("")
		default:
			r.fail(ctx, "it did not open a session: "+errorText(m.err))
		}
		return
	}
	r.sessionID = m.id
	r.phase = ready
	if r.restarting {
		r.restarting = false
		r.send(ctx, &agentmsg.Restarted{Reason: r.restartReason})
	} else {
		r.send(ctx, &agentmsg.Started{AgentSessionID: m.id})
	}
	r.next(ctx)
}

// prompt queues a prompt; it runs when the agent is ready and the turn before it
// ended.
func (r *runner) prompt(ctx actor.Context, m *agentmsg.Prompt) {
	switch r.phase {
	case lost:
		r.send(ctx, &agentmsg.TurnEnded{Chat: m.Chat, TurnID: m.TurnID, Err: "the agent is not running: " + r.lostReason})
		return
	case stopping:
		return
	}
	r.queue = append(r.queue, m)
	r.next(ctx)
}

// next starts the first queued prompt when the agent is ready and idle.
func (r *runner) next(ctx actor.Context) {
	if r.phase != ready || r.turn != nil || len(r.queue) == 0 {
		return
	}
	p := r.queue[0]
	r.queue = r.queue[1:]
	r.turn = p
	r.client.beginTurn(p.Chat, p.TurnID)
	proc, id := r.proc, acp.SessionId(r.sessionID)
	r.goCall(func() {
		resp, err := proc.conn.Prompt(r.life, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(p.Text)}})
		// Every update of the turn was handled before the answer was read
		// (demux); what comes after it is not the turn's.
		r.client.endTurn(p.Chat, p.TurnID)
		r.tell(&promptDone{proc: proc, prompt: p, resp: resp, err: err})
	})
}

func (r *runner) promptDone(ctx actor.Context, m *promptDone) {
	if m.prompt != r.turn || m.proc != r.proc {
		return // the turn already ended (the agent crashed)
	}
	if m.err != nil && disconnected(m.proc) {
		// The agent is gone: procExited ends the turn, with how it ended.
		return
	}
	ended := &agentmsg.TurnEnded{Chat: m.prompt.Chat, TurnID: m.prompt.TurnID, StopReason: string(m.resp.StopReason)}
	if m.err != nil {
		ended.StopReason, ended.Err = "", "the agent failed the turn: "+errorText(m.err)
	}
	r.turn = nil
	r.send(ctx, ended)
	r.next(ctx)
}

// disconnected says whether the process's connection is gone.
func disconnected(p *agentProc) bool {
	select {
	case <-p.conn.Done():
		return true
	default:
		return false
	}
}

// cancelTurn cancels a running turn (the agent ends it, as cancelled) or a queued
// one (ended here).
func (r *runner) cancelTurn(ctx actor.Context, m *agentmsg.Cancel) {
	if t := r.turn; t != nil && t.Chat == m.Chat && t.TurnID == m.TurnID {
		proc, id := r.proc, acp.SessionId(r.sessionID)
		r.goCall(func() {
			if err := proc.conn.Cancel(r.life, acp.CancelNotification{SessionId: id}); err != nil {
				r.log.Debug("session/cancel did not reach the agent", "err", err)
			}
			// After session/cancel is written: the agent's SDK handles the
			// notifications before a request's answer, so the agent sees its turn
			// cancelled before it reads the cancelled outcome of its question.
			r.client.cancelTurn(m.Chat, m.TurnID)
		})
		return
	}
	for i, p := range r.queue {
		if p.Chat == m.Chat && p.TurnID == m.TurnID {
			r.queue = append(r.queue[:i:i], r.queue[i+1:]...)
			r.send(ctx, &agentmsg.TurnEnded{Chat: p.Chat, TurnID: p.TurnID, StopReason: string(acp.StopReasonCancelled)})
			return
		}
	}
	r.log.Debug("a cancel for a turn the agent is not taking is ignored", "chat", m.Chat, "turn", m.TurnID)
}

// procExited: the process ended without being asked to, a crash. The running turn
// ends with an error; the agent is started again and loads the conversation if it
// can and has not crashed too often, else it is lost.
func (r *runner) procExited(ctx actor.Context, m *procExited) {
	if m.proc != r.proc || r.phase == stopping {
		return
	}
	r.proc = nil
	reason := fmt.Sprintf("it stopped (%s)", exitReason(m.proc.err))
	r.log.Warn("the agent stopped", "reason", exitReason(m.proc.err))
	if t := r.turn; t != nil {
		r.turn = nil
		r.client.endTurn(t.Chat, t.TurnID)
		r.send(ctx, &agentmsg.TurnEnded{Chat: t.Chat, TurnID: t.TurnID, Err: "the agent stopped: " + exitReason(m.proc.err)})
	}
	// Its terminals' ids died with it.
	r.client.releaseOpen(stopWait, false)

	now := time.Now()
	recent := r.crashes[:0]
	for _, at := range r.crashes {
		if now.Sub(at) < r.opts.RestartWindow {
			recent = append(recent, at)
		}
	}
	r.crashes = append(recent, now)
	id := r.sessionID
	if id == "" && r.canLoad {
		id = r.spec.AgentSessionID
	}
	switch {
	case !r.canLoad || id == "":
		r.lose(ctx, reason+" and cannot resume the conversation")
	case len(r.crashes) > r.opts.RestartLimit:
		r.lose(ctx, fmt.Sprintf("%s, %d times within %s; it is not started again", reason, len(r.crashes), r.opts.RestartWindow))
	default:
		r.sessionID = id
		r.restarting, r.restartReason = true, reason
		r.start(ctx)
	}
}

// fail ends a process that could not be brought up, and the agent with it.
func (r *runner) fail(ctx actor.Context, reason string) {
	if p := r.proc; p != nil {
		r.proc = nil
		// Stopping it waits up to the kill grace; it is stopped on a goroutine.
		r.goCall(func() { p.terminate(r.opts.KillGrace, r.log) })
	}
	r.lose(ctx, reason)
}

// lose says the agent is lost; every prompt waiting, and every one after, ends
// with the reason.
func (r *runner) lose(ctx actor.Context, reason string) {
	r.log.Warn("the agent is lost", "reason", reason)
	r.phase, r.lostReason = lost, reason
	r.send(ctx, &agentmsg.Lost{Reason: reason})
	for _, p := range r.queue {
		r.send(ctx, &agentmsg.TurnEnded{Chat: p.Chat, TurnID: p.TurnID, Err: "the agent is not running: " + reason})
	}
	r.queue = nil
}

// stop ends everything: calls cancelled, permissions answered cancelled, the
// process group terminated, the terminals the agent left open released, and the
// runner's goroutines waited for (each bounded).
func (r *runner) stop() {
	if r.phase == stopping || r.life == nil {
		return
	}
	r.phase = stopping
	r.cancel()
	r.client.close()
	if p := r.proc; p != nil {
		p.terminate(r.opts.KillGrace, r.log)
	}
	r.client.releaseOpen(stopWait, true)
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopWait):
		r.log.Warn("the agent runner stopped with goroutines still running", "waited", stopWait)
	}
}

// errorText is what an error from the agent says, for a person: a JSON-RPC error's
// message and detail, not its JSON.
func errorText(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		if data, ok := re.Data.(map[string]any); ok {
			if s, ok := data["error"].(string); ok && s != "" {
				return re.Message + ": " + s
			}
			if s, ok := data["details"].(string); ok && s != "" {
				return re.Message + ": " + s
			}
		}
		return re.Message
	}
	return err.Error()
}
