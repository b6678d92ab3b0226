package terminal

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/messages"
)

func clientClaim(id string) messages.Claim {
	return messages.Claim{Kind: messages.ClaimClient, ClientID: id}
}

func sessionClaim(session, chat string) messages.Claim {
	return messages.Claim{Kind: messages.ClaimSession, Session: session, Chat: chat}
}

func claimed(c messages.Claim) *messages.Action {
	return &messages.Action{Type: messages.TerminalClaimed, Claim: &c}
}

// claimer is one client dispatching claims to a terminal and seeing their fate:
// the echo every subscriber gets, or a rejection to it alone.
type claimer struct {
	id       string
	sub      *collector
	dispatch func(*messages.Action)
}

func newClaimer(system *actor.ActorSystem, terminalPID *actor.PID, uri, id string) *claimer {
	sub := newCollector()
	return &claimer{id: id, sub: sub, dispatch: dispatcher(system, terminalPID, uri, id, sub)}
}

// claim dispatches a claim and waits for its echo on watch, or its rejection; it
// returns the rejection's reason, "" for an echo.
func (c *claimer) claim(t *testing.T, watch *collector, next messages.Claim) string {
	t.Helper()
	echoes, rejections := len(watch.actions(messages.TerminalClaimed)), len(c.sub.rejections())
	c.dispatch(claimed(next))
	deadline := time.After(waitTimeout)
	for {
		if r := c.sub.rejections(); len(r) > rejections {
			return r[len(r)-1]
		}
		if len(watch.actions(messages.TerminalClaimed)) > echoes {
			return ""
		}
		select {
		case <-c.sub.wake:
		case <-watch.wake:
		case <-deadline:
			t.Fatalf("no answer to %s's claim %+v", c.id, next)
		}
	}
}

// TestClaimRules: a client claim naming nobody or the sender may be changed by that
// sender; a session's terminal is handed on only within that session; a refusal
// goes to the sender alone.
func TestClaimRules(t *testing.T) {
	system := newTestSystem(t)
	uri := "ahp-terminal:/claims"
	terminalPID, watch := startTerminal(t, system, &Create{URI: uri, Claim: clientClaim("ann")})
	ann := newClaimer(system, terminalPID, uri, "ann")
	bob := newClaimer(system, terminalPID, uri, "bob")
	for i, step := range []struct {
		by      *claimer
		next    messages.Claim
		refusal string
	}{
		{bob, clientClaim("bob"), "the terminal is claimed by client ann"},
		{ann, clientClaim("bob"), ""},
		{ann, clientClaim("ann"), "the terminal is claimed by client bob"},
		{bob, clientClaim(""), ""},
		{ann, sessionClaim("ahp-session:/s", "ahp-session:/s/chat"), ""},
		{ann, clientClaim("ann"), "the terminal is claimed by session ahp-session:/s"},
		{bob, sessionClaim("ahp-session:/other", "ahp-session:/other/chat"), "the terminal is claimed by session ahp-session:/s"},
		// Within the session, by anyone its grant lets through: to another chat,
		// then to the session alone (the background).
		{bob, sessionClaim("ahp-session:/s", "ahp-session:/s/chat-2"), ""},
		{bob, sessionClaim("ahp-session:/s", ""), ""},
	} {
		if got := step.by.claim(t, watch, step.next); got != step.refusal {
			t.Fatalf("step %d: %s claiming %+v: refusal %q, want %q", i, step.by.id, step.next, got, step.refusal)
		}
	}
	st := subscribe(t, system, terminalPID, uri, newCollector())
	if want := sessionClaim("ahp-session:/s", ""); st.Claim != want {
		t.Fatalf("claim %+v, want %+v", st.Claim, want)
	}
}

// TestClaimKeepsItsPlaceInTheChannel: the claim actor decides a claim off the
// terminal's mailbox, and the channel still carries a client's actions in the order
// it sent them: each claim's echo before the input sent after it.
func TestClaimKeepsItsPlaceInTheChannel(t *testing.T) {
	system := newTestSystem(t)
	uri := "ahp-terminal:/claim-order"
	terminalPID, watch := startTerminal(t, system, &Create{URI: uri, Claim: clientClaim("ann")})
	ann := dispatcher(system, terminalPID, uri, "ann", newCollector())
	const rounds = 50
	for i := range rounds {
		ann(claimed(clientClaim("ann")))
		ann(input(fmt.Sprintf(": %d\r", i)))
	}
	watch.waitUntil(t, "every input's echo", func() bool { return len(watch.actions(messages.TerminalInput)) == rounds })
	var got []string
	for _, a := range watch.actions("") {
		if a.Type == messages.TerminalClaimed || a.Type == messages.TerminalInput {
			got = append(got, a.Type)
		}
	}
	for i, typ := range got {
		if want := []string{messages.TerminalClaimed, messages.TerminalInput}[i%2]; typ != want {
			t.Fatalf("action %d is %s, want %s; the channel carried %v", i, typ, want, got)
		}
	}
}

// TestClaimOfAGoneSessionIsReleased: a session's claim on a terminal that outlives
// the session (a client handed it over, or created it so) is released to an
// unclaimed client claim when the session goes, with the reason, and any client may
// take it then.
func TestClaimOfAGoneSessionIsReleased(t *testing.T) {
	for _, tc := range []struct {
		name    string
		created bool // the terminal is created with the session's claim
	}{{"handed over", false}, {"created so", true}} {
		t.Run(tc.name, func(t *testing.T) {
			system := newTestSystem(t)
			const session = "ahp-session:/s"
			sessionPID := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
			r := testRoot{sessions: map[string]*actor.PID{session: sessionPID}}
			uri := "ahp-terminal:/released"
			first := clientClaim("ann")
			if tc.created {
				first = sessionClaim(session, session+"/chat")
			}
			terminalPID, watch := r.start(t, system, &Create{URI: uri, Claim: first})
			ann := newClaimer(system, terminalPID, uri, "ann")
			bob := newClaimer(system, terminalPID, uri, "bob")
			if !tc.created {
				if reason := ann.claim(t, watch, sessionClaim(session, session+"/chat")); reason != "" {
					t.Fatalf("handing over: %s", reason)
				}
			}
			if reason := ann.claim(t, watch, clientClaim("ann")); !strings.Contains(reason, "claimed by session") {
				t.Fatalf("a client's claim on the live session's terminal: refusal %q", reason)
			}

			released := len(watch.actions(messages.TerminalClaimed))
			if err := system.Root.StopFuture(sessionPID).Wait(); err != nil {
				t.Fatal(err)
			}
			watch.waitUntil(t, "the release", func() bool { return len(watch.actions(messages.TerminalClaimed)) > released })
			a := watch.actions(messages.TerminalClaimed)[released]
			if *a.Claim != clientClaim("") || !strings.Contains(fmt.Sprint(a.Meta["termhost"]), session+" is gone") {
				t.Fatalf("release: claim %+v, meta %v", *a.Claim, a.Meta)
			}
			if reason := bob.claim(t, watch, clientClaim("bob")); reason != "" {
				t.Fatalf("taking the released terminal: %s", reason)
			}
		})
	}
}
