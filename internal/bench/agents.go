package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/internal/bench/benchproc"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/messages"
)

// The agents scenario: sessions each with an ACP agent process of its own (the
// host's agent "bench", `termhost bench-agent`, which answers every prompt with one
// short agent_message_chunk and end_turn, no model), each driven by a client sending
// turns back to back, timed from the chat/turnStarted it dispatches to the
// chat/turnComplete it is sent. Its raw side is as many goroutines each driving a
// bench-agent process of its own directly over ACP (the SDK's client side: initialize,
// session/new, then session/prompt back to back), timed from the prompt sent to its
// answer and its chunk read: the same agents' work, minus the host.

// AgentProvider is the name a bench's started host gives the bench agent, the
// `provider` its sessions are made with.
const AgentProvider = "bench"

// agentsPrompt is the text of every turn; the bench agent answers it with
// benchproc.AgentReply.
const agentsPrompt = "hi"

func agentsSummary(s Sizes) string {
	return fmt.Sprintf("turns of %q to an ACP agent of the session's own (provider %q: `termhost bench-agent`, one %q chunk then end_turn) back to back, one client per session "+
		"(turnStarted sent → chat/turnComplete seen): %v session(s) for %v each; against as many goroutines each prompting a bench-agent process of its own over ACP directly",
		agentsPrompt, AgentProvider, benchproc.AgentReply, s.AgentSessionCounts, s.AgentsDuration)
}

func runAgents(ctx context.Context, e *env, r *report.Result) error {
	sz := e.sizes
	r.Params["sessions"] = sz.AgentSessionCounts
	r.Params["seconds"] = sz.AgentsDuration.Seconds()
	r.Params["prompt"] = agentsPrompt
	if len(e.cfg.AgentCommand) == 0 {
		return errors.New("no bench agent command (Config.AgentCommand): `termhost bench` sets it to its own bench-agent")
	}
	r.Params["agentCommand"] = e.cfg.AgentCommand

	counts := slices.Clone(sz.AgentSessionCounts)
	slices.Sort(counts)
	counts = slices.Compact(counts)
	hostless := ""
	for _, n := range counts {
		raw, err := e.rawAgentTurns(ctx, n, sz.AgentsDuration)
		if err != nil {
			return fmt.Errorf("raw, %d agent(s): %w", n, err)
		}
		var host turnRun
		if hostless == "" {
			host, err = e.hostAgentTurns(ctx, n, sz.AgentsDuration)
			var noAgent errNoAgent
			if errors.As(err, &noAgent) {
				hostless = noAgent.Error()
			} else if err != nil {
				return fmt.Errorf("%d session(s): %w", n, err)
			}
		}
		label := fmt.Sprintf("%d session(s), %v", n, sz.AgentsDuration)
		if hostless != "" {
			r.Add(report.Figure{Name: fmt.Sprintf("raw agent turns per second, %s, %d turns", label, raw.turns), Value: raw.rate(), Unit: report.UnitPerSecond})
			r.Add(report.Figure{Name: "raw agent turn p50, " + label, Value: percentile(raw.latencies, 0.5).Seconds(), Unit: report.UnitSeconds})
			r.Add(report.Figure{Name: "raw agent turn p99, " + label, Value: percentile(raw.latencies, 0.99).Seconds(), Unit: report.UnitSeconds})
			continue
		}
		label = fmt.Sprintf("%s, %d turns (raw %d)", label, host.turns, raw.turns)
		f := r.Add(report.Figure{Name: "turns per second, " + label, Value: host.rate(), Unit: report.UnitPerSecond}).WithRaw(raw.rate())
		if n > 1 && n == counts[len(counts)-1] {
			f.Judge("≥ 0.50 × raw", f.Ratio != nil && *f.Ratio >= 0.5)
		}
		r.Add(report.Figure{Name: "turn p50, " + label, Value: percentile(host.latencies, 0.5).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw.latencies, 0.5).Seconds())
		r.Add(report.Figure{Name: "turn p99, " + label, Value: percentile(host.latencies, 0.99).Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(raw.latencies, 0.99).Seconds())
	}
	if hostless != "" {
		r.Note("host side left out: %s; only the raw side was measured", hostless)
	}
	r.Note("each session's agent is warmed by one untimed turn first (its process started, initialize and session/new answered); so is each raw agent")
	r.Note("raw figures are %q driven over ACP by as many goroutines as there are sessions, from this process", e.cfg.AgentCommand)
	e.noteShared(r)
	return nil
}

// errNoAgent says the host has no bench agent: it was not started by the bench with
// one (an in-process host, or one at --url without it).
type errNoAgent struct{ msg string }

func (e errNoAgent) Error() string { return e.msg }

// hostAgentTurns makes n sessions with the bench agent, one client each, warms each
// with a turn, then sends turns back to back in all of them for d.
func (e *env) hostAgentTurns(ctx context.Context, n int, d time.Duration) (turnRun, error) {
	label := fmt.Sprintf("agents%d", n)
	ctls, closeCtls, err := e.dialCtls(ctx, label, n)
	defer closeCtls()
	if err != nil {
		return turnRun{}, err
	}
	noAgent := func(err error) error {
		switch {
		case e.cfg.InProcess:
			return errNoAgent{fmt.Sprintf("the in-process host has no agent %q (createSession: %v); run with --host process", AgentProvider, err)}
		case !e.cfg.Started:
			return errNoAgent{fmt.Sprintf("the host at %s has no agent %q (createSession: %v); serve it with --agent %s='termhost bench-agent'", e.cfg.URL, AgentProvider, err, AgentProvider)}
		}
		return fmt.Errorf("createSession: %w", err)
	}
	chats, closeChats, err := e.openChats(ctx, ctls, label, map[string]any{"provider": AgentProvider}, noAgent)
	defer closeChats()
	if err != nil {
		return turnRun{}, err
	}
	// One untimed turn each: the agent process started and its session made.
	agentTurn := func(ctx context.Context, k *wsclient.Control, c benchChat, id string) (bool, error) {
		return false, e.agentTurn(ctx, k, c.w, c.chat, id)
	}
	if _, err := e.firstTurns(ctx, ctls, chats, agentTurn); err != nil {
		return turnRun{}, err
	}
	return e.turnsBackToBack(ctx, ctls, chats, "agents", d, agentTurn)
}

// agentTurn sends one turn of agentsPrompt and waits for its chat/turnComplete.
func (e *env) agentTurn(ctx context.Context, k *wsclient.Control, w *wsclient.Watch, chat, turnID string) error {
	action := map[string]any{"type": messages.ChatTurnStarted, "turnId": turnID, "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"text": agentsPrompt, "origin": map[string]any{"kind": "user"}}}
	if err := k.Dispatch(ctx, chat, k.NextSeq(), action); err != nil {
		return err
	}
	for {
		env, err := nextEnvelope(ctx, k, w)
		if err != nil {
			return fmt.Errorf("waiting for chat/turnComplete: %w", err)
		}
		if env.RejectionReason != "" {
			return fmt.Errorf("%s was refused: %s", env.Type, env.RejectionReason)
		}
		if env.Type != messages.ChatTurnComplete && env.Type != messages.ChatError {
			continue
		}
		var a struct {
			TurnID string `json:"turnId"`
		}
		if json.Unmarshal(env.Action, &a) != nil || a.TurnID != turnID {
			continue
		}
		if env.Type == messages.ChatError {
			return fmt.Errorf("the turn ended in error: %s", env.Action)
		}
		return nil
	}
}

// rawAgentTurns starts workers bench-agent processes, each driven by a goroutine of
// its own over ACP: initialize, session/new and one untimed prompt, then prompts back
// to back for d.
func (e *env) rawAgentTurns(ctx context.Context, workers int, d time.Duration) (turnRun, error) {
	agents := make([]*rawAgent, 0, workers)
	defer func() {
		for _, a := range agents {
			a.close()
		}
	}()
	for range workers {
		a, err := startRawAgent(ctx, e.cfg.AgentCommand, e.cfg.WaitTimeout)
		if err != nil {
			return turnRun{}, err
		}
		agents = append(agents, a)
	}
	var mu sync.Mutex // guards out
	out := turnRun{}
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	deadline := start.Add(d)
	for _, a := range agents {
		g.Go(func() error {
			for time.Now().Before(deadline) {
				wctx, cancel := e.waitCtx(gctx)
				began := time.Now()
				err := a.prompt(wctx)
				cancel()
				if err != nil {
					return err
				}
				took := time.Since(began)
				mu.Lock()
				out.turns++
				out.latencies = append(out.latencies, took)
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	out.elapsed = time.Since(start)
	return out, err
}

// rawAgent is one agent process driven over ACP from this process.
type rawAgent struct {
	cmd     *exec.Cmd
	conn    *acp.ClientSideConnection
	client  *rawAgentClient
	session acp.SessionId
	stdin   io.Closer
}

func startRawAgent(ctx context.Context, argv []string, timeout time.Duration) (*rawAgent, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("raw: starting the agent %q: %w", argv, err)
	}
	c := &rawAgentClient{chunks: make(chan struct{}, 16)}
	a := &rawAgent{cmd: cmd, client: c, stdin: in, conn: acp.NewClientSideConnection(c, in, out)}
	a.conn.SetLogger(slog.New(slog.DiscardHandler))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := a.conn.Initialize(wctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		a.close()
		return nil, fmt.Errorf("raw: initialize: %w", err)
	}
	dir, _ := os.Getwd()
	s, err := a.conn.NewSession(wctx, acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
	if err != nil {
		a.close()
		return nil, fmt.Errorf("raw: session/new: %w", err)
	}
	a.session = s.SessionId
	if err := a.prompt(wctx); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// prompt sends one prompt and waits for its answer and its chunk.
func (a *rawAgent) prompt(ctx context.Context) error {
	res, err := a.conn.Prompt(ctx, acp.PromptRequest{SessionId: a.session, Prompt: []acp.ContentBlock{acp.TextBlock(agentsPrompt)}})
	if err != nil {
		return fmt.Errorf("raw: session/prompt: %w", err)
	}
	if res.StopReason != acp.StopReasonEndTurn {
		return fmt.Errorf("raw: the agent stopped with %q", res.StopReason)
	}
	select {
	case <-a.client.chunks:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("raw: waiting for the agent's chunk: %w", ctx.Err())
	}
}

// close ends the agent: its stdin closed, then killed if it has not gone.
func (a *rawAgent) close() {
	_ = a.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = a.cmd.Process.Kill()
		<-exited
	}
}

// rawAgentClient is the raw side's ACP client: it takes the agent's text chunks and
// offers nothing else.
type rawAgentClient struct {
	chunks chan struct{}
}

var _ acp.Client = (*rawAgentClient)(nil)

func (c *rawAgentClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if n.Update.AgentMessageChunk != nil {
		c.chunks <- struct{}{}
	}
	return nil
}

var errRawClient = errors.New("the bench's raw client offers no files, terminals or permissions")

func (c *rawAgentClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errRawClient
}

func (c *rawAgentClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errRawClient
}

func (c *rawAgentClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, errRawClient
}

func (c *rawAgentClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errRawClient
}

func (c *rawAgentClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errRawClient
}

func (c *rawAgentClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errRawClient
}

func (c *rawAgentClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errRawClient
}

func (c *rawAgentClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errRawClient
}
