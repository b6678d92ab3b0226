package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// recorder is a client that keeps what the agent streams and answers nothing else.
type recorder struct {
	mu   sync.Mutex
	said strings.Builder
	kind []string
}

func (r *recorder) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch u := n.Update; {
	case u.AgentMessageChunk != nil:
		r.kind = append(r.kind, "say")
		r.said.WriteString(u.AgentMessageChunk.Content.Text.Text)
	case u.AgentThoughtChunk != nil:
		r.kind = append(r.kind, "think")
	}
	return nil
}

func (r *recorder) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("allow")}, nil
}

func (r *recorder) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (r *recorder) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (r *recorder) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (r *recorder) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, nil
}

func (r *recorder) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, nil
}

func (r *recorder) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, nil
}

func (r *recorder) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, nil
}

// TestScriptAgentSpeaksACP: built and run as a process, the agent answers a client
// over stdio: it says what it is told in chunks, thinks, asks, and refuses to load
// a session unless started with --load.
func TestScriptAgentSpeaksACP(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "scriptagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	conn := acp.NewClientSideConnection(r, stdin, stdout)
	init, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if init.AgentCapabilities.LoadSession {
		t.Errorf("loadSession offered without --load")
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	res, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId,
		Prompt: []acp.ContentBlock{acp.TextBlock("say hello there\nthink a thought\nask")}})
	if err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	if res.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stop reason %q", res.StopReason)
	}
	r.mu.Lock()
	said, kinds := r.said.String(), strings.Join(r.kind, ",")
	r.mu.Unlock()
	if said != "hello thereallowed" || kinds != "say,say,say,think,think,say,say,say" {
		t.Errorf("said %q in %s", said, kinds)
	}
	if _, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: "x", Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err == nil {
		t.Errorf("session/load succeeded without --load")
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the agent did not exit cleanly once its stdin closed: %v", err)
	}
}
