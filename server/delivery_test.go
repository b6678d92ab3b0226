package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// A subscriber that allows coalescing (delivery.maxLatencyMs) gets the same output,
// in order, in fewer frames than one that does not.
func TestDeliveryLatencyCoalescesOutput(t *testing.T) {
	h := startHost(t)
	a := h.dial("a")
	b := h.dial("b")
	uri := "ahp-terminal:/coalesced"
	a.createTerminal(uri, nil)
	raw := b.mustRequest("subscribe", map[string]any{"channel": uri, "delivery": map[string]any{"maxLatencyMs": 1000}})
	var res struct {
		Snapshot *client.RawSnapshot `json:"snapshot"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Snapshot == nil {
		t.Fatalf("subscribe answer %s: %v", raw, err)
	}

	a.input(uri, "for i in $(seq 1 300); do echo line$i; done\r")
	wantOut := "line300"
	a.waitOutput(uri, wantOut)
	b.waitOutput(uri, wantOut)

	frames := func(c *conn) int {
		n := 0
		for _, s := range c.seen {
			if e := s.Envelope; e != nil && e.Channel == uri && e.Type == messages.TerminalData {
				n++
			}
		}
		return n
	}
	out := strings.ReplaceAll(b.output(uri), "\r\n", "\n")
	at := 0
	for i := 1; i <= 300; i++ {
		line := fmt.Sprintf("line%d\n", i)
		j := strings.Index(out[at:], line)
		if j < 0 {
			t.Fatalf("the coalescing subscriber is missing %q in order; got %q", line, truncate(out, 400))
		}
		at += j + len(line)
	}
	// Equal counts would not show the latency was honoured; when the output came in
	// several frames, the subscriber that allows a second of coalescing gets fewer.
	// (All of it arriving in one or two frames would show nothing either way.)
	if fa, fb := frames(a), frames(b); fb > fa || (fa >= 3 && fb >= fa) {
		t.Fatalf("the coalescing subscriber got %d terminal/data frames against %d for one that asked for none", fb, fa)
	}
}

// A delivery latency that is not a number of milliseconds is refused, and the
// connection goes on.
func TestDeliveryLatencyMustBeMilliseconds(t *testing.T) {
	h := startHost(t)
	c := h.dial("c")
	for _, bad := range []any{-1, "soon", map[string]any{}} {
		_, err := c.request("subscribe", map[string]any{"channel": messages.RootURI, "delivery": map[string]any{"maxLatencyMs": bad}})
		rpcError(t, err, messages.CodeInvalidParams)
	}
	c.mustRequest("subscribe", map[string]any{"channel": messages.RootURI, "delivery": map[string]any{"maxLatencyMs": 0}})
}
