package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// rootRows decodes the terminals of a root/terminalsChanged.
func rootRows(t *testing.T, env *client.Envelope) []messages.TerminalInfo {
	t.Helper()
	a, err := env.Decode()
	if err != nil || a.Terminals == nil {
		t.Fatalf("terminalsChanged without terminals: %s", env.Action)
	}
	return *a.Terminals
}

func waitRoot(c *conn, pred func([]messages.TerminalInfo) bool) []messages.TerminalInfo {
	c.t.Helper()
	var rows []messages.TerminalInfo
	c.waitFor("a matching root/terminalsChanged", func(n *client.Notification) bool {
		if n.Envelope == nil || n.Envelope.Type != messages.RootTerminalsChanged {
			return false
		}
		rows = rootRows(c.t, n.Envelope)
		return pred(rows)
	})
	return rows
}

func findRow(rows []messages.TerminalInfo, uri string) *messages.TerminalInfo {
	for i := range rows {
		if rows[i].Resource == uri {
			return &rows[i]
		}
	}
	return nil
}

func TestTerminalFlow(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		a := h.dial("alice")
		b := h.dial("bob")
		uri := mode.uri("flow")
		snap := a.createTerminal(uri, map[string]any{"name": "work", "cols": 100, "rows": 30})

		rows := waitRoot(b, func(r []messages.TerminalInfo) bool { return findRow(r, uri) != nil })
		row := findRow(rows, uri)
		if row.Title != "work" || row.Claim.Kind != "client" || row.Claim.ClientID != "alice" || row.Lifecycle == nil || row.Lifecycle.Status != "running" {
			t.Fatalf("root row: %+v", row)
		}
		st, err := snap.TerminalState()
		if err != nil {
			t.Fatal(err)
		}
		if st.Title != "work" || *st.Cols != 100 || *st.Rows != 30 || st.IsPty == nil || *st.IsPty != mode.pty || st.Lifecycle.Status != "running" {
			t.Fatalf("snapshot: %s", snap.State)
		}

		a.input(uri, "echo hello-$((6*7))\r")
		a.waitOutput(uri, "hello-42")
		echo := a.waitAction(uri, messages.TerminalInput)
		if echo.Origin == nil || echo.Origin.ClientID != "alice" || echo.RejectionReason != "" {
			t.Fatalf("input echo: %+v", echo)
		}

		// A late subscriber sees what happened before it came.
		if _, err := b.Subscribe(b.ctx(), uri); err != nil {
			t.Fatal(err)
		}
		late, _ := b.Subscribe(b.ctx(), uri)
		lst, _ := late.TerminalState()
		var text strings.Builder
		for _, p := range lst.Content {
			text.WriteString(p.Text())
		}
		if !strings.Contains(text.String(), "hello-42") {
			t.Fatalf("late snapshot lacks earlier output: %q", text.String())
		}

		a.dispatch(uri, map[string]any{"type": "terminal/resized", "cols": 120, "rows": 40})
		rs := b.waitAction(uri, messages.TerminalResized)
		if ra, _ := rs.Decode(); *ra.Cols != 120 || *ra.Rows != 40 {
			t.Fatalf("resize echo %s", rs.Action)
		}
		if mode.pty {
			a.input(uri, "stty size\r")
			a.waitOutput(uri, "40 120")
		}

		a.dispatch(uri, map[string]any{"type": "terminal/titleChanged", "title": "renamed"})
		waitRoot(b, func(r []messages.TerminalInfo) bool {
			row := findRow(r, uri)
			return row != nil && row.Title == "renamed"
		})

		// bob does not hold the claim: refused, to him alone.
		b.dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "bob"}})
		rej := b.waitFor("rejected claim", func(n *client.Notification) bool {
			return n.Envelope != nil && n.Envelope.Type == messages.TerminalClaimed && n.Envelope.RejectionReason != ""
		})
		if !strings.Contains(rej.Envelope.RejectionReason, "alice") {
			t.Fatalf("rejection reason %q", rej.Envelope.RejectionReason)
		}
		// alice hands it to bob: echoed to all, and the root row follows.
		a.dispatch(uri, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "client", "clientId": "bob"}})
		waitRoot(b, func(r []messages.TerminalInfo) bool {
			row := findRow(r, uri)
			return row != nil && row.Claim.ClientID == "bob"
		})

		// A server-only action from a client is refused.
		a.dispatch(uri, map[string]any{"type": "terminal/data", "data": "forged"})
		forged := a.waitFor("rejected terminal/data", func(n *client.Notification) bool {
			return n.Envelope != nil && n.Envelope.Type == messages.TerminalData && n.Envelope.RejectionReason != ""
		})
		if strings.Contains(b.output(uri), "forged") {
			t.Fatal("a forged terminal/data reached another client")
		}
		_ = forged

		// Unknown actions change nothing; a dispatch to no channel is ignored.
		a.dispatch(uri, map[string]any{"type": "terminal/somethingNew"})
		a.dispatch("ahp-terminal:/nowhere", map[string]any{"type": "terminal/input", "data": "x"})

		a.dispatch(uri, map[string]any{"type": "terminal/cleared"})
		b.waitAction(uri, messages.TerminalCleared)
		after, _ := a.Subscribe(a.ctx(), uri)
		ast, _ := after.TerminalState()
		if ast.Title != "renamed" || *ast.Cols != 120 || ast.Claim.ClientID != "bob" {
			t.Fatalf("clear lost size, title or claim: %s", after.State)
		}

		if res := a.mustRequest("disposeTerminal", map[string]any{"channel": uri}); string(res) != "null" {
			t.Fatalf("dispose answered %s", res)
		}
		waitRoot(b, func(r []messages.TerminalInfo) bool { return findRow(r, uri) == nil })
		if res := a.mustRequest("disposeTerminal", map[string]any{"channel": uri}); string(res) != "null" {
			t.Fatalf("second dispose answered %s", res)
		}
		for _, n := range a.seen {
			if n.Envelope != nil && n.Envelope.Channel == "ahp-terminal:/nowhere" {
				t.Fatalf("a dispatch to no channel was echoed: %s", n.Params)
			}
		}
	})
}

func TestCreateTerminalRules(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		c := h.dial("c")
		uri := "agenthost-terminal:/vscode-style"
		c.createTerminal(uri, nil)
		_, err := c.request("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "c"}})
		e := rpcError(t, err, messages.CodeAlreadyExists)
		if e.Message != "Terminal already exists: "+uri {
			t.Fatalf("message %q", e.Message)
		}

		// No claim: a client claim with an empty clientId. A cwd that is not a folder:
		// the home folder.
		c.mustRequest("createTerminal", map[string]any{"channel": "ahp-terminal:/noclaim", "cwd": "file:///no/such/folder"})
		snap, err := c.Subscribe(c.ctx(), "ahp-terminal:/noclaim")
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		_ = json.Unmarshal(snap.State, &raw)
		claim, _ := raw["claim"].(map[string]any)
		if claim["kind"] != "client" || claim["clientId"] != "" {
			t.Fatalf("claim %v", claim)
		}
		if cwd, _ := raw["cwd"].(string); !strings.HasPrefix(cwd, "file:///") || strings.Contains(cwd, "no/such") {
			t.Fatalf("cwd %v", raw["cwd"])
		}
		// A folder with a space, as a file: URI.
		dir := t.TempDir() + "/with space"
		if err := mkdir(dir); err != nil {
			t.Fatal(err)
		}
		u := "ahp-terminal:/spaced"
		c.createTerminal(u, map[string]any{"cwd": "file://" + strings.ReplaceAll(dir, " ", "%20")})
		c.input(u, "pwd\r")
		c.waitOutput(u, "with space")
	})
}
