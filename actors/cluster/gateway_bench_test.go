package cluster

import (
	"strings"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/cluster/wire"
)

// taker is a proxy's inbox as the endpoint writer meets it: the frame messages sent
// to it wait until take takes them, as the writer does on its own goroutine.
type taker struct {
	mu     sync.Mutex
	sent   []*wire.Frame
	frames int
}

func (t *taker) SendUserMessage(_ *actor.PID, msg any) {
	if m, ok := msg.(*wire.Frame); ok {
		t.mu.Lock()
		t.sent = append(t.sent, m)
		t.mu.Unlock()
	}
}
func (*taker) SendSystemMessage(*actor.PID, any) {}
func (*taker) Stop(*actor.PID)                   {}

// take takes every frame message sent so far.
func (t *taker) take() {
	t.mu.Lock()
	sent := t.sent
	t.sent = t.sent[:0]
	t.mu.Unlock()
	for _, m := range sent {
		t.frames += len(m.Take())
	}
}

// A remote subscription on the owner hands each frame its terminal delivers to the
// proxy's node: a keystroke's echo followed by its output (one message for both),
// or output alone (a flood the writer keeps up with, a message per chunk).
func BenchmarkRemoteSubDeliver(b *testing.B) {
	const uri = "ahp-terminal:/t"
	for _, c := range []struct {
		name   string
		frames [][]byte
	}{
		{"keystroke", [][]byte{echoFrame(uri, 40, "k"), outputFrame(uri, 41, "k")}},
		{"output", [][]byte{outputFrame(uri, 41, strings.Repeat("0123456789abcdef", 256))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			system := actor.NewActorSystem()
			t := &taker{}
			proxy, _ := system.ProcessRegistry.Add(t, "proxy/in")
			s := newRemoteSub(system, newGateway(system, nil, nil), uri, proxy, 1)
			s.answer(&wire.Subscribed{Gen: 1})
			b.ReportAllocs()
			for b.Loop() {
				for _, f := range c.frames {
					s.Deliver(uri, f)
				}
				t.take()
			}
			b.StopTimer()
			s.close()
			if want := b.N * len(c.frames); t.frames != want {
				b.Fatalf("the proxy took %d frames, want %d", t.frames, want)
			}
		})
	}
}
