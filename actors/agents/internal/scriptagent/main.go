// Command scriptagent is an ACP agent with no model, for tests: it reads the text of
// each prompt as a script, one command a line, and does what each line says over the
// Agent Client Protocol (github.com/coder/acp-go-sdk), so a test drives every part of
// a client (streamed text, thoughts, tool calls, permissions, terminals, files, MCP)
// from the prompt it sends.
//
// Commands:
//
//	say TEXT          streams TEXT as an agent message, in three chunks (each say a
//	                  message of its own, with an id)
//	think TEXT        streams TEXT as a thought, in two chunks
//	plan A | B | …    sends a plan whose entries are A, B, … (the first in progress)
//	ask               asks permission for a tool call; says "allowed" or "refused"
//	run CMD ARGS…     runs CMD in a client terminal as a tool call; says "exit N: OUTPUT"
//	read PATH [LINE [LIMIT]]
//	                  reads a file (from LINE, 1-based, for LIMIT lines) through the
//	                  client; says its text or "error: …"
//	write PATH TEXT   writes TEXT to a file through the client; says "wrote PATH" or "error: …"
//	sleep MS          waits MS milliseconds; a cancel ends the turn as cancelled
//	crash             exits with status 1, there and then
//	pid               says its process id
//	mcp bash CMD      calls the bash tool of the session's MCP server; says its text
//
// With --load it offers session/load, and loading any id succeeds (it keeps nothing).
// It logs what it does to stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	load := flag.Bool("load", false, "offer session/load")
	flag.Parse()
	log.SetPrefix("scriptagent: ")
	log.SetFlags(0)
	a := &agent{load: *load, sessions: map[acp.SessionId]*sessionInfo{}}
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	log.Printf("started (pid %d, load %v)", os.Getpid(), *load)
	<-a.conn.Done()
	log.Printf("the client went; exiting")
}

type agent struct {
	conn *acp.AgentSideConnection
	load bool
	ids  atomic.Int64

	mu       sync.Mutex // guards sessions
	sessions map[acp.SessionId]*sessionInfo
}

type sessionInfo struct {
	cwd string
	mcp []acp.McpServer
}

var _ acp.Agent = (*agent)(nil)
var _ acp.AgentLoader = (*agent)(nil)

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	caps, _ := json.Marshal(p.ClientCapabilities)
	log.Printf("initialize: client capabilities %s", caps)
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{LoadSession: a.load, McpCapabilities: acp.McpCapabilities{Http: true}},
		AgentInfo:         &acp.Implementation{Name: "scriptagent", Version: "1"},
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id := acp.SessionId(fmt.Sprintf("script-%d-%d", os.Getpid(), a.ids.Add(1)))
	a.remember(id, p.Cwd, p.McpServers)
	log.Printf("session/new %s in %s with %d MCP servers", id, p.Cwd, len(p.McpServers))
	return acp.NewSessionResponse{SessionId: id}, nil
}

func (a *agent) LoadSession(_ context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	if !a.load {
		return acp.LoadSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionLoad)
	}
	a.remember(p.SessionId, p.Cwd, p.McpServers)
	log.Printf("session/load %s in %s", p.SessionId, p.Cwd)
	return acp.LoadSessionResponse{}, nil
}

func (a *agent) remember(id acp.SessionId, cwd string, servers []acp.McpServer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[id] = &sessionInfo{cwd: cwd, mcp: servers}
}

func (a *agent) session(id acp.SessionId) *sessionInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil {
		return s
	}
	return &sessionInfo{}
}

func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	// The SDK cancels the running prompt's context itself.
	log.Printf("session/cancel %s", p.SessionId)
	return nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

// errCancelled ends a turn as cancelled.
var errCancelled = errors.New("cancelled")

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	var text strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
			text.WriteByte('\n')
		}
	}
	t := &turn{a: a, ctx: ctx, id: p.SessionId}
	for line := range strings.SplitSeq(text.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		log.Printf("%s: %s", p.SessionId, line)
		if err := t.do(line); err != nil {
			if errors.Is(err, errCancelled) || ctx.Err() != nil {
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
			}
			return acp.PromptResponse{}, err
		}
	}
	if ctx.Err() != nil {
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// turn runs one prompt's commands.
type turn struct {
	a   *agent
	ctx context.Context
	id  acp.SessionId
}

func (t *turn) update(u acp.SessionUpdate) error {
	return t.a.conn.SessionUpdate(t.ctx, acp.SessionNotification{SessionId: t.id, Update: u})
}

// say streams text as one message, in chunks that name it.
func (t *turn) say(text string) error {
	id := fmt.Sprintf("msg-%d-%d", os.Getpid(), t.a.ids.Add(1))
	for _, c := range chunks(text, 3) {
		if err := t.update(acp.SessionUpdate{AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{Content: acp.TextBlock(c), MessageId: &id}}); err != nil {
			return err
		}
	}
	return nil
}

func (t *turn) toolCallID() acp.ToolCallId {
	return acp.ToolCallId(fmt.Sprintf("call-%d-%d", os.Getpid(), t.a.ids.Add(1)))
}

func (t *turn) do(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "say":
		return t.say(rest)
	case "think":
		for _, c := range chunks(rest, 2) {
			if err := t.update(acp.UpdateAgentThoughtText(c)); err != nil {
				return err
			}
		}
		return nil
	case "plan":
		var entries []acp.PlanEntry
		for i, step := range strings.Split(rest, "|") {
			status := acp.PlanEntryStatusPending
			if i == 0 {
				status = acp.PlanEntryStatusInProgress
			}
			entries = append(entries, acp.PlanEntry{Content: strings.TrimSpace(step), Priority: acp.PlanEntryPriorityMedium, Status: status})
		}
		return t.update(acp.UpdatePlan(entries...))
	case "ask":
		return t.ask()
	case "run":
		return t.run(strings.Fields(rest))
	case "read":
		args := strings.Fields(rest)
		if len(args) == 0 {
			return t.say("error: read what?")
		}
		req := acp.ReadTextFileRequest{SessionId: t.id, Path: args[0]}
		if len(args) > 1 {
			n, _ := strconv.Atoi(args[1])
			req.Line = &n
		}
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			req.Limit = &n
		}
		res, err := t.a.conn.ReadTextFile(t.ctx, req)
		if err != nil {
			return t.say("error: " + errorText(err))
		}
		return t.say(res.Content)
	case "write":
		path, text, _ := strings.Cut(rest, " ")
		if _, err := t.a.conn.WriteTextFile(t.ctx, acp.WriteTextFileRequest{SessionId: t.id, Path: path, Content: text}); err != nil {
			return t.say("error: " + errorText(err))
		}
		return t.say("wrote " + path)
	case "sleep":
		ms, err := strconv.Atoi(rest)
		if err != nil {
			return t.say("error: sleep takes milliseconds")
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return nil
		case <-t.ctx.Done():
			return errCancelled
		}
	case "crash":
		log.Printf("crashing as asked")
		os.Exit(1)
		return nil
	case "pid":
		return t.say(strconv.Itoa(os.Getpid()))
	case "mcp":
		return t.mcp(rest)
	default:
		return t.say("unknown command: " + verb)
	}
}

// ask announces a tool call, asks permission for it, and says what came of it.
func (t *turn) ask() error {
	id := t.toolCallID()
	if err := t.update(acp.StartToolCall(id, "Touch the file",
		acp.WithStartKind(acp.ToolKindEdit), acp.WithStartStatus(acp.ToolCallStatusPending))); err != nil {
		return err
	}
	res, err := t.a.conn.RequestPermission(t.ctx, acp.RequestPermissionRequest{
		SessionId: t.id,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: id, Title: acp.Ptr("Touch the file"), Kind: acp.Ptr(acp.ToolKindEdit)},
		Options: []acp.PermissionOption{
			{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"},
			{Kind: acp.PermissionOptionKindRejectOnce, Name: "Refuse", OptionId: "reject"},
		},
	})
	if err != nil {
		return err
	}
	allowed := res.Outcome.Selected != nil && res.Outcome.Selected.OptionId == "allow"
	status, word := acp.ToolCallStatusFailed, "refused"
	if allowed {
		status, word = acp.ToolCallStatusCompleted, "allowed"
	}
	if err := t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(status))); err != nil {
		return err
	}
	if res.Outcome.Cancelled != nil {
		return errCancelled // ACP: the client cancelled the turn
	}
	return t.say(word)
}

// run runs a command in a client terminal as a tool call, the way an agent's shell
// tool does: create, show, wait, read, complete, release.
func (t *turn) run(argv []string) error {
	if len(argv) == 0 {
		return t.say("error: run what?")
	}
	id := t.toolCallID()
	title := "Run " + strings.Join(argv, " ")
	if err := t.update(acp.StartToolCall(id, title, acp.WithStartKind(acp.ToolKindExecute),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(map[string]any{"command": argv}))); err != nil {
		return err
	}
	created, err := t.a.conn.CreateTerminal(t.ctx, acp.CreateTerminalRequest{SessionId: t.id, Command: argv[0], Args: argv[1:]})
	if err != nil {
		_ = t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		return t.say("error: " + errorText(err))
	}
	term := []acp.ToolCallContent{acp.ToolTerminalRef(created.TerminalId)}
	if err := t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusInProgress), acp.WithUpdateContent(term))); err != nil {
		return err
	}
	exit, err := t.a.conn.WaitForTerminalExit(t.ctx, acp.WaitForTerminalExitRequest{SessionId: t.id, TerminalId: created.TerminalId})
	if err != nil {
		if t.ctx.Err() != nil {
			kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = t.a.conn.ReleaseTerminal(kctx, acp.ReleaseTerminalRequest{SessionId: t.id, TerminalId: created.TerminalId})
			return errCancelled
		}
		return t.say("error: " + errorText(err))
	}
	out, err := t.a.conn.TerminalOutput(t.ctx, acp.TerminalOutputRequest{SessionId: t.id, TerminalId: created.TerminalId})
	if err != nil {
		return t.say("error: " + errorText(err))
	}
	status := acp.ToolCallStatusCompleted
	if exit.ExitCode == nil || *exit.ExitCode != 0 {
		status = acp.ToolCallStatusFailed
	}
	if err := t.update(acp.UpdateToolCall(id, acp.WithUpdateStatus(status), acp.WithUpdateContent(term))); err != nil {
		return err
	}
	if _, err := t.a.conn.ReleaseTerminal(t.ctx, acp.ReleaseTerminalRequest{SessionId: t.id, TerminalId: created.TerminalId}); err != nil {
		return t.say("error: " + errorText(err))
	}
	code := "none"
	if exit.ExitCode != nil {
		code = strconv.Itoa(*exit.ExitCode)
	}
	return t.say(fmt.Sprintf("exit %s: %s", code, strings.TrimSpace(out.Output)))
}

// mcp calls a tool of the session's first HTTP MCP server: "bash CMD" runs CMD.
func (t *turn) mcp(rest string) error {
	tool, command, _ := strings.Cut(rest, " ")
	var server *acp.McpServerHttpInline
	for _, s := range t.a.session(t.id).mcp {
		if s.Http != nil {
			server = s.Http
			break
		}
	}
	if server == nil {
		return t.say("error: no MCP server")
	}
	headers := http.Header{}
	for _, h := range server.Headers {
		headers.Add(h.Name, h.Value)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "scriptagent", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: server.Url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: withHeaders{headers}}}
	cs, err := client.Connect(t.ctx, transport, nil)
	if err != nil {
		return t.say("error: " + err.Error())
	}
	defer cs.Close()
	res, err := cs.CallTool(t.ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"command": command}})
	if err != nil {
		return t.say("error: " + err.Error())
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return t.say(strings.TrimSpace(text.String()))
}

type withHeaders struct{ h http.Header }

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range w.h {
		r.Header[k] = vs
	}
	return http.DefaultTransport.RoundTrip(r)
}

// chunks cuts s into n pieces of about the same number of runes (fewer when s is
// shorter), so a client sees text arrive in parts.
func chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) < n {
		return []string{s}
	}
	out := make([]string, 0, n)
	size := (len(r) + n - 1) / n
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// errorText is what a client's error said.
func errorText(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		if data, ok := re.Data.(map[string]any); ok {
			if s, ok := data["error"].(string); ok && s != "" {
				return s
			}
		}
		return re.Message
	}
	return err.Error()
}
