package ahp

import (
	"fmt"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

func TestClientsRememberForAWhile(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewClients(time.Minute, 3)
	r.now = func() time.Time { return now }

	if _, e := r.join("a", "ann", ""); e == nil || e.Code != messages.CodeInvalidRequest {
		t.Fatalf("resuming a client never seen: %v", e)
	}
	if v, e := r.join("a", "ann", "1.0.0"); e != nil || v != "1.0.0" {
		t.Fatalf("initialize: %q %v", v, e)
	}
	if _, e := r.join("a", "bob", "1.0.0"); e == nil || e.Code != messages.CodePermissionDenied {
		t.Fatalf("someone else initializing as ann's client: %v", e)
	}
	r.leave("a")
	now = now.Add(59 * time.Second)
	if v, e := r.join("a", "ann", ""); e != nil || v != "1.0.0" {
		t.Fatalf("resuming within the minute: %q %v", v, e)
	}
	r.leave("a")
	now = now.Add(61 * time.Second)
	if _, e := r.join("a", "ann", ""); e == nil {
		t.Fatal("resumed a client gone for longer than it is kept")
	}
	// Gone too long, it may be anyone's again.
	if _, e := r.join("a", "bob", "1.0.0"); e != nil {
		t.Fatalf("a clientId forgotten, taken anew: %v", e)
	}
}

func TestClientsAreBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewClients(time.Hour, 3)
	r.now = func() time.Time { return now }
	for i := range 3 {
		id := fmt.Sprint("c", i)
		if _, e := r.join(id, "ann", "1.0.0"); e != nil {
			t.Fatal(e)
		}
		now = now.Add(time.Second)
		r.leave(id)
	}
	if _, e := r.join("c3", "ann", "1.0.0"); e != nil { // c0, gone longest, is forgotten
		t.Fatal(e)
	}
	if len(r.byID) != 3 {
		t.Fatalf("%d remembered, want at most 3", len(r.byID))
	}
	if _, e := r.join("c0", "ann", ""); e == nil {
		t.Fatal("the client gone longest was kept past the bound")
	}
	if _, e := r.join("c2", "ann", ""); e != nil {
		t.Fatalf("a recent client was forgotten: %v", e)
	}
}
