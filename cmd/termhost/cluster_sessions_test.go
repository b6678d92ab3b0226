package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// Sessions across nodes: a session is placed on a node and runs its commands there,
// and a client of any node lists it, hears of it, subscribes to it and drives it.

func TestClusterSessionsWithSeeds(t *testing.T) {
	t.Parallel()
	runClusterSessions(t, seedsFlags(t, 3))
}

func TestClusterSessionsWithEtcd(t *testing.T) {
	t.Parallel()
	endpoint := startEtcd(t)
	runClusterSessions(t, func(int) []string { return []string{"--etcd", endpoint} })
}

func runClusterSessions(t *testing.T, provider func(slot int) []string) {
	bin := buildBinary(t)
	const secret = "the cluster's secret"
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	a, b, c := startThreeNodes(t, bin, provider, secret)
	// The nodes know one another once each lists the others' terminals.
	rootA, rootB, rootC := rootsThatListEveryNode(t, ctx, a, b, c)

	// A client of node a makes a session on node b: every node's root says so, and
	// lists it, naming node b.
	ca := a.dial(ctx, "ca")
	const far = "ahp-session:/far"
	chat := createSessionOn(t, ctx, ca, far, "b")
	for _, r := range []*client.Conn{rootA, rootB, rootC} {
		added := waitCatalog(t, ctx, r, "root/sessionAdded", far)
		if node := summaryNode(added["summary"]); node != "b" {
			t.Fatalf("root/sessionAdded of %s names node %q, want b: %v", far, node, added)
		}
	}
	for _, n := range []*client.Conn{ca, rootB, rootC} {
		if got := sessionsOf(t, ctx, n); got[far] != "b" {
			t.Fatalf("listSessions: %v, want %s on node b", got, far)
		}
	}
	if _, err := ca.Request(ctx, "createSession", map[string]any{"channel": far, "workingDirectories": []string{}}); err == nil {
		t.Fatal("a second session of the same URI was made on another node")
	}
	if _, err := ca.Request(ctx, "createSession", map[string]any{"channel": "ahp-session:/nowhere", "_meta": map[string]any{"node": "nowhere"}}); err == nil || !strings.Contains(err.Error(), `no node "nowhere"`) {
		t.Fatalf("createSession on a node that is not there: %v", err)
	}

	// From node a, a `!` command runs in it, on node b: the turn completes with the
	// tool call and the terminal it ran in, which node a reaches.
	snap, err := ca.Subscribe(ctx, chat)
	if err != nil {
		t.Fatalf("subscribe %s from node a: %v", chat, err)
	}
	sA := &stream{t: t, c: ca, uri: chat}
	startTurn(t, ctx, ca, chat, 1, "t1", "!echo hi-$((4+5))")
	term := ""
	sA.until(ctx, "the tool call's completion", func(e *client.Envelope) bool {
		if e.Type != "chat/toolCallComplete" {
			return false
		}
		term = toolCallTerminal(e.Action)
		return true
	})
	sA.until(ctx, "the turn's end", isType("chat/turnComplete"))
	if term == "" {
		t.Fatalf("the tool call named no terminal: %q", sA.shape())
	}
	last := snap.FromSeq
	for _, e := range sA.envs {
		if e.ServerSeq <= last {
			t.Fatalf("serverSeq %d after %d on node a", e.ServerSeq, last)
		}
		last = e.ServerSeq
	}
	// The turn titled the session: node c's root says so, and lists it so, as node b does.
	for {
		changes, _ := waitCatalog(t, ctx, rootC, "root/sessionSummaryChanged", far)["changes"].(map[string]any)
		if _, titled := changes["title"]; titled {
			break
		}
	}
	if onB, onC := sessionTitles(t, ctx, b.dial(ctx, "lister-b"))[far], sessionTitles(t, ctx, rootC)[far]; onB == "" || onB != onC {
		t.Fatalf("%s is titled %q on node b and %q on node c", far, onB, onC)
	}
	// fetchTurns reaches the chat on node b: with nothing older to bring in it answers
	// {}, and a cursor node b never gave comes back refused as node b refused it.
	if r, err := ca.Request(ctx, "fetchTurns", map[string]any{"channel": chat}); err != nil || string(r) != "{}" {
		t.Fatalf("fetchTurns of %s from node a: %s, %v", chat, r, err)
	}
	var refused *messages.Error
	if _, err := ca.Request(ctx, "fetchTurns", map[string]any{"channel": chat, "cursor": "not-a-cursor"}); !errors.As(err, &refused) || refused.Code != messages.CodeInvalidParams {
		t.Fatalf("fetchTurns of %s from node a with a cursor node b never gave: %v, want -32602", chat, err)
	}
	ta := a.dial(ctx, "ta")
	if st, _, _ := subscribeStream(t, ctx, ta, term); !strings.Contains(st.Text(), "hi-9") {
		t.Fatalf("the command's terminal %s from node a: %q", term, st.Text())
	}

	// A client of node c gets the chat's snapshot, with that turn, and then, as a
	// client of node b itself does, every action of the next one in the same order.
	cc, cb := c.dial(ctx, "cc"), b.dial(ctx, "cb")
	snapC, err := cc.Subscribe(ctx, chat)
	if err != nil {
		t.Fatalf("subscribe %s from node c: %v", chat, err)
	}
	if ids := turnIDs(t, snapC.State); !slices.Equal(ids, []string{"t1"}) {
		t.Fatalf("node c's snapshot of %s has turns %v, want [t1]: %s", chat, ids, snapC.State)
	}
	if _, err := cb.Subscribe(ctx, chat); err != nil {
		t.Fatal(err)
	}
	sC, sB := &stream{t: t, c: cc, uri: chat}, &stream{t: t, c: cb, uri: chat}
	startTurn(t, ctx, ca, chat, 2, "t2", "!echo again-$((2+3))")
	for _, s := range []*stream{sA, sB, sC} {
		s.until(ctx, "the second turn's end", func(e *client.Envelope) bool {
			return e.Type == "chat/turnComplete" && strings.Contains(string(e.Action), `"t2"`)
		})
	}
	if got, want := shapeFrom(sC, "t2"), shapeFrom(sB, "t2"); !slices.Equal(got, want) || len(got) < 3 {
		t.Fatalf("node c's client saw\n%q\nnode b's client saw\n%q", got, want)
	}
	if got, want := shapeFrom(sA, "t2"), shapeFrom(sB, "t2"); !slices.Equal(got, want) {
		t.Fatalf("node a's client saw\n%q\nnode b's client saw\n%q", got, want)
	}
	// A snapshot of the chat served on node c has the modifiedAt node b gave it, not
	// the time its last change reached node c.
	sameModifiedAt(t, ctx, b.dial(ctx, "mb"), c.dial(ctx, "mc"), chat)
	last = snapC.FromSeq
	for _, e := range sC.envs {
		if e.ServerSeq <= last {
			t.Fatalf("serverSeq %d after %d on node c", e.ServerSeq, last)
		}
		last = e.ServerSeq
	}
	// The session's own channel, from node c.
	sessSnap, err := cc.Subscribe(ctx, far)
	if err != nil {
		t.Fatalf("subscribe %s from node c: %v", far, err)
	}
	if !strings.Contains(string(sessSnap.State), chat) {
		t.Fatalf("node c's snapshot of %s does not name its chat: %s", far, sessSnap.State)
	}
	// node c's client says it is active in the session: the session, on node b, has it.
	sess := &stream{t: t, c: cc, uri: far}
	_ = cc.Dispatch(ctx, far, 3, map[string]any{"type": messages.SessionActiveClientSet, "activeClient": map[string]any{"clientId": "cc", "tools": []any{}}})
	// (The session may say other things first: its chat's summary after the turn.)
	if e := sess.until(ctx, "the presence", func(e *client.Envelope) bool { return e.Type == messages.SessionActiveClientSet }); e.RejectionReason != "" || e.Origin == nil || e.Origin.ClientID != "cc" {
		t.Fatalf("node c's presence in %s: %+v %s", far, e, e.Action)
	}
	if onB, err := cb.Subscribe(ctx, far); err != nil || !strings.Contains(string(onB.State), `"cc"`) {
		t.Fatalf("the session on node b has not node c's client active: %v %s", err, onB.State)
	}

	// A turn started from node c and cancelled from node c.
	startTurn(t, ctx, cc, chat, 1, "t3", "!sleep 30")
	sC.until(ctx, "the third turn", func(e *client.Envelope) bool {
		return e.Type == "chat/turnStarted" && strings.Contains(string(e.Action), `"t3"`)
	})
	_ = cc.Dispatch(ctx, chat, 2, map[string]any{"type": "chat/turnCancelled", "turnId": "t3"})
	cancelled := sC.until(ctx, "the cancel", func(e *client.Envelope) bool { return e.Type == "chat/turnCancelled" })
	if cancelled.RejectionReason != "" || cancelled.Origin == nil || cancelled.Origin.ClientID != "cc" {
		t.Fatalf("the cancel from node c: %+v", cancelled)
	}
	sA.until(ctx, "the cancel on node a", func(e *client.Envelope) bool { return e.Type == "chat/turnCancelled" })

	// A session the cluster places itself is listed alike on every node, and a client
	// of another node disposes it.
	const near = "ahp-session:/near"
	createSessionOn(t, ctx, rootB, near, "")
	node := summaryNode(waitCatalog(t, ctx, rootA, "root/sessionAdded", near)["summary"])
	for _, r := range []*client.Conn{rootB, rootC} {
		if got := summaryNode(waitCatalog(t, ctx, r, "root/sessionAdded", near)["summary"]); got != node || node == "" {
			t.Fatalf("node %q lists %s on node %q", node, near, got)
		}
	}
	// A terminal of a node other than the session's, handed to the session, is
	// released when the session is disposed, as on one node: its claim watches the
	// session cluster-wide.
	held := "ahp-terminal:/held-by-near"
	onNode := map[bool]string{true: "a", false: "c"}[node != "a"]
	holdC := map[string]*clusterNode{"a": a, "c": c}[onNode].dial(ctx, "hold")
	createOn(t, ctx, holdC, "hold", held, onNode)
	_, sHeld, _ := subscribeStream(t, ctx, holdC, held)
	_ = holdC.Dispatch(ctx, held, 1, map[string]any{"type": "terminal/claimed", "claim": map[string]any{"kind": "session", "session": near, "chat": near + "/chat"}})
	if e := sHeld.until(ctx, "the claim's echo", isType(messages.TerminalClaimed)); e.Origin == nil || !strings.Contains(string(e.Action), near) {
		t.Fatalf("handing %s to %s: %+v %s", held, near, e, e.Action)
	}
	if _, err := ca.Request(ctx, "disposeSession", map[string]any{"channel": near}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*client.Conn{rootA, rootB, rootC} {
		waitCatalog(t, ctx, r, "root/sessionRemoved", near)
	}
	released := sHeld.until(ctx, "the claim's release", isType(messages.TerminalClaimed))
	var rel struct{ Claim messages.Claim }
	if err := json.Unmarshal(released.Action, &rel); err != nil || released.Origin != nil || rel.Claim != (messages.Claim{Kind: messages.ClaimClient}) {
		t.Fatalf("%s after %s on node %s was disposed: %s", held, near, node, released.Action)
	}

	// SIGKILL node b: its session leaves the other nodes' lists, and node c's client,
	// subscribed to the session and its chat, hears so on both channels.
	b.kill()
	waitSessionGone(t, ctx, cc, far, far, chat)
	for _, r := range []*client.Conn{rootA, rootC} {
		waitCatalog(t, ctx, r, "root/sessionRemoved", far)
	}
	for _, n := range []*client.Conn{rootA, rootC} {
		if got := sessionsOf(t, ctx, n); got[far] != "" {
			t.Fatalf("listSessions after node b was lost: %v", got)
		}
	}
	// Restarted with its state folder, node b has it back, on every list, and a client
	// of node a reads its turns again.
	b.start(secret)
	waitCatalog(t, ctx, rootA, "root/sessionAdded", far)
	waitCatalog(t, ctx, rootC, "root/sessionAdded", far)
	if got := sessionsOf(t, ctx, rootA); got[far] != "b" {
		t.Fatalf("listSessions on node a after node b came back: %v", got)
	}
	// What node a sends node b just after its restart may be lost while the link is
	// made again (protoactor's remote delivers at most once), and the subscribe is
	// then refused rather than answered: it is retried under the deadline.
	ca2 := a.dial(ctx, "ca2")
	var again *client.RawSnapshot
	for {
		if again, err = ca2.Subscribe(ctx, chat); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("subscribe %s from node a after node b came back: %v", chat, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ids := turnIDs(t, again.State); !slices.Contains(ids, "t1") || !slices.Contains(ids, "t2") {
		t.Fatalf("the chat after node b came back has turns %v: %s", ids, again.State)
	}
	// Node c's client, told the session was gone, subscribes to it and its chat again
	// on the same connection: both are back, with the turns.
	if sessAgain, err := cc.Subscribe(ctx, far); err != nil || !strings.Contains(string(sessAgain.State), chat) {
		t.Fatalf("subscribe %s again from node c: %v %v", far, err, sessAgain)
	}
	chatAgain, err := cc.Subscribe(ctx, chat)
	if err != nil {
		t.Fatalf("subscribe %s again from node c: %v", chat, err)
	}
	if ids := turnIDs(t, chatAgain.State); !slices.Contains(ids, "t1") || !slices.Contains(ids, "t2") {
		t.Fatalf("the chat from node c after node b came back has turns %v: %s", ids, chatAgain.State)
	}

	// A client that sends its subscribe right behind its createSession, without
	// waiting for the answer, gets the snapshot of the session made on another node.
	const piped = "ahp-session:/piped"
	cp := a.dial(ctx, "cp")
	createAndSubscribe(t, ctx, cp, "createSession", map[string]any{"channel": piped, "workingDirectories": []string{}, "_meta": map[string]any{"node": "c"}})
}

// waitSessionGone reads c's notifications until each of channels has had
// root/sessionRemoved of session with _meta.reason "node lost", scoped to that
// channel (what a subscriber of a lost node's session or chat hears).
func waitSessionGone(t *testing.T, ctx context.Context, c *client.Conn, session string, channels ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, ch := range channels {
		want[ch] = true
	}
	for len(want) > 0 {
		select {
		case n, open := <-c.Notifications:
			if !open {
				t.Fatalf("waiting for %v to be told of the lost node: the connection ended: %v", channels, c.Err())
			}
			if n.Method != "root/sessionRemoved" {
				continue
			}
			var p struct {
				Channel, Session string
				Meta             map[string]any `json:"_meta"`
			}
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatalf("root/sessionRemoved: %s", n.Params)
			}
			if !want[p.Channel] {
				continue
			}
			if p.Session != session || p.Meta["reason"] != "node lost" {
				t.Fatalf("what %s heard of its lost node: %s", p.Channel, n.Params)
			}
			delete(want, p.Channel)
		case <-ctx.Done():
			t.Fatalf("never told of the lost node on %v", want)
		}
	}
}

// sameModifiedAt waits until a chat's snapshot on node c (through cc) has the very
// modifiedAt of its snapshots on node b (through cb) taken just before and after it:
// once nothing changes, node c's copy is dated as the owner dated it.
func sameModifiedAt(t *testing.T, ctx context.Context, cb, cc *client.Conn, chat string) {
	t.Helper()
	modified := func(c *client.Conn) string {
		snap, err := c.Subscribe(ctx, chat)
		if err != nil {
			t.Fatalf("subscribe %s: %v", chat, err)
		}
		var st struct{ ModifiedAt string }
		if err := json.Unmarshal(snap.State, &st); err != nil || st.ModifiedAt == "" {
			t.Fatalf("a chat's snapshot without modifiedAt: %s", snap.State)
		}
		return st.ModifiedAt
	}
	for {
		before, onC, after := modified(cb), modified(cc), modified(cb)
		if before == after && onC == before {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s's modifiedAt is %s on node c and %s then %s on its own node", chat, onC, before, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createSessionOn makes a session on node (any node for ""), and returns its chat.
func createSessionOn(t *testing.T, ctx context.Context, c *client.Conn, uri, node string) string {
	t.Helper()
	params := map[string]any{"channel": uri, "workingDirectories": []string{}}
	if node != "" {
		params["_meta"] = map[string]any{"node": node}
	}
	raw, err := c.Request(ctx, "createSession", params)
	if err != nil {
		t.Fatalf("createSession %s on %q: %v", uri, node, err)
	}
	var r struct{ Chat string }
	if err := json.Unmarshal(raw, &r); err != nil || r.Chat == "" {
		t.Fatalf("createSession: %s", raw)
	}
	return r.Chat
}

func startTurn(t *testing.T, ctx context.Context, c *client.Conn, chat string, seq int64, turnID, text string) {
	t.Helper()
	err := c.Dispatch(ctx, chat, seq, map[string]any{"type": "chat/turnStarted", "turnId": turnID, "startedAt": time.Now().UTC().Format(time.RFC3339),
		"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitCatalog reads c's notifications until one of method names session, and returns
// its params; everything else it reads is dropped.
func waitCatalog(t *testing.T, ctx context.Context, c *client.Conn, method, session string) map[string]any {
	t.Helper()
	for {
		select {
		case n, open := <-c.Notifications:
			if !open {
				t.Fatalf("%s of %s: the connection ended: %v", method, session, c.Err())
			}
			if n.Method != method {
				continue
			}
			var p map[string]any
			if err := json.Unmarshal(n.Params, &p); err != nil {
				t.Fatalf("%s: %s", method, n.Params)
			}
			uri, _ := p["session"].(string)
			if s, ok := p["summary"].(map[string]any); ok {
				uri, _ = s["resource"].(string)
			}
			if uri == session {
				return p
			}
		case <-ctx.Done():
			t.Fatalf("%s of %s never came", method, session)
		}
	}
}

// sessionTitles is listSessions on c, as session URI → its title.
func sessionTitles(t *testing.T, ctx context.Context, c *client.Conn) map[string]string {
	t.Helper()
	raw, err := c.Request(ctx, "listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Items []struct{ Resource, Title string }
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("listSessions: %s", raw)
	}
	out := map[string]string{}
	for _, s := range r.Items {
		out[s.Resource] = s.Title
	}
	return out
}

// summaryNode is the node a session summary names in _meta.node.
func summaryNode(summary any) string {
	s, _ := summary.(map[string]any)
	meta, _ := s["_meta"].(map[string]any)
	node, _ := meta["node"].(string)
	return node
}

// sessionsOf is listSessions on c, as session URI → its node.
func sessionsOf(t *testing.T, ctx context.Context, c *client.Conn) map[string]string {
	t.Helper()
	raw, err := c.Request(ctx, "listSessions", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Items []map[string]any }
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("listSessions: %s", raw)
	}
	out := map[string]string{}
	for _, s := range r.Items {
		uri, _ := s["resource"].(string)
		out[uri] = summaryNode(s)
	}
	return out
}

// toolCallTerminal is the terminal a chat/toolCallComplete's result names.
func toolCallTerminal(action json.RawMessage) string {
	var a struct {
		Result struct{ Content []struct{ Resource string } }
	}
	_ = json.Unmarshal(action, &a)
	for _, c := range a.Result.Content {
		if c.Resource != "" {
			return c.Resource
		}
	}
	return ""
}

// turnIDs are the ids of a chat state's turns.
func turnIDs(t *testing.T, state json.RawMessage) []string {
	t.Helper()
	var st struct{ Turns []struct{ ID string } }
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatalf("a chat state: %v: %s", err, state)
	}
	var ids []string
	for _, turn := range st.Turns {
		ids = append(ids, turn.ID)
	}
	return ids
}

// shapeFrom is s's shape from the chat/turnStarted of turn on.
func shapeFrom(s *stream, turn string) []string {
	shape := s.shape()
	for i, entry := range shape {
		if strings.HasPrefix(entry, "chat/turnStarted:") && strings.Contains(entry, `"`+turn+`"`) {
			return shape[i:]
		}
	}
	return nil
}
