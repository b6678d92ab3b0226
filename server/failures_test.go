package server_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/server"
)

// records is a log handler that hands the test each record the host logs.
type records chan slog.Record

func (records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r <- rec.Clone():
	default: // the test stopped reading; the host must not wait for it
	}
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// An actor that panics is named in the host's log with its reason: protoactor-go
// restarts it quietly, and stops it quietly after ten failures.
func TestAnActorsFailureIsLogged(t *testing.T) {
	logged := make(records, 1024)
	h := startHost(t, func(c *server.Config) { c.Logger = slog.New(logged) })
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
	deadline := time.After(waitTimeout)
	for {
		select {
		case rec := <-logged:
			if rec.Message != "an actor failed" {
				continue
			}
			got := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { got[a.Key] = a.Value.String(); return true })
			if rec.Level != slog.LevelError || got["actor"] != "fails-on-purpose" || got["reason"] != "told to fail: now" || got["then"] != "RestartDirective" {
				t.Fatalf("the failure was logged as %v %q %v", rec.Level, rec.Message, got)
			}
			return
		case <-deadline:
			t.Fatal("the failure is not in the host's log")
		}
	}
}
