package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/actors/delivery"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// Sign-in, roles and grants, over a real WebSocket: who may do what, what a refusal
// says, and that a refused action leaves no trace.

// addUser makes a token for a new user, as `termhost token add` does.
func (h *testHost) addUser(name, role string) string {
	h.t.Helper()
	tok, err := h.store.AddToken(name, role)
	if err != nil {
		h.t.Fatalf("token add %s %s: %v", name, role, err)
	}
	return tok
}

// dialAs connects with token ("" for none) and completes the handshake with subs as
// initialSubscriptions. It reports to t, so it may be used inside a subtest.
func (h *testHost) dialAs(t *testing.T, token, clientID string, subs ...string) (*conn, *client.InitializeResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl, err := client.Dial(ctx, h.url(token), nil)
	if err != nil {
		t.Fatalf("dial as %s: %v", clientID, err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	c := &conn{t: t, Conn: cl, clientID: clientID}
	res, err := c.Initialize(c.ctx(), clientID, subs...)
	if err != nil {
		t.Fatalf("initialize as %s: %v", clientID, err)
	}
	return c, res
}

// sync makes sure every frame the host queued for c before now has been seen: the
// client hands notifications over in order before it answers the ping.
func (c *conn) sync() {
	c.t.Helper()
	c.mustRequest("ping", map[string]any{"channel": messages.RootURI})
	for {
		select {
		case n, ok := <-c.Notifications:
			if !ok {
				return
			}
			c.seen = append(c.seen, n)
		default:
			return
		}
	}
}

// canRead tells a reader from a refused connection without touching a terminal: a
// subscribe to a channel that does not exist is "not found" for one who may read and
// a refusal for anyone else. The refusal's message is returned.
func (c *conn) canRead() (bool, string) {
	c.t.Helper()
	_, err := c.request("subscribe", map[string]any{"channel": "ahp-terminal:/no-such-terminal"})
	var e *messages.Error
	if !errors.As(err, &e) {
		c.t.Fatalf("subscribe to a missing terminal: %v", err)
	}
	switch e.Code {
	case messages.CodeNotFound:
		return true, ""
	case messages.CodePermissionDenied:
		return false, e.Message
	}
	c.t.Fatalf("subscribe to a missing terminal: %d %s", e.Code, e.Message)
	return false, ""
}

// withT points c's failures at t (a subtest) until the subtest ends.
func (c *conn) withT(t *testing.T) {
	old := c.t
	c.t = t
	t.Cleanup(func() { c.t = old })
}

func refusalFor(user, grant string) string {
	if user == "" {
		return "Sign in to use this host"
	}
	return user + " may not " + grant + " here"
}

// envelopeFrom matches an action envelope on channel sent by clientID with clientSeq.
func envelopeFrom(channel, clientID string, seq int64) func(*client.Notification) bool {
	return func(n *client.Notification) bool {
		e := n.Envelope
		return e != nil && e.Channel == channel && e.Origin != nil && e.Origin.ClientID == clientID && e.Origin.ClientSeq == seq
	}
}

func rootSnapshot(t *testing.T, res *client.InitializeResult) *messages.RootState {
	t.Helper()
	for _, s := range res.Snapshots {
		if s.Resource == messages.RootURI {
			var st messages.RootState
			if err := json.Unmarshal(s.State, &st); err != nil {
				t.Fatalf("root snapshot: %v", err)
			}
			return &st
		}
	}
	t.Fatalf("initialize gave no root snapshot: %s", res.Raw)
	return nil
}

func hasSnapshot(res *client.InitializeResult, uri string) bool {
	for _, s := range res.Snapshots {
		if s.Resource == uri {
			return true
		}
	}
	return false
}

// TestGrantMatrix drives every grant as each built-in role and as nobody, and checks
// that an allowed action takes effect for everyone while a refused one is answered to
// its sender alone, with the grant named, and changes nothing: not the shell, not the
// terminal's state, not the root list.
func TestGrantMatrix(t *testing.T) {
	h := startHost(t)
	obs := h.dial("observer") // the owner, watching the root and the terminal
	uri := "ahp-terminal:/matrix"
	// No client holds the claim, so a claim by anyone the grant lets through is
	// accepted by the terminal's own claim rule.
	obs.createTerminal(uri, map[string]any{"claim": map[string]any{"kind": "client", "clientId": ""}})
	marks := t.TempDir()
	// A session whose chat runs `!` commands: chat:send's shell, so to speak.
	session := "ahp-session:/matrix"
	chat := obs.openSession(session, marks)

	all := map[string]bool{}
	for _, g := range auth.AllGrants() {
		all[g] = true
	}
	member := map[string]bool{}
	for g := range all {
		member[g] = g != auth.GrantConfigChange
	}
	roles := []struct {
		name, user, token string
		may               map[string]bool
	}{
		{"owner", "owner", h.owner, all},
		{"member", "mia", h.addUser("mia", auth.RoleMember), member},
		{"guest", "gus", h.addUser("gus", auth.RoleGuest), map[string]bool{}},
		{"nobody", "", "", map[string]bool{}},
		{"wrong-token", "", "th_" + strings.Repeat("A", 43), map[string]bool{}},
	}
	lastCols := 80
	for i, r := range roles {
		t.Run(r.name, func(t *testing.T) {
			obs.withT(t)
			id := "as-" + r.name
			p, res := h.dialAs(t, r.token, id, messages.RootURI, uri, chat)

			// Root state is one state for everybody: nobody too sees the terminal.
			if root := rootSnapshot(t, res); root.Terminals == nil || findRow(*root.Terminals, uri) == nil {
				t.Errorf("root snapshot for %s lacks %s: %s", r.name, uri, res.Raw)
			}
			// initialSubscriptions answers only what the connection may read.
			if got, want := hasSnapshot(res, uri), r.may[auth.GrantTerminalOutput]; got != want {
				t.Errorf("initialize gave a snapshot of %s: %v, want %v", uri, got, want)
			}
			if got, want := hasSnapshot(res, chat), r.may[auth.GrantChatSend]; got != want {
				t.Errorf("initialize gave a snapshot of %s: %v, want %v", chat, got, want)
			}

			// refusedRequest checks a -32009 that names the grant.
			refusedRequest := func(t *testing.T, err error, grant string) {
				t.Helper()
				e := rpcError(t, err, messages.CodePermissionDenied)
				if want := refusalFor(r.user, grant); e.Message != want {
					t.Errorf("%s: refusal %q, want %q", grant, e.Message, want)
				}
			}
			// dispatch sends an action and waits for its fate: accepted (the observer
			// sees it echoed) or refused (its sender alone gets it back, with the grant).
			dispatch := func(t *testing.T, channel, grant string, action map[string]any) {
				t.Helper()
				seq := p.dispatch(channel, action)
				if r.may[grant] {
					n := obs.waitFor(fmt.Sprintf("%s from %s", action["type"], id), envelopeFrom(channel, id, seq))
					if n.Envelope.RejectionReason != "" {
						t.Errorf("%s (%s) was rejected: %s", action["type"], grant, n.Envelope.RejectionReason)
					}
					return
				}
				n := p.waitFor(fmt.Sprintf("the refusal of %s", action["type"]), envelopeFrom(channel, id, seq))
				if want := refusalFor(r.user, grant); n.Envelope.RejectionReason != want {
					t.Errorf("%s: rejectionReason %q, want %q", action["type"], n.Envelope.RejectionReason, want)
				}
			}

			// terminal:create and terminal:dispose.
			made := "ahp-terminal:/made-by-" + r.name
			_, err := p.request("createTerminal", map[string]any{"channel": made})
			if r.may[auth.GrantTerminalCreate] {
				if err != nil {
					t.Fatalf("createTerminal: %v", err)
				}
				waitRoot(obs, func(rows []messages.TerminalInfo) bool { return findRow(rows, made) != nil })
			} else {
				refusedRequest(t, err, auth.GrantTerminalCreate)
			}
			victim := made
			if !r.may[auth.GrantTerminalCreate] {
				victim = uri
			}
			_, err = p.request("disposeTerminal", map[string]any{"channel": victim})
			if r.may[auth.GrantTerminalDispose] {
				if err != nil {
					t.Fatalf("disposeTerminal: %v", err)
				}
				waitRoot(obs, func(rows []messages.TerminalInfo) bool { return findRow(rows, victim) == nil })
			} else {
				refusedRequest(t, err, auth.GrantTerminalDispose)
			}

			// terminal:output: subscribe, and reconnect's resubscription.
			_, err = p.Subscribe(p.ctx(), uri)
			if r.may[auth.GrantTerminalOutput] {
				if err != nil {
					t.Fatalf("subscribe: %v", err)
				}
			} else {
				refusedRequest(t, err, auth.GrantTerminalOutput)
			}
			raw, err := p.request("reconnect", map[string]any{"channel": messages.RootURI, "clientId": id, "lastSeenServerSeq": 0, "subscriptions": []string{uri}})
			if err != nil {
				t.Fatalf("reconnect: %v", err)
			}
			var rc struct {
				Type      string               `json:"type"`
				Missing   []string             `json:"missing"`
				Snapshots []client.RawSnapshot `json:"snapshots"`
				Actions   []client.Envelope    `json:"actions"`
			}
			if err := json.Unmarshal(raw, &rc); err != nil {
				t.Fatal(err)
			}
			gotTerminal := false
			for _, s := range rc.Snapshots {
				gotTerminal = gotTerminal || s.Resource == uri
			}
			for _, a := range rc.Actions {
				gotTerminal = gotTerminal || a.Channel == uri
			}
			if rc.Type == "replay" {
				gotTerminal = gotTerminal || !slices.Contains(rc.Missing, uri)
			}
			if gotTerminal != r.may[auth.GrantTerminalOutput] {
				t.Errorf("reconnect gave %s: %v, want %v: %s", uri, gotTerminal, r.may[auth.GrantTerminalOutput], truncate(string(raw), 400))
			}

			// terminal:input: `touch` a file; a refused one must leave no file. The
			// observer's echo runs after it in the same shell, so once its marker is
			// seen, an accepted touch has run.
			mark := filepath.Join(marks, "input-"+r.name)
			dispatch(t, uri, auth.GrantTerminalInput, map[string]any{"type": "terminal/input", "data": "touch " + mark + "\r"})
			obs.input(uri, "echo done-"+r.name+"-$((40+2))\r")
			obs.waitOutput(uri, "done-"+r.name+"-42")
			if _, err := os.Stat(mark); (err == nil) != r.may[auth.GrantTerminalInput] {
				t.Errorf("after terminal/input as %s, %s exists: %v", r.name, mark, err == nil)
			}

			// terminal:resize.
			cols := 100 + i
			dispatch(t, uri, auth.GrantTerminalResize, map[string]any{"type": "terminal/resized", "cols": cols, "rows": 30})
			if r.may[auth.GrantTerminalResize] {
				lastCols = cols
			}

			// terminal:claim. An accepted claim is handed back, so the next role finds
			// the terminal unclaimed.
			dispatch(t, uri, auth.GrantTerminalClaim, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": id}})
			if r.may[auth.GrantTerminalClaim] {
				waitRoot(obs, func(rows []messages.TerminalInfo) bool {
					row := findRow(rows, uri)
					return row != nil && row.Claim.ClientID == id
				})
				dispatch(t, uri, auth.GrantTerminalClaim, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": ""}})
			}

			// terminal:rename and terminal:clear.
			dispatch(t, uri, auth.GrantTerminalRename, map[string]any{"type": "terminal/titleChanged", "title": "title-by-" + r.name})
			dispatch(t, uri, auth.GrantTerminalClear, map[string]any{"type": "terminal/cleared"})

			// config:change, on the root channel.
			dispatch(t, messages.RootURI, auth.GrantConfigChange, map[string]any{"type": "root/configChanged", "config": map[string]any{"enableCustomTerminalTool": i%2 == 0}})

			// chat:send: making and ending a session, reading a chat, and a turn. A
			// turn's `!` command runs in a shell, so a refused one must leave no file.
			t.Run("chat:send", func(t *testing.T) {
				obs.withT(t)
				p.withT(t)
				own := "ahp-session:/by-" + r.name
				_, err := p.request("createSession", map[string]any{"channel": own, "workingDirectories": []string{"file://" + marks}})
				if r.may[auth.GrantChatSend] {
					if err != nil {
						t.Fatalf("createSession: %v", err)
					}
					p.mustRequest("disposeSession", map[string]any{"channel": own})
				} else {
					refusedRequest(t, err, auth.GrantChatSend)
					_, err = p.request("disposeSession", map[string]any{"channel": session})
					refusedRequest(t, err, auth.GrantChatSend)
				}
				raw, err := p.request("listSessions", map[string]any{"channel": messages.RootURI})
				if r.may[auth.GrantChatSend] {
					if err != nil || !strings.Contains(string(raw), session) {
						t.Errorf("listSessions: %s %v", raw, err)
					}
				} else {
					// The list shows titles, which for a session of commands are commands.
					refusedRequest(t, err, auth.GrantChatSend)
				}
				_, err = p.Subscribe(p.ctx(), chat)
				if r.may[auth.GrantChatSend] {
					if err != nil {
						t.Fatalf("subscribe to the chat: %v", err)
					}
				} else {
					refusedRequest(t, err, auth.GrantChatSend)
				}

				mark := filepath.Join(marks, "chat-"+r.name)
				turnID := "turn-" + r.name
				dispatch(t, chat, auth.GrantChatSend, map[string]any{"type": "chat/turnStarted", "turnId": turnID,
					"message": map[string]any{"text": "!touch " + mark, "origin": map[string]any{"kind": "user"}}})
				if !r.may[auth.GrantChatSend] {
					// The owner's own turn: had the refused one reached the session, it
					// would have run first.
					turnID = "after-" + r.name
					obs.dispatch(chat, map[string]any{"type": "chat/turnStarted", "turnId": turnID,
						"message": map[string]any{"text": "!true", "origin": map[string]any{"kind": "user"}}})
				}
				obs.waitFor("the end of "+turnID, func(n *client.Notification) bool {
					return n.Envelope != nil && n.Envelope.Channel == chat && n.Envelope.Type == "chat/turnComplete" && strings.Contains(string(n.Envelope.Action), `"`+turnID+`"`)
				})
				if _, err := os.Stat(mark); (err == nil) != r.may[auth.GrantChatSend] {
					t.Errorf("after a chat turn as %s, %s exists: %v", r.name, mark, err == nil)
				}
			})

			// The observer renames the terminal: the root row that follows is queued
			// for p after anything the terminal sent p before, and reaches p whatever
			// p may do, since root state is never filtered.
			title := "seen-by-" + r.name
			obs.dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": title})
			p.waitFor("the root row renamed by the owner", func(n *client.Notification) bool {
				if n.Envelope == nil || n.Envelope.Type != messages.RootTerminalsChanged {
					return false
				}
				row := findRow(rootRows(t, n.Envelope), uri)
				return row != nil && row.Title == title
			})
			obs.waitFor("the rename's echo", func(n *client.Notification) bool {
				return n.Envelope != nil && n.Envelope.Type == messages.TerminalTitleChanged && n.Envelope.Origin != nil && n.Envelope.Origin.ClientID == "observer" && strings.Contains(string(n.Envelope.Action), title)
			})
			obs.sync()

			if !r.may[auth.GrantTerminalOutput] {
				for _, n := range p.seen {
					if e := n.Envelope; e != nil && e.Channel == uri && e.RejectionReason == "" {
						t.Errorf("%s may not read %s but was sent %s", r.name, uri, truncate(string(n.Params), 200))
					}
				}
			}
			// What was refused reached nobody else.
			for _, n := range obs.seen {
				if e := n.Envelope; e != nil && e.Origin != nil && e.Origin.ClientID == id {
					if e.RejectionReason != "" {
						t.Errorf("the observer was sent %s's rejection: %s", id, n.Params)
					}
					if g := grantOf(e.Type); g != "" && !r.may[g] {
						t.Errorf("a refused %s from %s reached the observer: %s", e.Type, id, n.Params)
					}
				}
			}
		})
	}

	// The terminal lived through every refusal, keeps what the allowed did, and the
	// refused creates left no row.
	snap, err := obs.Subscribe(obs.ctx(), uri)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := snap.TerminalState()
	if st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusRunning || st.Cols == nil || *st.Cols != lastCols || st.Title != "seen-by-wrong-token" || st.Claim.ClientID != "" {
		t.Errorf("terminal state after the matrix: %s", truncate(string(snap.State), 400))
	}
	root, err := obs.Subscribe(obs.ctx(), messages.RootURI)
	if err != nil {
		t.Fatal(err)
	}
	var rs messages.RootState
	_ = json.Unmarshal(root.State, &rs)
	for _, row := range *rs.Terminals {
		if strings.HasPrefix(row.Resource, "ahp-terminal:/made-by-") {
			t.Errorf("root lists %s after the matrix", row.Resource)
		}
	}
	if findRow(*rs.Terminals, uri) == nil {
		t.Errorf("root lost %s", uri)
	}
	if v := rs.Config.Values["enableCustomTerminalTool"]; v != true {
		t.Errorf("config enableCustomTerminalTool = %v: only the owner's change (true) should have landed", v)
	}
}

// grantOf is the grant a client action needs (the table the matrix drives).
func grantOf(actionType string) string {
	return map[string]string{
		messages.TerminalInput:        auth.GrantTerminalInput,
		messages.TerminalResized:      auth.GrantTerminalResize,
		messages.TerminalClaimed:      auth.GrantTerminalClaim,
		messages.TerminalTitleChanged: auth.GrantTerminalRename,
		messages.TerminalCleared:      auth.GrantTerminalClear,
		messages.RootConfigChanged:    auth.GrantConfigChange,
	}[actionType]
}

// TestEveryDispatchableActionHasAGrant keeps the matrix honest: an action type a client
// may dispatch on a terminal must need a grant, or guests could send it.
func TestEveryDispatchableActionHasAGrant(t *testing.T) {
	for _, typ := range []string{
		messages.TerminalData, messages.TerminalInput, messages.TerminalResized, messages.TerminalClaimed,
		messages.TerminalTitleChanged, messages.TerminalCwdChanged, messages.TerminalExited, messages.TerminalCleared,
		messages.TerminalCommandDetectionAvailable, messages.TerminalCommandExecuted, messages.TerminalCommandFinished,
		messages.RootTerminalsChanged, messages.RootConfigChanged,
	} {
		if messages.ClientDispatchable(typ) && grantOf(typ) == "" {
			t.Errorf("%s is client-dispatchable but needs no grant in the matrix", typ)
		}
	}
}

// TestSignInForms: a token in the URL or as a Bearer header signs in; none, or a wrong
// one, is nobody, who completes the handshake but can drive nothing.
func TestSignInForms(t *testing.T) {
	h := startHost(t)
	// Each sign-in form is a client of its own: a clientId belongs to the person who
	// first used it.
	dial := func(url string, header http.Header, clientID string) *conn {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cl, err := client.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
		if err != nil {
			t.Fatalf("dial %s: %v", url, err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		c := &conn{t: t, Conn: cl, clientID: clientID}
		if _, err := c.Initialize(c.ctx(), clientID, messages.RootURI); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		return c
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for _, tc := range []struct {
		name     string
		url      string
		header   http.Header
		signedIn bool
	}{
		{"query token", h.url(h.owner), nil, true},
		{"bearer token", h.url(""), bearer(h.owner), true},
		{"no token", h.url(""), nil, false},
		{"wrong query token", h.url("th_nope"), nil, false},
		{"wrong bearer token", h.url(""), bearer("th_nope"), false},
		{"empty bearer", h.url(""), http.Header{"Authorization": {"Bearer "}}, false},
		{"basic auth is not a token", h.url(""), http.Header{"Authorization": {"Basic " + h.owner}}, false},
	} {
		c := dial(tc.url, tc.header, "s-"+tc.name)
		ok, msg := c.canRead()
		if ok != tc.signedIn {
			t.Errorf("%s: signed in %v, want %v", tc.name, ok, tc.signedIn)
		}
		if !ok && msg != "Sign in to use this host" {
			t.Errorf("%s: refusal %q", tc.name, msg)
		}
	}
}

// TestUsersFileTakesEffect: a token added, revoked or re-roled in the users file while
// the host runs counts at once, for new connections and for ones already open.
func TestUsersFileTakesEffect(t *testing.T) {
	// The per-frame check is under test here; the push that closes such a connection
	// (TestRevokedConnectionIsClosed) is kept out of the way.
	h := startHost(t, withRightsRecheck(time.Hour))
	// A second store on the same folder is `termhost token add|revoke` run while the
	// host serves.
	cli, err := auth.Open(filepath.Dir(h.store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	late, err := cli.AddToken("late", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.dialAs(t, late, "late-c", messages.RootURI)
	if ok, _ := c.canRead(); !ok {
		t.Fatal("a token added while the host runs does not sign in")
	}
	uri := "ahp-terminal:/late"
	c.createTerminal(uri, nil)
	c.input(uri, "echo typed-$((1+1))\r")
	c.waitOutput(uri, "typed-2")

	// Made a guest by editing the file by hand: the open connection can no longer type.
	if err := setRole(h.store.Path(), "late", auth.RoleGuest); err != nil {
		t.Fatal(err)
	}
	seq := c.dispatch(uri, map[string]any{"type": "terminal/input", "data": "echo after-demotion\r"})
	n := c.waitFor("the refused input", envelopeFrom(uri, "late-c", seq))
	if want := "late may not terminal:input here"; n.Envelope.RejectionReason != want {
		t.Errorf("input after demotion: rejectionReason %q, want %q", n.Envelope.RejectionReason, want)
	}
	_, err = c.request("createTerminal", map[string]any{"channel": "ahp-terminal:/late-2"})
	rpcError(t, err, messages.CodePermissionDenied)

	// Revoked: a new connection is nobody, and so is the open one.
	if n, err := cli.Revoke("late"); n != 1 || err != nil {
		t.Fatalf("revoke: %d %v", n, err)
	}
	fresh, _ := h.dialAs(t, late, "late-fresh", messages.RootURI)
	if ok, msg := fresh.canRead(); ok || msg != "Sign in to use this host" {
		t.Errorf("a revoked token signs in (%v, %q)", ok, msg)
	}
	_, err = c.request("createTerminal", map[string]any{"channel": "ahp-terminal:/late-3"})
	if e := rpcError(t, err, messages.CodePermissionDenied); e.Message != "Sign in to use this host" {
		t.Errorf("open connection after revocation: %q", e.Message)
	}
	// The shell never saw the refused line.
	owner := h.dial("owner")
	if _, err := owner.Subscribe(owner.ctx(), uri); err != nil {
		t.Fatal(err)
	}
	owner.input(uri, "echo owner-$((2+3))\r")
	if out := owner.waitOutput(uri, "owner-5"); strings.Contains(out, "after-demotion") {
		t.Errorf("refused input reached the shell: %q", out)
	}
}

// upgradeStatus dials and returns the HTTP status of the upgrade (101 on success).
func upgradeStatus(t *testing.T, url string, header http.Header) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		defer ws.Close(websocket.StatusNormalClosure, "")
		// The socket works: a ping is answered.
		r := rawExchange(t, ws, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`)
		if r["id"] != float64(1) {
			t.Errorf("ping after upgrade: %v", r)
		}
		return resp.StatusCode
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return resp.StatusCode
}

// TestNonLoopbackNeedsToken: a host on another address refuses an upgrade without a
// valid token (401) unless it allows anonymous connections.
//
// The host listens on every address (0.0.0.0), which is not loopback, and the test
// connects through 127.0.0.1: no test traffic leaves the loopback range.
func TestNonLoopbackNeedsToken(t *testing.T) {
	const ip = "0.0.0.0"
	h := startHostOn(t, net.JoinHostPort(ip, "0"))
	h.addr = viaLoopback(t, h.addr)
	bearer := http.Header{"Authorization": {"Bearer " + h.owner}}
	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   int
	}{
		{"no token", h.url(""), nil, http.StatusUnauthorized},
		{"wrong token", h.url("th_nope"), nil, http.StatusUnauthorized},
		{"wrong bearer", h.url(""), http.Header{"Authorization": {"Bearer th_nope"}}, http.StatusUnauthorized},
		{"query token", h.url(h.owner), nil, http.StatusSwitchingProtocols},
		{"bearer token", h.url(""), bearer, http.StatusSwitchingProtocols},
	} {
		if got := upgradeStatus(t, tc.url, tc.header); got != tc.want {
			t.Errorf("%s on %s: status %d, want %d", tc.name, ip, got, tc.want)
		}
	}
	if resp, err := http.Get("http://" + h.addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	anon := startHostOn(t, net.JoinHostPort(ip, "0"), withAllowAnonymous())
	anon.addr = viaLoopback(t, anon.addr)
	if got := upgradeStatus(t, anon.url(""), nil); got != http.StatusSwitchingProtocols {
		t.Errorf("no token with --allow-anonymous: status %d, want 101", got)
	}
	// Let in, but still nobody.
	c, _ := anon.dialAs(t, "", "anon", messages.RootURI)
	if ok, msg := c.canRead(); ok || msg != "Sign in to use this host" {
		t.Errorf("an anonymous connection may read (%v, %q)", ok, msg)
	}
	_, err := c.request("createTerminal", map[string]any{"channel": "ahp-terminal:/anon"})
	rpcError(t, err, messages.CodePermissionDenied)
}

// TestOriginChecked: a browser's upgrade from a foreign page is refused (403); the
// host's own origin and the --allow-origin patterns are let in.
func TestOriginChecked(t *testing.T) {
	h := startHost(t, withAllowOrigins("app.example.com", "*.trusted.example"))
	origin := func(o string) http.Header { return http.Header{"Origin": {o}} }
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"https://app.example.com.evil.example", http.StatusForbidden},
		{"https://trusted.example.evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://" + h.addr, http.StatusSwitchingProtocols},
		{"https://app.example.com", http.StatusSwitchingProtocols},
		{"https://ide.trusted.example", http.StatusSwitchingProtocols},
	} {
		if got := upgradeStatus(t, h.url(h.owner), origin(tc.origin)); got != tc.want {
			t.Errorf("Origin %s: status %d, want %d", tc.origin, got, tc.want)
		}
	}
	// Without the patterns, only the host's own origin.
	plain := startHost(t)
	if got := upgradeStatus(t, plain.url(""), origin("https://app.example.com")); got != http.StatusForbidden {
		t.Errorf("an origin allowed on another host is let in: %d", got)
	}
}

// viaLoopback is the loopback address of a listener on every address.
func viaLoopback(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// TestRevokedConnectionIsClosed: a connection whose token is revoked, or whose role no
// longer reads a channel it is subscribed to, is closed with a reason saying so, with
// no frame of its own needed; one whose rights still cover what it holds stays open.
func TestRevokedConnectionIsClosed(t *testing.T) {
	h := startHost(t, withRightsRecheck(20*time.Millisecond))
	cli, err := auth.Open(filepath.Dir(h.store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(user string) error
		reason delivery.CloseReason
	}{
		{"revoked", func(user string) error { _, err := cli.Revoke(user); return err }, delivery.ReasonSignedOut},
		{"made a guest", func(user string) error { return setRole(h.store.Path(), user, auth.RoleGuest) }, delivery.ReasonRightsChanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user := strings.ReplaceAll(tc.name, " ", "-")
			tok, err := cli.AddToken(user, auth.RoleMember)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := h.dialAs(t, tok, user, messages.RootURI)
			uri := "ahp-terminal:/" + user
			c.createTerminal(uri, nil)
			// Someone else's new token changes the file but not this connection's rights.
			if _, err := cli.AddToken(user+"-friend", auth.RoleMember); err != nil {
				t.Fatal(err)
			}
			c.input(uri, "echo still-$((3*3))\r")
			c.waitOutput(uri, "still-9")

			if err := tc.change(user); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Done():
			case <-time.After(waitTimeout):
				t.Fatalf("the connection stayed open after its user was %s", tc.name)
			}
			var ce websocket.CloseError
			if err := c.Err(); !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != string(tc.reason) {
				t.Fatalf("the connection ended with %v, want 1008 %q", err, tc.reason)
			}
		})
	}
}

// setRole edits the users file by hand, as an operator would.
func setRole(path, user, role string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var file map[string]any
	if err := json.Unmarshal(b, &file); err != nil {
		return err
	}
	for _, u := range file["users"].([]any) {
		if u := u.(map[string]any); u["name"] == user {
			u["role"] = role
		}
	}
	b, err = json.Marshal(file)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// TestPageShapedKeystrokes: keystrokes sent as the web page writes them (members in
// the protocol's order, which the host reads in one pass) reach the shell with their
// escapes read, are echoed with the client's sequence number, and are refused by
// name once the users file makes the sender a guest.
func TestPageShapedKeystrokes(t *testing.T) {
	h := startHost(t, withRightsRecheck(time.Hour))
	cli, err := auth.Open(filepath.Dir(h.store.Path()))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cli.AddToken("typist", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.dialAs(t, tok, "typist-c", messages.RootURI)
	uri := "ahp-terminal:/typist"
	c.createTerminal(uri, nil)
	seq := int64(1000)
	send := func(data string) int64 {
		t.Helper()
		seq++
		d, _ := json.Marshal(data)
		frame := fmt.Sprintf(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"terminal/input","data":%s}}}`, uri, seq, d)
		if err := c.WS().Write(c.ctx(), websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	s := send("echo \"page-$((6*7))\" \u00e9\r")
	echo := c.waitFor("the keystroke's echo", envelopeFrom(uri, "typist-c", s))
	if echo.Envelope.RejectionReason != "" {
		t.Fatalf("refused: %s", echo.Envelope.RejectionReason)
	}
	c.waitOutput(uri, "page-42 \u00e9")

	if err := setRole(h.store.Path(), "typist", auth.RoleGuest); err != nil {
		t.Fatal(err)
	}
	s = send("echo refused\r")
	n := c.waitFor("the refused keystroke", envelopeFrom(uri, "typist-c", s))
	if want := "typist may not terminal:input here"; n.Envelope.RejectionReason != want {
		t.Errorf("keystroke after demotion: rejectionReason %q, want %q", n.Envelope.RejectionReason, want)
	}
}
