package mcphost

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/session"
	"github.com/termhost/termhost/actors/shells"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages/toolterm"
)

// Config is what the MCP endpoint is made with.
type Config struct {
	System *actor.ActorSystem
	Root   *actor.PID
	Auth   *auth.Store
	// Tools is the families offered (default both).
	Tools Families
	// DefaultDirectory is a new session's working directory when the URL names none.
	DefaultDirectory string
	Version          string
	Logger           *slog.Logger
}

// Endpoint serves /mcp.
type Endpoint struct {
	cfg     Config
	handler *sdk.StreamableHTTPHandler

	// mu guards bindings: one per signed-in URL (token, session, chat, tools), so
	// every request and every MCP session of a client lands on the same binding,
	// whether its protocol version keeps sessions or not.
	mu       sync.Mutex
	bindings map[bindingKey]*binding

	// tokens are the session tokens minted for the agents sessions run (see
	// SessionToken): tokenSessions maps a token's hash to its session,
	// sessionTokens a session to its token. Guarded by tokensMu.
	tokensMu      sync.Mutex
	tokenSessions map[[32]byte]string
	sessionTokens map[string]string
}

// bindingKey is what a request's URL binds it to.
type bindingKey struct {
	token                [32]byte // sha256 of the token
	session, chat, tools string
}

// New makes the endpoint.
func New(cfg Config) *Endpoint {
	if cfg.Tools == "" {
		cfg.Tools = Both
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Endpoint{cfg: cfg, bindings: map[bindingKey]*binding{}, tokenSessions: map[[32]byte]string{}, sessionTokens: map[string]string{}}
	e.handler = sdk.NewStreamableHTTPHandler(e.serverFor, &sdk.StreamableHTTPOptions{
		// The host checks Host names itself, with its own --allow-origin list.
		DisableLocalhostProtection: true,
		SessionTimeout:             30 * time.Minute,
	})
	return e
}

// token is what a request signs in with: ?tkn=, else a Bearer header.
func token(r *http.Request) string {
	if t := r.URL.Query().Get("tkn"); t != "" {
		return t
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
	}
	return ""
}

// sessionTokenPrefix starts a session token, told apart from a users-file token
// (th_…) at a glance in a log or a config.
const sessionTokenPrefix = "thsess_"

// SessionToken is the token the agent a session runs signs in to /mcp with, minted
// the first time it is asked for (an agent that restarts gets the same one). It is
// valid for URLs naming that session (?session=) alone, and only while this host
// runs: it is held in memory, never written. A connection signed in with it acts with
// the rights of the person who made the session, as the users file says now; for a
// session whose maker is unknown (or no longer signs in), with the owner role's
// terminal grants.
func (e *Endpoint) SessionToken(session string) string {
	e.tokensMu.Lock()
	defer e.tokensMu.Unlock()
	if t, ok := e.sessionTokens[session]; ok {
		return t
	}
	var buf [32]byte
	_, _ = rand.Read(buf[:])
	t := sessionTokenPrefix + hex.EncodeToString(buf[:])
	e.sessionTokens[session] = t
	e.tokenSessions[sha256.Sum256([]byte(t))] = session
	return t
}

// sessionOf is the session a session token is for, if token is one.
func (e *Endpoint) sessionOf(token string) (string, bool) {
	if !strings.HasPrefix(token, sessionTokenPrefix) {
		return "", false
	}
	e.tokensMu.Lock()
	defer e.tokensMu.Unlock()
	s, ok := e.tokenSessions[sha256.Sum256([]byte(token))]
	return s, ok
}

// agentGrants are what a session token carries when the session's maker is unknown:
// the terminal grants, the agent shell tools' whole business.
var agentGrants = []string{auth.GroupTerminalRead, auth.GroupTerminalWrite}

// agentPrincipal is who a connection signed in with a session token acts as: the
// session's maker, else the owner role's terminal grants.
func (e *Endpoint) agentPrincipal(creator string) auth.Principal {
	if p, ok := e.cfg.Auth.UserPrincipal(creator); ok {
		return p
	}
	return e.cfg.Auth.RolePrincipal(auth.RoleOwner, auth.RoleOwner, agentGrants...)
}

// ServeHTTP signs the request in and hands it to the SDK.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if sess, ok := e.sessionOf(token(r)); ok {
		if r.URL.Query().Get("session") != sess {
			http.Error(w, "termhost: this token is valid for session "+sess+" only (?session=)", http.StatusForbidden)
			return
		}
	} else if _, ok := e.cfg.Auth.Authenticate(token(r)); !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termhost"`)
		http.Error(w, "termhost: sign in with ?tkn=TOKEN or Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return
	}
	if _, err := e.binding(r); err != nil {
		http.Error(w, "termhost: "+err.Error(), http.StatusBadRequest)
		return
	}
	e.handler.ServeHTTP(w, r)
}

func keyOf(r *http.Request) bindingKey {
	q := r.URL.Query()
	return bindingKey{token: sha256.Sum256([]byte(token(r))), session: q.Get("session"), chat: q.Get("chat"), tools: q.Get("tools")}
}

// binding is the request's binding, made on its first request. A URL that names no
// session gets a session made for it then, which the same URL finds again: an agent
// that reconnects finds its shells where it left them. Agents that must not share
// shells name a session each (?session=).
func (e *Endpoint) binding(r *http.Request) (*binding, error) {
	key := keyOf(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	if b := e.bindings[key]; b != nil {
		return b, nil
	}
	b, err := e.bind(r)
	if err != nil {
		return nil, err
	}
	e.makeServer(b)
	e.bindings[key] = b
	return b, nil
}

// forget drops a binding whose session is gone, so the next request binds anew.
func (e *Endpoint) forget(b *binding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, x := range e.bindings {
		if x == b {
			delete(e.bindings, k)
		}
	}
}

// binding is one MCP connection: who it is, the session and chat it acts in, and the
// wakes it has not yet been shown.
type binding struct {
	e     *Endpoint
	token string
	// agent says token is a session token (SessionToken): the connection acts as
	// the session's creator.
	agent   bool
	creator string
	session string
	chat    string
	tools   Families
	service *actor.PID
	server  *sdk.Server

	mu      sync.Mutex // guards pending
	pending []shells.WakeNotice
	// calls numbers the connection's tool calls, for the claim of a shell one opens.
	calls atomic.Int64
}

// serverFor is the SDK's server for a request: its binding's, made by ServeHTTP.
func (e *Endpoint) serverFor(r *http.Request) *sdk.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b := e.bindings[keyOf(r)]; b != nil {
		return b.server
	}
	return nil
}

// makeServer makes a binding's MCP server with its tools, and attaches it to its
// session's shells for wakes.
func (e *Endpoint) makeServer(b *binding) {
	b.server = sdk.NewServer(&sdk.Implementation{Name: "termhost", Title: "termhost agent shells", Version: e.cfg.Version}, &sdk.ServerOptions{
		Instructions:       "Shells on this host persist between calls and are watched by people. Use monitor (or mode=async) to wait for something; you are woken with what happened.",
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		Capabilities:       &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}},
	})
	for _, t := range toolsFor(b.tools) {
		b.server.AddTool(&sdk.Tool{Name: t.name, Description: t.desc, InputSchema: t.schema}, b.call)
	}
	b.server.AddResourceTemplate(&sdk.ResourceTemplate{Name: "shell", URITemplate: "ahp-terminal:/termhost-command/{chat}/{shell}",
		Description: "An agent shell's screen and status; updated when a wake concerns it.", MIMEType: "text/plain"}, b.readResource)
	e.system().Root.Send(b.service, &shells.Attach{Chat: b.chat, Sink: b})
}

func (e *Endpoint) system() *actor.ActorSystem { return e.cfg.System }

// request asks an actor and waits for its answer.
func (e *Endpoint) request(ctx context.Context, pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	f := e.system().Root.RequestFuture(pid, msg, timeout)
	type answer struct {
		res any
		err error
	}
	done := make(chan answer, 1)
	go func() { res, err := f.Result(); done <- answer{res, err} }()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bind finds or makes the connection's session and chat and its shell service.
func (e *Endpoint) bind(r *http.Request) (*binding, error) {
	q := r.URL.Query()
	want, err := ParseFamilies(q.Get("tools"))
	if err != nil {
		return nil, err
	}
	if q.Get("tools") == "" {
		want = ""
	}
	tools, err := e.cfg.Tools.narrow(want)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), channel.RequestTimeout)
	defer cancel()
	sess, chat := q.Get("session"), q.Get("chat")
	if sess == "" {
		var buf [8]byte
		_, _ = rand.Read(buf[:])
		sess = "ahp-session:/mcp-" + hex.EncodeToString(buf[:])
		dir := q.Get("cwd")
		if dir == "" {
			dir = e.cfg.DefaultDirectory
		}
		var dirs []string
		if dir != "" {
			dirs = []string{dir}
		}
		p, _ := e.cfg.Auth.Authenticate(token(r))
		res, err := e.request(ctx, e.cfg.Root, &session.Create{URI: sess, WorkingDirectories: dirs, By: p.User}, channel.RequestTimeout)
		if err != nil {
			return nil, fmt.Errorf("creating a session: %w", err)
		}
		sr, _ := res.(*session.Result)
		if sr == nil || sr.Err != nil {
			return nil, fmt.Errorf("creating a session: %v", sr)
		}
		if chat == "" {
			chat = sr.Chat
		}
	}
	if chat == "" {
		chat = sess + "/chat"
	}
	res, err := e.request(ctx, e.cfg.Root, &session.ToolServiceQuery{Session: sess}, channel.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("finding the session's shells: %w", err)
	}
	tr, _ := res.(*session.ToolServiceResult)
	if tr == nil || tr.Err != nil || tr.PID == nil {
		if tr != nil && tr.Err != nil {
			return nil, errors.New(tr.Err.Message)
		}
		return nil, fmt.Errorf("session %s has no shell service", sess)
	}
	_, agent := e.sessionOf(token(r))
	return &binding{e: e, token: token(r), agent: agent, creator: tr.Creator, session: sess, chat: chat, tools: tools, service: tr.PID}, nil
}

// Notice takes a wake for this connection: it is queued for the next tool result and
// announced now as a log message and an update of the shell's resource.
func (b *binding) Notice(n shells.WakeNotice) {
	b.mu.Lock()
	b.pending = append(b.pending, n)
	if len(b.pending) > 100 {
		b.pending = b.pending[len(b.pending)-100:]
	}
	b.mu.Unlock()
	server := b.server
	if server == nil {
		return
	}
	// Off the service's mailbox: a notification may wait on a slow client.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ss := range server.Sessions() {
			_ = ss.Log(ctx, &sdk.LoggingMessageParams{Level: "notice", Logger: "termhost.wake",
				Data: map[string]any{"shell_id": n.ShellID, "bash_id": n.ShellID, "monitor_id": n.Monitor, "terminal": n.Terminal, "text": n.Text, "at": n.At.UTC().Format(time.RFC3339Nano)}})
		}
		_ = server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: n.Terminal})
	}()
}

// takePending hands over the wakes not yet shown in a tool result.
func (b *binding) takePending() []shells.WakeNotice {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending
	b.pending = nil
	return p
}

// principal is who the connection's token names now: a revoked token or a changed
// role counts from the next call.
func (b *binding) principal() auth.Principal {
	if b.agent {
		return b.e.agentPrincipal(b.creator)
	}
	p, _ := b.e.cfg.Auth.Authenticate(b.token)
	return p
}

// readResource answers a shell's resource with its screen and status.
func (b *binding) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	_, key, ok := toolterm.Parse(uri)
	id, agent := strings.CutPrefix(key, toolterm.AgentShellKeyPrefix)
	if !ok || !agent {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	res, err := b.e.request(ctx, b.service, &shells.Read{Caller: b.caller(shells.PTYFamily, ""), ShellID: id, Screen: true}, channel.RequestTimeout)
	if err != nil {
		return nil, err
	}
	r, _ := res.(*shells.Result)
	if r == nil || r.Err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: r.Output + "\n" + r.Status}}}, nil
}

func (b *binding) caller(f shells.Family, callID string) shells.Caller {
	return shells.Caller{Principal: b.principal(), Chat: b.chat, ToolCallID: callID, Family: f}
}

// args is a tool call's arguments, every family's parameters in one flat object.
type args struct {
	Command         string   `json:"command"`
	Timeout         *float64 `json:"timeout"`
	Mode            string   `json:"mode"`
	Description     string   `json:"description"`
	RunInBackground bool     `json:"run_in_background"`
	Cols            int      `json:"cols"`
	Rows            int      `json:"rows"`
	ShellID         string   `json:"shell_id"`
	BashID          string   `json:"bash_id"`
	Filter          string   `json:"filter"`
	View            string   `json:"view"`
	Input           string   `json:"input"`
	Keys            []string `json:"keys"`
	Submit          bool     `json:"submit"`
	All             bool     `json:"all"`
	Action          string   `json:"action"`
	TimeoutMS       int64    `json:"timeout_ms"`
	Persistent      bool     `json:"persistent"`
	MonitorID       string   `json:"monitor_id"`
}

func (a args) shell() string {
	if a.BashID != "" {
		return a.BashID
	}
	return a.ShellID
}

// call runs one tool call.
func (b *binding) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var a args
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return toolError(fmt.Errorf("the arguments do not fit %s's parameters: %v", req.Params.Name, err)), nil
		}
	}
	family := shells.PTYFamily
	if b.tools == Host {
		family = shells.HostFamily
	}
	name := req.Params.Name
	switch name {
	case "read_bash", "write_bash", "bash_shutdown", "list_bash":
		family = shells.HostFamily
	}
	c := b.caller(family, fmt.Sprintf("mcp-%s-%d", name, b.calls.Add(1)))
	var msg any
	timeout := channel.RequestTimeout
	switch name {
	case "bash":
		run := &shells.Run{Caller: c, Command: a.Command, Cols: a.Cols, Rows: a.Rows, Description: a.Description,
			Background: a.Mode == "async" || a.RunInBackground}
		if a.Mode != "" && a.Mode != "sync" && a.Mode != "async" {
			return toolError(fmt.Errorf("mode must be sync or async, not %q", a.Mode)), nil
		}
		if a.Timeout != nil && *a.Timeout > 0 {
			if b.tools == PTY {
				run.Deadline = time.Duration(*a.Timeout * float64(time.Second))
			} else {
				run.Wait = time.Duration(*a.Timeout * float64(time.Millisecond))
			}
		}
		timeout = 2*time.Minute + run.Wait
		msg = run
	case "read_bash", "bash_output":
		msg = &shells.Read{Caller: c, ShellID: a.shell(), Filter: a.Filter, Screen: a.View == "screen"}
		if a.View != "" && a.View != "log" && a.View != "screen" {
			return toolError(fmt.Errorf("view must be log or screen, not %q", a.View)), nil
		}
	case "write_bash":
		msg = &shells.Write{Caller: c, ShellID: a.shell(), Text: a.Command, Submit: true}
	case "bash_input":
		msg = &shells.Write{Caller: c, ShellID: a.shell(), Text: a.Input, Keys: a.Keys, Submit: a.Submit}
	case "bash_resize":
		msg = &shells.Resize{Caller: c, ShellID: a.shell(), Cols: a.Cols, Rows: a.Rows}
	case "bash_shutdown":
		msg = &shells.Kill{Caller: c, ShellID: a.shell(), Dispose: true}
	case "kill_bash":
		all := a.All || strings.EqualFold(a.shell(), "all")
		id := a.shell()
		if all {
			id = ""
		}
		msg = &shells.Kill{Caller: c, ShellID: id, All: all}
	case "list_bash":
		msg = &shells.List{Caller: c}
	case "monitor":
		w := &shells.Watch{Caller: c, ShellID: a.shell(), Command: a.Command, Filter: a.Filter, Description: a.Description,
			Timeout: time.Duration(a.TimeoutMS) * time.Millisecond, Persistent: a.Persistent, MonitorID: a.MonitorID}
		switch a.Action {
		case "", "create":
		case "rearm":
			w.Rearm = true
		default:
			return toolError(fmt.Errorf("action must be create or rearm, not %q", a.Action)), nil
		}
		msg = w
	case "powershell":
		return b.result(&shells.Result{Status: "PowerShell does not run on this host: it runs bash. Use the bash tool for this command."}, name), nil
	default:
		return toolError(fmt.Errorf("no tool %q here", name)), nil
	}
	res, err := b.e.request(ctx, b.service, msg, timeout)
	if err != nil {
		if errors.Is(err, actor.ErrDeadLetter) {
			b.e.forget(b)
			return toolError(errors.New("this connection's session has ended; connect again for a new one")), nil
		}
		return toolError(fmt.Errorf("the host did not answer: %v", err)), nil
	}
	r, _ := res.(*shells.Result)
	if r == nil {
		return toolError(errors.New("the host gave no answer")), nil
	}
	if r.Err != nil {
		out := toolError(r.Err)
		b.prependWakes(out, nil, false)
		return out, nil
	}
	return b.result(r, name), nil
}

// result is a tool's answer: the text a model reads, and the same facts structured.
func (b *binding) result(r *shells.Result, tool string) *sdk.CallToolResult {
	var text strings.Builder
	if r.Output != "" {
		text.WriteString(r.Output)
		if !strings.HasSuffix(r.Output, "\n") {
			text.WriteByte('\n')
		}
	}
	if len(r.Shells) > 0 && tool == "list_bash" || tool == "kill_bash" && r.ShellID == "" {
		for _, s := range r.Shells {
			state := "idle"
			switch {
			case s.Exited && s.ExitCode != nil:
				state = fmt.Sprintf("exited with code %d", *s.ExitCode)
			case s.Exited:
				state = "exited"
			case s.Running:
				state = "running `" + s.Command + "`"
			}
			fmt.Fprintf(&text, "%s: %s (%s)\n", s.ID, state, s.Terminal)
		}
		if len(r.Shells) == 0 {
			text.WriteString("no shells yet\n")
		}
	}
	text.WriteString(r.Status)
	structured := map[string]any{"running": r.Running, "status": r.Status}
	if r.ShellID != "" {
		structured["shell_id"], structured["bash_id"], structured["terminal"] = r.ShellID, r.ShellID, r.Terminal
	}
	if r.ExitCode != nil {
		structured["exit_code"] = *r.ExitCode
	}
	if r.MonitorID != "" {
		structured["monitor_id"] = r.MonitorID
	}
	if r.Shells != nil {
		structured["shells"] = r.Shells
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text.String()}}, StructuredContent: structured}
	b.prependWakes(out, r, readsShell(tool))
	return out
}

// readsShell says whether a tool's answer shows what its shell printed up to now.
func readsShell(tool string) bool {
	switch tool {
	case "bash_output", "read_bash", "bash_input", "write_bash":
		return true
	}
	return false
}

// prependWakes puts the wakes not yet shown before a tool result's own text, but
// those the result itself says better: the end of the command it reports (an
// answer to bash_input that finished a command the call before left waiting),
// and a question of a shell whose output it shows as it is now.
func (b *binding) prependWakes(out *sdk.CallToolResult, r *shells.Result, readsShell bool) {
	wakes := slices.DeleteFunc(b.takePending(), func(w shells.WakeNotice) bool {
		if r == nil {
			return false
		}
		return r.EndShown != 0 && w.Command == r.EndShown || w.WaitsForInput && readsShell && w.ShellID == r.ShellID
	})
	if len(wakes) == 0 {
		return
	}
	var text strings.Builder
	text.WriteString("While you were away:\n")
	for _, w := range wakes {
		text.WriteString(w.Text)
		if !strings.HasSuffix(w.Text, "\n") {
			text.WriteByte('\n')
		}
	}
	out.Content = append([]sdk.Content{&sdk.TextContent{Text: text.String()}}, out.Content...)
}

func toolError(err error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
}
