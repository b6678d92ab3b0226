package ahp

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

func TestClientsRememberForAWhile(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewClients(time.Minute, 3)
	r.now = func() time.Time { return now }

	if _, e := r.join("a", "ann", "", nil); e == nil || e.Code != messages.CodeInvalidRequest {
		t.Fatalf("resuming a client never seen: %v", e)
	}
	if v, e := r.join("a", "ann", "1.0.0", nil); e != nil || v != "1.0.0" {
		t.Fatalf("initialize: %q %v", v, e)
	}
	if _, e := r.join("a", "bob", "1.0.0", nil); e == nil || e.Code != messages.CodePermissionDenied {
		t.Fatalf("someone else initializing as ann's client: %v", e)
	}
	r.leave("a", nil)
	now = now.Add(59 * time.Second)
	if v, e := r.join("a", "ann", "", nil); e != nil || v != "1.0.0" {
		t.Fatalf("resuming within the minute: %q %v", v, e)
	}
	r.leave("a", nil)
	now = now.Add(61 * time.Second)
	if _, e := r.join("a", "ann", "", nil); e == nil {
		t.Fatal("resumed a client gone for longer than it is kept")
	}
	// Gone too long, it may be anyone's again.
	if _, e := r.join("a", "bob", "1.0.0", nil); e != nil {
		t.Fatalf("a clientId forgotten, taken anew: %v", e)
	}
}

func TestClientsAreBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewClients(time.Hour, 3)
	r.now = func() time.Time { return now }
	for i := range 3 {
		id := fmt.Sprint("c", i)
		if _, e := r.join(id, "ann", "1.0.0", nil); e != nil {
			t.Fatal(e)
		}
		now = now.Add(time.Second)
		r.leave(id, nil)
	}
	if _, e := r.join("c3", "ann", "1.0.0", nil); e != nil { // c0, gone longest, is forgotten
		t.Fatal(e)
	}
	if len(r.byID) != 3 {
		t.Fatalf("%d remembered, want at most 3", len(r.byID))
	}
	if _, e := r.join("c0", "ann", "", nil); e == nil {
		t.Fatal("the client gone longest was kept past the bound")
	}
	if _, e := r.join("c2", "ann", "", nil); e != nil {
		t.Fatalf("a recent client was forgotten: %v", e)
	}
}

// A client that resumes while its old connection is going is heard of as gone and
// back in the order its connections came and went: whichever of the old connection's
// leave and the new one's join comes first, the last word the sessions are told is
// that it is back, since it is connected. The words are told under the table's lock;
// told after it, a resume's "back" could come before the old connection's "gone".
func TestClientsTellInTheOrderTheyChange(t *testing.T) {
	r := NewClients(time.Minute, 10)
	var mu sync.Mutex
	var told []string
	tell := func(word string) func() {
		return func() {
			mu.Lock()
			told = append(told, word)
			mu.Unlock()
		}
	}
	if _, e := r.join("a", "ann", "1.0.0", nil); e != nil {
		t.Fatal(e)
	}
	for round := range 2000 {
		told = told[:0]
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.leave("a", tell("gone")) }()
		go func() {
			defer wg.Done()
			if _, e := r.join("a", "ann", "", tell("back")); e != nil {
				t.Error(e)
			}
		}()
		wg.Wait()
		if len(told) == 0 || told[len(told)-1] != "back" {
			t.Fatalf("round %d: the sessions were told %v of a connected client", round, told)
		}
	}
}
