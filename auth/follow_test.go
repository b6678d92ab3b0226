package auth

import (
	"os"
	"path/filepath"
	"testing"
)

// Follow answers as Authenticate at every call: a change to the users file, made by
// hand, by another process's store or by this one, counts from the next call.
func TestFollowSeesEveryChange(t *testing.T) {
	s, dir := openStore(t)
	alice := mustAdd(t, s, "alice", RoleMember)
	follow := s.Follow(alice)
	for range 3 {
		if p, ok := follow(); !ok || p.User != "alice" || p.Role != RoleMember {
			t.Fatalf("follow = %+v, %v; want alice, a member", p, ok)
		}
	}

	// Another process (a second store on the same folder) makes her a guest.
	cli := reopen(t, dir)
	h := hashToken(alice)
	writeUsers(t, dir, `{"users": [{"name": "alice", "role": "guest", "tokens": [{"sha256": "`+hexOf(h[:])+`"}]}]}`)
	if p, ok := follow(); !ok || p.Role != RoleGuest || p.Can(GrantTerminalInput) {
		t.Fatalf("after the edit by hand: %+v, %v; want alice, a guest", p, ok)
	}
	if _, err := cli.AddToken("bob", RoleMember); err != nil {
		t.Fatal(err)
	}
	if p, ok := follow(); !ok || p.Role != RoleGuest {
		t.Fatalf("after someone else's token: %+v, %v", p, ok)
	}
	if n, err := cli.Revoke("alice"); n != 1 || err != nil {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if p, ok := follow(); ok || p.SignedIn() {
		t.Fatalf("after the revocation: %+v, %v; want nobody", p, ok)
	}

	// This store's own edit, and the file removed.
	carl := mustAdd(t, s, "carl", RoleOwner)
	followCarl := s.Follow(carl)
	if _, ok := followCarl(); !ok {
		t.Fatal("carl does not sign in")
	}
	if n, err := s.Revoke("carl"); n != 1 || err != nil {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if _, ok := followCarl(); ok {
		t.Fatal("carl signs in after this store revoked him")
	}
	dave := mustAdd(t, s, "dave", RoleOwner)
	followDave := s.Follow(dave)
	if _, ok := followDave(); !ok {
		t.Fatal("dave does not sign in")
	}
	if err := os.Remove(filepath.Join(dir, "users.json")); err != nil {
		t.Fatal(err)
	}
	if _, ok := followDave(); ok {
		t.Fatal("dave signs in after users.json was removed")
	}
	if _, ok := s.Follow("")(); ok {
		t.Fatal("the empty token signs in")
	}
}

// A users file written in place is empty for a moment: read then, it keeps the
// users it had (it would otherwise sign every connection out), and says why.
func TestEmptiedFileKeepsTheUsers(t *testing.T) {
	s, dir := openStore(t)
	alice := mustAdd(t, s, "alice", RoleMember)
	good, err := os.ReadFile(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeUsers(t, dir, "")
	if p, ok := s.Authenticate(alice); !ok || p.User != "alice" {
		t.Fatalf("alice after the file was emptied: %+v, %v", p, ok)
	}
	if err := s.ReloadError(); err == nil {
		t.Error("no ReloadError for an emptied file")
	}
	writeUsers(t, dir, string(good))
	mustAuth(t, s, alice)
	if err := s.ReloadError(); err != nil {
		t.Errorf("ReloadError after the file was written: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "users.json")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(alice); ok {
		t.Error("alice signs in after users.json was removed")
	}
}
