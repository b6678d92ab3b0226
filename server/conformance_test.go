package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/schematest"
)

// These tests answer the requests the protocol's own client makes the way it reads
// them: every answer a result the 0.8.0 schema describes, and a resume that says
// which of the client's subscriptions are gone, since the client drops exactly those.

// TestAnswersMatchTheSchemas: the answers to subscribe, listSessions and both kinds of
// reconnect are the results the schemas define, not only the envelopes after them.
func TestAnswersMatchTheSchemas(t *testing.T) {
	v := schematest.Load(t)
	h := startHost(t)
	c := h.dial("answers")
	check := schemaCheck(t, v)
	uri := "ahp-terminal:/answers"
	c.mustRequest("createTerminal", map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": "answers"}})
	check("SubscribeResult", c.mustRequest("subscribe", map[string]any{"channel": uri}))
	check("ListSessionsResult", c.mustRequest("listSessions", map[string]any{"channel": messages.RootURI}))
	c.input(uri, "echo answered-$((6*7))\r")
	c.waitOutput(uri, "answered-42")
	_ = c.WS().CloseNow()

	_, raw, err := h.resume(t, h.owner, "answers", 1, messages.RootURI, uri, "ahp-terminal:/never-was")
	if err != nil {
		t.Fatal(err)
	}
	var kind struct{ Type string }
	_ = json.Unmarshal(raw, &kind)
	switch kind.Type {
	case "replay":
		check("ReconnectReplayResult", raw)
	case "snapshot":
		check("ReconnectSnapshotResult", raw)
	default:
		t.Fatalf("reconnect answered %s", raw)
	}
	t.Logf("%s", truncate(string(raw), 400))
}

// TestAnOlderClientIsSentOnlyActionsItKnows: the protocol's TypeScript client offers
// 0.8.0 alone, and a host sends a connection only the action types its negotiated
// version knows (versioning.md, "Forward Compatibility"). Background work came in
// 0.9.0: a 0.8.0 client watching a chat with an async shell sees the wake turn the
// shell's end starts but neither background row, live or in a reconnect's replay, and
// every envelope it is sent is one the 0.8.0 schema describes; a 1.0.0 client watching
// the same chat sees both rows.
func TestAnOlderClientIsSentOnlyActionsItKnows(t *testing.T) {
	v := schematest.Load(t)
	h := ptyHost(t)
	a := h.mcpAgent(h.owner, "tools=host")
	a.call("list_bash", map[string]any{})
	current := h.dial("current")
	var listed struct {
		Items []struct {
			Resource string `json:"resource"`
		} `json:"items"`
	}
	_ = json.Unmarshal(current.mustRequest("listSessions", map[string]any{"channel": messages.RootURI}), &listed)
	if len(listed.Items) != 1 {
		t.Fatalf("listSessions after an MCP connect: %+v", listed)
	}
	chat := listed.Items[0].Resource + "/chat"

	older := h.dialRaw(h.owner)
	older.clientID = "older"
	raw := older.mustRequest("initialize", map[string]any{"channel": messages.RootURI, "protocolVersions": []string{"0.8.0"}, "clientId": "older", "initialSubscriptions": []string{chat}})
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerSeq       uint64 `json:"serverSeq"`
	}
	_ = json.Unmarshal(raw, &init)
	if init.ProtocolVersion != "0.8.0" {
		t.Fatalf("negotiated %q for an offer of 0.8.0 alone", init.ProtocolVersion)
	}
	if _, err := current.Subscribe(current.ctx(), chat); err != nil {
		t.Fatal(err)
	}

	marker := t.TempDir() + "/done"
	bg := a.call("bash", map[string]any{"command": "while [ ! -e " + marker + " ]; do sleep 0.05; done; exit 3", "mode": "async"})
	if !bg.running() {
		t.Fatalf("async answered: %+v", bg)
	}
	current.waitAction(chat, "chat/backgroundWorkSet")
	a.call("bash", map[string]any{"command": "touch " + marker})
	current.waitAction(chat, "chat/backgroundWorkRemoved")
	current.waitAction(chat, "chat/turnStarted")

	// The older client's frames come in the order they were sent, so by its wake
	// turn it has been sent every row it would have been.
	older.waitAction(chat, "chat/turnStarted")
	for _, n := range older.seen {
		if n.Envelope == nil {
			continue
		}
		if strings.HasPrefix(n.Envelope.Type, "chat/backgroundWork") {
			t.Errorf("a 0.8.0 client was sent %s", n.Envelope.Type)
		}
		if err := v.Validate("ActionEnvelope", json.RawMessage(n.Params)); err != nil {
			t.Errorf("a 0.8.0 client was sent an envelope its schema does not describe: %v\n%s", err, truncate(string(n.Params), 300))
		}
	}

	// Its transport drops; what it missed since the handshake is replayed without
	// the rows either.
	_ = older.WS().CloseNow()
	_, res, err := h.resume(t, h.owner, "older", init.ServerSeq, chat)
	if err != nil {
		t.Fatal(err)
	}
	var replay struct {
		Type    string `json:"type"`
		Actions []struct {
			Action struct {
				Type string `json:"type"`
			} `json:"action"`
		} `json:"actions"`
	}
	_ = json.Unmarshal(res, &replay)
	if replay.Type != "replay" {
		t.Fatalf("reconnect answered %s; want a replay", truncate(string(res), 300))
	}
	started := false
	for _, e := range replay.Actions {
		if strings.HasPrefix(e.Action.Type, "chat/backgroundWork") {
			t.Errorf("a 0.8.0 client's replay holds %s", e.Action.Type)
		}
		started = started || e.Action.Type == "chat/turnStarted"
	}
	if !started {
		t.Fatalf("the replay lacks the wake turn: %s", truncate(string(res), 600))
	}
}

// TestSubscribingToAMissingSessionIsSessionNotFound: the protocol names one code for a
// session URI that does not exist (-32001 SessionNotFound), and a subscribe to one -
// never made, or disposed since - answers it, as the other requests naming a session
// do; a missing terminal stays -32008 NotFound.
func TestSubscribingToAMissingSessionIsSessionNotFound(t *testing.T) {
	h := startHost(t)
	c := h.dial("missing")
	_, err := c.Subscribe(c.ctx(), "ahp-session:/never-was")
	rpcError(t, err, messages.CodeSessionNotFound)

	uri := "ahp-session:/disposed"
	c.openSession(uri, t.TempDir())
	c.mustRequest("disposeSession", map[string]any{"channel": uri})
	_, err = c.Subscribe(c.ctx(), uri)
	rpcError(t, err, messages.CodeSessionNotFound)

	_, err = c.Subscribe(c.ctx(), "ahp-terminal:/never-was")
	rpcError(t, err, messages.CodeNotFound)
}

// TestRootTellsOfSessions: a client keeps its session list from listSessions and the
// root's root/sessionAdded, root/sessionSummaryChanged and root/sessionRemoved
// notifications, and never asks again while connected (the protocol's own client does
// so). Every root subscriber that may read sessions is told of a session another
// client creates, changes and disposes, with the summary listSessions gives; a guest,
// who may not read sessions, is told of none of it.
func TestRootTellsOfSessions(t *testing.T) {
	v := schematest.Load(t)
	h := startHost(t)
	watcher := h.dial("watcher")
	guest, _ := h.dialAs(t, h.addUser("gus", "guest"), "gus", messages.RootURI)
	maker := h.dial("maker")
	uri := "ahp-session:/told-" + strings.ToLower(t.Name())
	chat := maker.openSession(uri, t.TempDir())

	added := watcher.waitFor("root/sessionAdded", func(n *client.Notification) bool { return n.Method == "root/sessionAdded" })
	var a struct {
		Channel string `json:"channel"`
		Summary struct {
			Resource string `json:"resource"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(added.Params, &a); err != nil || a.Channel != messages.RootURI || a.Summary.Resource != uri {
		t.Fatalf("root/sessionAdded %s, want the root channel and the session %s", added.Params, uri)
	}
	schemaCheck(t, v)("SessionAddedParams", added.Params)

	// A command's turn changes the summary (its modifiedAt, and the title a session
	// of commands takes from its first): the watcher is told what changed.
	maker.waitCompleted(chat, maker.say(chat, "!echo summary-$((6*7))"))
	changed := watcher.waitFor("root/sessionSummaryChanged", func(n *client.Notification) bool {
		return n.Method == "root/sessionSummaryChanged" && strings.Contains(string(n.Params), `"modifiedAt"`)
	})
	var c struct {
		Channel, Session string
		Changes          map[string]any
	}
	if err := json.Unmarshal(changed.Params, &c); err != nil || c.Channel != messages.RootURI || c.Session != uri || c.Changes["modifiedAt"] == nil {
		t.Fatalf("root/sessionSummaryChanged %s, want the session %s with its modifiedAt", changed.Params, uri)
	}
	schemaCheck(t, v)("SessionSummaryChangedParams", changed.Params)

	maker.mustRequest("disposeSession", map[string]any{"channel": uri})
	removed := watcher.waitFor("root/sessionRemoved", func(n *client.Notification) bool { return n.Method == "root/sessionRemoved" })
	var r struct{ Channel, Session string }
	if err := json.Unmarshal(removed.Params, &r); err != nil || r.Channel != messages.RootURI || r.Session != uri {
		t.Fatalf("root/sessionRemoved %s, want the root channel and the session %s", removed.Params, uri)
	}
	schemaCheck(t, v)("SessionRemovedParams", removed.Params)

	// The guest's copies would have been queued before the watcher's: everything
	// queued for it by now is seen after a ping.
	guest.sync()
	for _, n := range guest.seen {
		if strings.HasPrefix(n.Method, "root/session") {
			t.Fatalf("a guest, who may not read sessions, was told %s %s", n.Method, n.Params)
		}
	}
}

// TestMadeUpTerminalActionIsNamedAsSuch: a terminal action the host sends, dispatched
// by a client, is refused as the host's; a type the protocol does not have is refused
// as no action of a terminal, not as one the host sends.
func TestMadeUpTerminalActionIsNamedAsSuch(t *testing.T) {
	h := startHost(t)
	c := h.dial("madeup")
	uri := "ahp-terminal:/madeup"
	c.createTerminal(uri, nil)
	for typ, want := range map[string]string{
		"terminal/exited": "terminal/exited is sent by the host, not dispatched by a client",
		"terminal/bogus":  "terminal/bogus is not an action of a terminal",
	} {
		c.dispatch(uri, map[string]any{"type": typ})
		if got := c.waitAction(uri, typ).RejectionReason; got != want {
			t.Errorf("%s was refused with %q, want %q", typ, got, want)
		}
	}
}
