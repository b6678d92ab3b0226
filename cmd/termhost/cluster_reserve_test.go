package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// Two clients of two nodes that create the same session or terminal URI at the same
// instant, each on its own node: one create wins cluster-wide, and the other is
// refused as a duplicate on one node is.
func TestClusterCreateRace(t *testing.T) {
	t.Parallel()
	ctx, a, _, c := seedsCluster(t)
	ca, cc := a.dial(ctx, "racer-a"), c.dial(ctx, "racer-c")

	race := func(method string, params func(uri, node, clientID string) map[string]any, uri string, code int) (winner *client.Conn) {
		t.Helper()
		start := make(chan struct{})
		type result struct {
			c   *client.Conn
			err error
		}
		errs := make(chan result, 2)
		for _, r := range []struct {
			c          *client.Conn
			node, name string
		}{{ca, "a", "racer-a"}, {cc, "c", "racer-c"}} {
			go func() {
				<-start
				_, err := r.c.Request(ctx, method, params(uri, r.node, r.name))
				errs <- result{r.c, err}
			}()
		}
		close(start)
		won := 0
		for range 2 {
			r := <-errs
			err := r.err
			var e *messages.Error
			switch {
			case err == nil:
				won++
				winner = r.c
			case errors.As(err, &e) && e.Code == code:
			default:
				t.Fatalf("%s %s: %v", method, uri, err)
			}
		}
		if won != 1 {
			t.Fatalf("%s %s on nodes a and c at once: %d made, want 1", method, uri, won)
		}
		return winner
	}
	sessionParams := func(uri, node, _ string) map[string]any {
		return map[string]any{"channel": uri, "workingDirectories": []string{}, "_meta": map[string]any{"node": node}}
	}
	terminalParams := func(uri, node, clientID string) map[string]any {
		return map[string]any{"channel": uri, "claim": map[string]any{"kind": "client", "clientId": clientID}, "_meta": map[string]any{"node": node}}
	}
	var first *client.Conn
	for i := range 4 {
		race("createSession", sessionParams, fmt.Sprintf("ahp-session:/race-%d", i), messages.CodeSessionAlreadyExists)
		if w := race("createTerminal", terminalParams, fmt.Sprintf("ahp-terminal:/race-%d", i), messages.CodeAlreadyExists); i == 0 {
			first = w
		}
	}

	// A disposed URI is free again on any node: the reservation went with it.
	const uri = "ahp-terminal:/race-0"
	if _, err := first.Request(ctx, "disposeTerminal", map[string]any{"channel": uri}); err != nil {
		t.Fatal(err)
	}
	for {
		_, errA := ca.Request(ctx, "createTerminal", terminalParams(uri, "b", "racer-a"))
		if errA == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s after its disposal: %v", uri, errA)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
