package reservations

import (
	"testing"
	"time"
)

func TestAnotherNodesReservationIsRefusedWhileItStands(t *testing.T) {
	var b Book
	a := Holder{Addr: "a:1", Instance: "i1", At: time.Now()}
	c := Holder{Addr: "c:1", Instance: "i3", At: time.Now()}
	standing := true
	stands := func(Holder) bool { return standing }
	if b.Take("ahp-terminal:/x", a, stands) {
		t.Fatal("the first reservation of a URI was refused")
	}
	if !b.Take("ahp-terminal:/x", c, stands) {
		t.Fatal("another node's reservation went through while the first stands")
	}
	if b.Take("ahp-terminal:/x", a, stands) {
		t.Fatal("the holder's own second reservation was refused")
	}
	restarted := Holder{Addr: "a:1", Instance: "i2", At: time.Now()}
	if !b.Take("ahp-terminal:/x", restarted, stands) {
		t.Fatal("the same address as another instance took a standing reservation")
	}
	standing = false
	if b.Take("ahp-terminal:/x", c, stands) {
		t.Fatal("a reservation that no longer stands still refused another node")
	}
}

func TestReleaseAndDropGiveBackOnlyTheirNodes(t *testing.T) {
	var b Book
	always := func(Holder) bool { return true }
	a := Holder{Addr: "a:1", Instance: "i1", At: time.Now()}
	c := Holder{Addr: "c:1", Instance: "i3", At: time.Now()}
	b.Take("u1", a, always)
	b.Take("u2", a, always)
	b.Take("u3", c, always)
	b.Release("u1", "c:1", "i3") // not c's
	if !b.Take("u1", c, always) {
		t.Fatal("a release by a node that did not hold the URI gave it back")
	}
	b.Release("u1", "a:1", "i1")
	if b.Take("u1", c, always) {
		t.Fatal("the holder's release did not give the URI back")
	}
	b.Drop("a:1")
	if b.Take("u2", c, always) {
		t.Fatal("a gone node's reservation still refused another")
	}
	if !b.Take("u3", a, always) {
		t.Fatal("dropping one node dropped another's reservation")
	}
}

func TestFreshWithinHold(t *testing.T) {
	if !(Holder{At: time.Now()}).Fresh() || (Holder{At: time.Now().Add(-Hold - time.Second)}).Fresh() {
		t.Fatal("Fresh does not follow Hold")
	}
}
