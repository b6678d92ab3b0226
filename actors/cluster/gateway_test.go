package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/cluster/wire"
	"github.com/termhost/termhost/messages"
)

// recorder is where a remoteSub's messages to its proxy arrive in these tests: the
// proxy's inbox, as a process that keeps what it is sent.
type recorder struct{ got chan any }

func (r recorder) SendUserMessage(_ *actor.PID, msg any) { r.got <- msg }
func (recorder) SendSystemMessage(*actor.PID, any)       {}
func (recorder) Stop(*actor.PID)                         {}

func (r recorder) next(t *testing.T) any {
	t.Helper()
	select {
	case m := <-r.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy was sent nothing")
		return nil
	}
}

// frames is the frames of the next message, which must be a frame message.
func (r recorder) frames(t *testing.T) []string {
	t.Helper()
	m, ok := r.next(t).(*wire.Frame)
	if !ok {
		t.Fatalf("the proxy was sent %T, want a frame", m)
	}
	var out []string
	for _, f := range m.Take() {
		out = append(out, string(f))
	}
	return out
}

// echoFrame is the echo of a client's keystroke (data) as the terminal delivers it.
func echoFrame(uri string, seq uint64, data string) []byte {
	return messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: seq,
		Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalInput, Data: &data}),
		Origin: &messages.Origin{ClientID: "c", ClientSeq: int64(seq)}})
}

// outputFrame is the terminal's output data as it delivers it.
func outputFrame(uri string, seq uint64, data string) []byte {
	return messages.EnvelopeFrame(&messages.Envelope{Channel: uri, ServerSeq: seq,
		Action: messages.EncodeAction(&messages.Action{Type: messages.TerminalData, Data: &data})})
}

// What a remote subscription sends its proxy: the answer before anything the terminal
// delivered meanwhile; the echo of a client's action together with the output after
// it, in one message; an echo no output follows, alone; a refusal behind the echo
// before it.
func TestRemoteSubOrderAndCoalescing(t *testing.T) {
	system := actor.NewActorSystem()
	const uri = "ahp-terminal:/t"
	rec := recorder{got: make(chan any, 16)}
	proxy, _ := system.ProcessRegistry.Add(rec, "proxy/in")
	gw := newGateway(system, nil, nil)
	s := newRemoteSub(system, gw, uri, proxy, 1)

	seq := uint64(0)
	echo := func(data string) string {
		seq++
		return string(echoFrame(uri, seq, data))
	}
	output := func(data string) string {
		seq++
		return string(outputFrame(uri, seq, data))
	}

	// Before the answer: held, then sent after it, in order.
	early := []string{output("prompt$ "), echo("a")}
	for _, f := range early {
		s.Deliver(uri, []byte(f))
	}
	gw.link(s)
	s.answer(&wire.Subscribed{Gen: 1})
	if m, ok := rec.next(t).(*wire.Subscribed); !ok || m.Gen != 1 {
		t.Fatalf("the proxy was first sent %T, want the subscribe's answer", m)
	}
	if got := rec.frames(t); strings.Join(got, "\n") != strings.Join(early, "\n") {
		t.Fatalf("held frames came as %q, want %q", got, early)
	}

	// A keystroke's echo waits for its output and goes with it.
	e, o := echo("b"), output("b")
	s.Deliver(uri, []byte(e))
	s.Deliver(uri, []byte(o))
	if got := rec.frames(t); len(got) != 2 || got[0] != e || got[1] != o {
		t.Fatalf("an echo and its output came as %q, want both in one message", got)
	}

	// An echo nothing follows goes alone.
	e = echo("c")
	s.Deliver(uri, []byte(e))
	if got := rec.frames(t); len(got) != 1 || got[0] != e {
		t.Fatalf("a lone echo came as %q", got)
	}

	// A refusal goes behind the echo before it.
	e = echo("d")
	s.Deliver(uri, []byte(e))
	gw.mu.Lock()
	via := gw.subs[pidKey(proxy)]
	gw.mu.Unlock()
	if via != s {
		t.Fatal("the gateway does not know the proxy's subscription")
	}
	rejectSub{system: system, proxy: proxy, key: 7, via: via}.Deliver(uri, []byte("refused"))
	if got := rec.frames(t); len(got) != 1 || got[0] != e {
		t.Fatalf("before the refusal came %q, want the echo", got)
	}
	if m, ok := rec.next(t).(*wire.Rejected); !ok || m.Key != 7 {
		t.Fatalf("after the echo came %T, want the refusal", m)
	}

	// Closed: nothing more, not even a waiting echo; the gateway lets it go.
	s.Deliver(uri, []byte(echo("e")))
	s.close()
	s.Deliver(uri, []byte(output("f")))
	gw.mu.Lock()
	_, still := gw.subs[pidKey(proxy)]
	gw.mu.Unlock()
	if still {
		t.Fatal("the gateway still holds a closed subscription")
	}
	// A frame delivered after this point would be a bug; the marker is sent by the
	// test itself, so anything before it in the inbox came from the subscription.
	system.Root.Send(proxy, "marker")
	if m := rec.next(t); m != "marker" {
		t.Fatalf("a closed subscription sent %T", m)
	}
}

// Output that comes while the last frame message has not been taken joins it, up
// to openLimit; once taken, the next output starts a message of its own.
func TestRemoteSubGathersUntilTaken(t *testing.T) {
	system := actor.NewActorSystem()
	const uri = "ahp-terminal:/t"
	rec := recorder{got: make(chan any, 16)}
	proxy, _ := system.ProcessRegistry.Add(rec, "proxy/in")
	s := newRemoteSub(system, newGateway(system, nil, nil), uri, proxy, 1)
	// However slow this test runs, a message gathers until the test says otherwise.
	s.openFor = time.Hour
	s.answer(&wire.Subscribed{Gen: 1})
	rec.next(t)

	output := func(data string) []byte { return outputFrame(uri, 1, data) }
	for _, d := range []string{"a", "b", "c"} {
		s.Deliver(uri, output(d))
	}
	first, ok := rec.next(t).(*wire.Frame)
	if !ok {
		t.Fatal("the proxy was not sent a frame message")
	}
	if got := first.Take(); len(got) != 3 {
		t.Fatalf("three chunks sent before the message was taken came in %d frames, want 3 in one message", len(got))
	}
	s.Deliver(uri, output("d"))
	if got := rec.frames(t); len(got) != 1 || !strings.Contains(got[0], `"d"`) {
		t.Fatalf("output after the take came as %q, want a message of its own", got)
	}

	// A message nobody took for openFor (dropped unsent) gathers no more.
	s.Deliver(uri, output("e"))
	dropped, ok := rec.next(t).(*wire.Frame)
	if !ok {
		t.Fatal("the proxy was not sent a frame message")
	}
	s.mu.Lock()
	s.opened = s.opened.Add(-s.openFor)
	s.mu.Unlock()
	s.Deliver(uri, output("f"))
	if got := rec.frames(t); len(got) != 1 || !strings.Contains(got[0], `"f"`) {
		t.Fatalf("output after a message stayed untaken came as %q, want a message of its own", got)
	}
	if got := dropped.Take(); len(got) != 1 {
		t.Fatalf("the untaken message gathered %d frames, want 1", len(got))
	}

	// A message stops gathering at openLimit.
	big := output(strings.Repeat("x", openLimit/3))
	for range 3 {
		s.Deliver(uri, big)
	}
	var sizes []int
	for range 2 {
		m, ok := rec.next(t).(*wire.Frame)
		if !ok {
			t.Fatal("the proxy was not sent a frame message")
		}
		sizes = append(sizes, len(m.Take()))
	}
	if sizes[0] != 2 || sizes[1] != 1 {
		t.Fatalf("three chunks of a third of the limit came as messages of %v frames, want [2 1]", sizes)
	}
}
