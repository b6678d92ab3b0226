package server_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

// TestCrashDuringTurnsLosesNoCompletedTurn kills the real host (SIGKILL) in the middle
// of a burst of `!` turns in two sessions at once, the moment a client has been told a
// few turns are complete, and then reads what the restarted host kept. Every turn any
// client was sent chat/turnComplete for - before the kill, or still in flight on the
// socket when it came - is in its chat after the restart, complete, and its terminal
// opens with what it printed. Turns that had not completed may be lost; none is half
// kept (checkKeptTurns). Three rounds, each killing at a different count, each over
// the chats the rounds before left.
func TestCrashDuringTurnsLosesNoCompletedTurn(t *testing.T) {
	state, work := t.TempDir(), t.TempDir()
	sessions := []string{"ahp-session:/burst-a", "ahp-session:/burst-b"}
	chats := make([]string, len(sessions))
	completed := map[string]map[string]string{} // chat -> turn id -> its command

	for round, killAfter := range []int{1, 4, 9} {
		p := startHostProcess(t, state)
		conns := make([]*conn, len(sessions))
		for i, uri := range sessions {
			c := p.dial(fmt.Sprintf("burst-%d-%d", round, i))
			if round == 0 {
				// One turn each first, so both sessions are kept whatever the first
				// kill finds (a session is kept with its first turn).
				chats[i] = c.openSession(uri, work)
				turn := c.say(chats[i], "!echo start")
				c.waitCompleted(chats[i], turn)
				completed[chats[i]] = map[string]string{turn: "!echo start"}
			} else if _, err := c.Subscribe(c.ctx(), chats[i]); err != nil {
				t.Fatalf("round %d: the chat, with %d turns answered complete, is gone after a kill: %v", round, len(completed[chats[i]]), err)
			}
			conns[i] = c
		}
		// Each chat gets a queue of commands that run back to back.
		texts := map[string]string{} // chat and turn id -> command
		for i, c := range conns {
			var queue []string
			for n := range 30 {
				queue = append(queue, fmt.Sprintf("!echo burst-%d-%d-%d", round, i, n))
			}
			c.queueCommands(chats[i], queue...)
		}

		// Read both connections until killAfter turns completed on the first, then
		// kill the host at once, and go on reading what was already on its way.
		events := make(chan burstEvent, 256)
		var readers sync.WaitGroup
		for i, c := range conns {
			readers.Go(func() {
				// Until the connection ends: its client closes Notifications then.
				for n := range c.Notifications {
					env := n.Envelope
					if env == nil || env.Channel != chats[i] {
						continue
					}
					var a struct {
						TurnID  string `json:"turnId"`
						Message struct{ Text string }
					}
					_ = json.Unmarshal(env.Action, &a)
					if env.Type == messages.ChatTurnStarted || env.Type == messages.ChatTurnComplete {
						events <- burstEvent{typ: env.Type, chat: chats[i], turn: a.TurnID, text: a.Message.Text}
					}
				}
			})
		}
		readersDone := make(chan struct{})
		go func() { readers.Wait(); close(readersDone) }()
		seenFirst := 0
		deadline := time.After(waitTimeout)
		for seenFirst < killAfter {
			select {
			case ev := <-events:
				if ev.record(completed, texts) && ev.chat == chats[0] {
					seenFirst++
				}
			case <-deadline:
				t.Fatalf("round %d: %d of %d turns completed within %v", round, seenFirst, killAfter, waitTimeout)
			}
		}
		p.signal(syscall.SIGKILL)
		// What the sockets had already received counts as told, too: read on until
		// both connections have ended and their readers are done.
		deadline = time.After(waitTimeout)
	drain:
		for {
			select {
			case ev := <-events:
				ev.record(completed, texts)
			case <-readersDone:
				for {
					select {
					case ev := <-events:
						ev.record(completed, texts)
					default:
						break drain
					}
				}
			case <-deadline:
				t.Fatalf("round %d: the connections did not end within %v of the kill", round, waitTimeout)
			}
		}
		for i, uri := range sessions {
			checkKeptTurns(t, state, uri, chats[i])
		}
	}

	p := startHostProcess(t, state)
	c := p.dial("after-burst")
	for _, chat := range chats {
		snap, err := c.Subscribe(c.ctx(), chat)
		if err != nil {
			t.Fatalf("the chat after the kills: %v", err)
		}
		var st struct {
			Turns []struct {
				ID, State string
				Message   struct{ Text string }
			}
		}
		if err := json.Unmarshal(snap.State, &st); err != nil {
			t.Fatal(err)
		}
		kept := map[string]string{}
		for _, turn := range st.Turns {
			kept[turn.ID] = turn.State
		}
		if len(completed[chat]) == 0 {
			t.Fatalf("no turn of %s completed", chat)
		}
		for id, text := range completed[chat] {
			if kept[id] != messages.TurnStateComplete {
				t.Errorf("%s: turn %s (%s) was answered complete, and after the kill it is %q", chat, id, text, kept[id])
			}
		}
		uris := commandTerminals(t, snap.State)
		for _, uri := range uris {
			ts, err := c.Subscribe(c.ctx(), uri)
			if err != nil {
				t.Fatalf("a kept turn's terminal %s: %v", uri, err)
			}
			if st, _ := terminalText(t, ts); st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusExited {
				t.Fatalf("terminal %s is not exited: %s", uri, ts.State)
			}
		}
		t.Logf("%s: %d turns answered complete, %d kept", chat, len(completed[chat]), len(st.Turns))
	}
	p.signal(syscall.SIGTERM)
}

// burstEvent is a turn starting or completing in a chat.
type burstEvent struct {
	typ, chat, turn, text string
}

// record notes a turn's command when it starts (for the failure message) and the
// turn when it completes; it reports whether the event was a completion.
func (ev burstEvent) record(completed map[string]map[string]string, texts map[string]string) bool {
	key := ev.chat + " " + ev.turn
	if ev.typ == messages.ChatTurnStarted {
		texts[key] = ev.text
		return false
	}
	completed[ev.chat][ev.turn] = texts[key]
	return true
}
