package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

// These tests do what the protocol's own client does when its transport drops: open
// a new connection and send reconnect as the first request, falling back to
// initialize only when that is refused with an RPC error.

// mirror is a client's copy of one terminal: the state it was last given whole (a
// snapshot) and every action after it, folded as a client folds them.
type mirror struct {
	t       *testing.T
	uri     string
	base    messages.TerminalState
	baseSeq uint64
	log     []seqAction
	// last is the newest serverSeq seen on any channel: what reconnect names.
	last uint64
}

type seqAction struct {
	seq uint64
	a   messages.Action
}

func (m *mirror) reset(snap client.RawSnapshot, fromSeq uint64) {
	m.t.Helper()
	st, err := snap.TerminalState()
	if err != nil {
		m.t.Fatal(err)
	}
	m.base, m.baseSeq, m.log = *st, fromSeq, nil
}

func (m *mirror) take(env *client.Envelope) {
	m.last = max(m.last, env.ServerSeq)
	if env.Channel != m.uri || env.RejectionReason != "" {
		return
	}
	a, err := env.Decode()
	if err != nil {
		m.t.Fatal(err)
	}
	m.log = append(m.log, seqAction{env.ServerSeq, *a})
}

// at is the terminal as the mirror folds it up to and including serverSeq seq.
func (m *mirror) at(seq uint64) messages.TerminalState {
	st := m.base.Clone()
	for _, e := range m.log {
		if e.seq > m.baseSeq && e.seq <= seq {
			messages.ReduceTerminal(&st, &e.a)
		}
	}
	return st
}

func (m *mirror) text() string {
	st := m.at(^uint64(0))
	return st.Text()
}

// readUntil takes notifications from c until the mirror's text holds want.
func (m *mirror) readUntil(c *client.Conn, want string) {
	m.t.Helper()
	deadline := time.After(waitTimeout)
	for !strings.Contains(m.text(), want) {
		select {
		case n, ok := <-c.Notifications:
			if !ok {
				m.t.Fatalf("the connection ended before %q: %v", want, c.Err())
			}
			if n.Envelope != nil {
				m.take(n.Envelope)
			}
		case <-deadline:
			m.t.Fatalf("no %q; the mirror holds %q", want, lastN(m.text(), 300))
		}
	}
}

// resume opens a new connection and sends reconnect first, as the client does.
func (h *testHost) resume(t *testing.T, token, clientID string, last uint64, subs ...string) (*client.Conn, json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, h.url(token), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	raw, err := c.Request(ctx, "reconnect", map[string]any{"channel": messages.RootURI, "clientId": clientID, "lastSeenServerSeq": last, "subscriptions": subs})
	return c, raw, err
}

// applyResume folds a reconnect's answer into the mirror as a client does: a replay's
// actions in order, or a snapshot in place of what it had.
func (m *mirror) applyResume(raw json.RawMessage) string {
	m.t.Helper()
	var r struct {
		Type      string            `json:"type"`
		Actions   []json.RawMessage `json:"actions"`
		Snapshots []struct {
			Resource string          `json:"resource"`
			State    json.RawMessage `json:"state"`
			FromSeq  uint64          `json:"fromSeq"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		m.t.Fatal(err)
	}
	switch r.Type {
	case "replay":
		prev := m.last
		for _, a := range r.Actions {
			var env client.Envelope
			if err := json.Unmarshal(a, &env); err != nil {
				m.t.Fatal(err)
			}
			if env.ServerSeq <= prev {
				m.t.Fatalf("replay out of order or not after lastSeen: %d after %d", env.ServerSeq, prev)
			}
			prev = env.ServerSeq
			m.take(&env)
		}
	case "snapshot":
		for _, s := range r.Snapshots {
			if s.Resource == m.uri {
				m.reset(client.RawSnapshot{Resource: s.Resource, State: s.State}, s.FromSeq)
				m.last = max(m.last, s.FromSeq)
			}
		}
	default:
		m.t.Fatalf("reconnect answered %s", raw)
	}
	return r.Type
}

// freshMatches subscribes a new client and checks the mirror, folded to the fresh
// snapshot's fromSeq, holds the same content byte for byte. c is the mirror's
// connection, read up to the snapshot's point first.
func (m *mirror) freshMatches(h *testHost, c *client.Conn) {
	m.t.Helper()
	fresh := h.dial("fresh-" + m.t.Name())
	raw := fresh.mustRequest("subscribe", map[string]any{"channel": m.uri})
	var r struct {
		Snapshot struct {
			Resource string          `json:"resource"`
			State    json.RawMessage `json:"state"`
			FromSeq  uint64          `json:"fromSeq"`
		} `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		m.t.Fatal(err)
	}
	st, err := (&client.RawSnapshot{Resource: m.uri, State: r.Snapshot.State}).TerminalState()
	if err != nil {
		m.t.Fatal(err)
	}
	// Whatever was sent to c before the snapshot was taken is in c's queue before the
	// answer to a ping sent now, and the client hands notifications over in order.
	if _, err := c.Request(context.Background(), "ping", map[string]any{"channel": messages.RootURI}); err != nil {
		m.t.Fatal(err)
	}
	for drained := false; !drained; {
		select {
		case n := <-c.Notifications:
			if n.Envelope != nil {
				m.take(n.Envelope)
			}
		default:
			drained = true
		}
	}
	folded := m.at(r.Snapshot.FromSeq)
	got, want := folded.Text(), st.Text()
	if got != want {
		m.t.Fatalf("the resumed client holds %d bytes, a fresh subscriber %d; they differ from byte %d:\nresumed …%q\nfresh   …%q",
			len(got), len(want), firstDiff(got, want), lastN(got, 200), lastN(want, 200))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// floodCommand prints 3,000 lines one write at a time, pausing 10 ms every 100 so the
// flood lasts a while after the client has seen its start, then a marker the test
// waits for.
const floodCommand = "for i in $(seq 1 3000); do echo line-$i; [ $((i%100)) = 0 ] && sleep 0.01; done; echo FLOOD-$((40+2))"

// startFlood opens a client that initializes, creates a terminal and starts a flood
// in it, and returns its mirror once some of the flood has arrived.
func startFlood(t *testing.T, h *testHost, clientID, uri, command string) (*client.Conn, *mirror) {
	t.Helper()
	c := h.dial(clientID)
	snap := c.createTerminal(uri, nil)
	m := &mirror{t: t, uri: uri}
	m.reset(*snap, 0)
	c.input(uri, command+"\r")
	m.readUntil(c.Conn, "line-50")
	return c.Conn, m
}

// TestResumeFirstThingReplays: a client dropped mid-flood without a close frame sends
// reconnect first on its new connection; it gets the missed actions as a replay and
// goes on live, and what it folds equals a fresh subscriber's snapshot byte for byte.
func TestResumeFirstThingReplays(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode terminalMode) {
		h := mode.host(t)
		uri := "ahp-terminal:/resumed"
		c, m := startFlood(t, h, "resumer", uri, floodCommand)
		_ = c.WS().CloseNow() // the transport drops: no close frame

		c2, raw, err := h.resume(t, h.owner, "resumer", m.last, messages.RootURI, uri)
		if err != nil {
			t.Fatalf("reconnect as the first request: %v", err)
		}
		if kind := m.applyResume(raw); kind != "replay" {
			t.Fatalf("reconnect answered %s; want a replay", kind)
		}
		m.readUntil(c2, "FLOOD-42")
		m.freshMatches(h, c2)

		// And it goes on live as after initialize: its own input is taken, as the
		// same client (its claim names it).
		if err := c2.Dispatch(context.Background(), uri, 1, map[string]any{"type": "terminal/input", "data": "echo again-$((3*3))\r"}); err != nil {
			t.Fatal(err)
		}
		m.readUntil(c2, "again-9")
	})
}

// TestResumeAcrossARingOverflow: when the replay ring no longer reaches back, the
// reconnect answers with snapshots, and the client still ends equal to a fresh one.
func TestResumeAcrossARingOverflow(t *testing.T) {
	h := startHost(t, func(c *server.Config) { c.ReplayEntries = 16 })
	uri := "ahp-terminal:/overflowed"
	c, m := startFlood(t, h, "overflower", uri, floodCommand)
	_ = c.WS().CloseNow()
	// More than the ring holds happens while the client is away.
	w := h.dial("overflow-watcher")
	if _, err := w.Subscribe(w.ctx(), uri); err != nil {
		t.Fatal(err)
	}
	w.waitOutput(uri, "FLOOD-42")

	c2, raw, err := h.resume(t, h.owner, "overflower", m.last, uri)
	if err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if kind := m.applyResume(raw); kind != "snapshot" {
		t.Fatalf("reconnect answered %s; want snapshots", kind)
	}
	m.readUntil(c2, "FLOOD-42")
	m.freshMatches(h, c2)
}

// TestResumeAfterARestartFallsBack: a host that restarted does not know the client,
// so reconnect is refused with an RPC error and the client initializes.
func TestResumeAfterARestartFallsBack(t *testing.T) {
	dir := t.TempDir()
	h := startHostIn(t, dir, "127.0.0.1:0")
	a := h.dial("restarted")
	a.mustRequest("ping", map[string]any{"channel": messages.RootURI})
	h.stop()

	h2 := startHostIn(t, dir, "127.0.0.1:0")
	c, _, err := h2.resume(t, h2.owner, "restarted", 5, messages.RootURI)
	var e *messages.Error
	if !errors.As(err, &e) || e.Code != messages.CodeInvalidRequest || !strings.Contains(e.Message, "call initialize") {
		t.Fatalf("reconnect after a restart: %v; want an RPC error asking for initialize", err)
	}
	if _, err := c.Initialize(context.Background(), "restarted", messages.RootURI); err != nil {
		t.Fatalf("initialize after the refused reconnect: %v", err)
	}
}

// TestNobodyResumesAsSomeoneElse: a clientId is its person's: another signed-in
// person can neither reconnect nor initialize as it, so cannot take over its claims.
func TestNobodyResumesAsSomeoneElse(t *testing.T) {
	h := startHost(t)
	owner := h.dial("owners-client")
	owner.createTerminal("ahp-terminal:/owners", nil)
	const last = 0
	_ = owner.WS().CloseNow()

	member, err := h.store.AddToken("mallory", auth.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := h.resume(t, member, "owners-client", last, "ahp-terminal:/owners")
	if e := rpcError(t, err, messages.CodePermissionDenied); !strings.Contains(e.Message, "belongs to someone else") {
		t.Fatalf("a reconnect as someone else's client: %q", e.Message)
	}
	_, err = c.Initialize(context.Background(), "owners-client", messages.RootURI)
	rpcError(t, err, messages.CodePermissionDenied)
	// The owner resumes as itself.
	if _, _, err := h.resume(t, h.owner, "owners-client", last, "ahp-terminal:/owners"); err != nil {
		t.Fatalf("the owner's own reconnect: %v", err)
	}
}
