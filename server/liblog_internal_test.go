package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A library's message that comes again within the window is written once, and the
// next time it is written it says how many were held back; other messages pass.
func TestLibraryLogRepeatsHeldBack(t *testing.T) {
	var out bytes.Buffer
	h := newOnceAWhile(slog.NewTextHandler(&out, nil), time.Minute).WithAttrs([]slog.Attr{slog.String("lib", "protoactor")})
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	log := func(at time.Duration, msg string) {
		if err := h.Handle(context.Background(), slog.NewRecord(t0.Add(at), slog.LevelError, msg, 0)); err != nil {
			t.Fatal(err)
		}
	}
	for s := range 5 {
		log(time.Duration(s)*time.Second, "Bad connection to the node health status")
	}
	log(2*time.Second, "EndpointWriter lost connection")
	log(70*time.Second, "Bad connection to the node health status")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines (the first, the other message, the one after the window), got %d:\n%s", len(lines), out.String())
	}
	if strings.Contains(lines[0], "repeated") || !strings.Contains(lines[0], "lib=protoactor") {
		t.Errorf("first line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "EndpointWriter lost connection") {
		t.Errorf("another message was held back: %s", lines[1])
	}
	if !strings.Contains(lines[2], "repeated=4") {
		t.Errorf("the line after the window does not count the 4 held back: %s", lines[2])
	}
}
