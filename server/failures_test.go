package server_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/server"
)

// lockedBuffer is a log the test reads while the host writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An actor that panics is named in the host's log with its reason: protoactor-go
// restarts it quietly, and stops it quietly after ten failures.
func TestAnActorsFailureIsLogged(t *testing.T) {
	var log lockedBuffer
	h := startHost(t, func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	props := actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			panic("told to fail: " + s)
		}
	})
	pid, err := h.srv.System().Root.SpawnNamed(props, "fails-on-purpose")
	if err != nil {
		t.Fatal(err)
	}
	h.srv.System().Root.Send(pid, "now")
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(log.String(), `msg="an actor failed" actor=fails-on-purpose reason="told to fail: now" then=RestartDirective`) {
		if time.Now().After(deadline) {
			t.Fatalf("the failure is not in the host's log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
