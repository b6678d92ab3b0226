package auth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// replica opens a store in a folder of its own, one node's copy of a cluster's users.
func replica(t *testing.T) (*Store, string) {
	t.Helper()
	s, dir := openStore(t)
	if err := s.EnableReplication(); err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// exchange sends each store's copy to the other until neither says the other is
// behind, as the cluster's users actors do, and fails if that does not settle.
func exchange(t *testing.T, a, b *Store) {
	t.Helper()
	for range 4 {
		_, behindA, err := b.Merge(a.Export())
		if err != nil {
			t.Fatal(err)
		}
		_, behindB, err := a.Merge(b.Export())
		if err != nil {
			t.Fatal(err)
		}
		if !behindA && !behindB && bytes.Equal(a.Export(), b.Export()) {
			return
		}
	}
	t.Fatalf("two copies never settled:\n%s\n%s", a.Export(), b.Export())
}

func signsIn(s *Store, token string) bool { _, ok := s.Authenticate(token); return ok }

// editFile changes a users file as a person with an editor would.
func editFile(t *testing.T, dir string, change func(file map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "users.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	change(file)
	if b, err = json.Marshal(file); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func setUser(file map[string]any, name string, change func(u map[string]any)) {
	for _, u := range file["users"].([]any) {
		if u := u.(map[string]any); u["name"] == name {
			change(u)
		}
	}
}

func TestReplicasShareUsers(t *testing.T) {
	a, _ := replica(t)
	b, _ := replica(t)
	// Each node made its own owner; after the exchange either owner token signs in on
	// both, as one user.
	ownerA, ownerB := mustAdd(t, a, "owner", RoleOwner), mustAdd(t, b, "owner", RoleOwner)
	ann := mustAdd(t, a, "ann", RoleMember)
	exchange(t, a, b)
	for _, tok := range []string{ownerA, ownerB} {
		if !signsIn(a, tok) || !signsIn(b, tok) {
			t.Fatal("an owner's token does not sign in on both copies")
		}
	}
	if p := mustAuth(t, b, ann); p.User != "ann" || !p.Can(GrantTerminalInput) || p.Can(GrantConfigChange) {
		t.Fatalf("ann on the other copy = %+v", p)
	}
	if users, _ := b.List(); len(users) != 2 {
		t.Fatalf("users on the other copy: %+v", users)
	}

	// A revocation on b reaches a; ann stays, with no tokens.
	if n, err := b.Revoke("ann"); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	changed, behind, err := a.Merge(b.Export())
	if !changed || behind || err != nil {
		t.Fatalf("merging a revocation: changed %v, behind %v, %v", changed, behind, err)
	}
	if signsIn(a, ann) {
		t.Fatal("ann's token, revoked on b, signs in on a")
	}
	// Merging the same copy again changes nothing.
	if changed, behind, err := a.Merge(b.Export()); changed || behind || err != nil {
		t.Fatalf("merging a copy twice: changed %v, behind %v, %v", changed, behind, err)
	}
	if a.Digest() != b.Digest() {
		t.Fatal("two settled copies have different digests")
	}
}

func TestRevocationWinsOverAConcurrentCopy(t *testing.T) {
	a, _ := replica(t)
	b, _ := replica(t)
	first := mustAdd(t, a, "ann", RoleMember)
	exchange(t, a, b)
	// Before they speak again: b revokes ann's every token, a gives her another one.
	if _, err := b.Revoke("ann"); err != nil {
		t.Fatal(err)
	}
	second := mustAdd(t, a, "ann", "")
	exchange(t, a, b)
	for _, s := range []*Store{a, b} {
		if signsIn(s, first) {
			t.Fatal("a revoked token came back from a copy that still listed it")
		}
		if !signsIn(s, second) {
			t.Fatal("a token made while another node revoked the user's others was lost")
		}
	}
}

func TestHandEditsReachTheOtherCopy(t *testing.T) {
	a, dirA := replica(t)
	b, _ := replica(t)
	ann := mustAdd(t, a, "ann", RoleMember)
	bob := mustAdd(t, a, "bob", RoleMember)
	carl := mustAdd(t, a, "carl", RoleMember)
	exchange(t, a, b)

	// On a, by hand: a new role for ann, bob's token deleted, carl taken out.
	editFile(t, dirA, func(file map[string]any) {
		file["roles"] = map[string]any{"watcher": []any{"terminal:read"}}
		setUser(file, "ann", func(u map[string]any) { u["role"] = "watcher" })
		setUser(file, "bob", func(u map[string]any) { u["tokens"] = []any{} })
		var kept []any
		for _, u := range file["users"].([]any) {
			if u.(map[string]any)["name"] != "carl" {
				kept = append(kept, u)
			}
		}
		file["users"] = kept
	})
	// a notices the edit (as the host does, on its next look at the file) and gives
	// what changed new versions.
	a.Generation()
	exchange(t, a, b)
	if p := mustAuth(t, b, ann); p.Role != "watcher" || !p.Can(GrantTerminalOutput) || p.Can(GrantTerminalInput) {
		t.Fatalf("ann on b after her role was changed by hand on a: %+v", p)
	}
	if signsIn(b, bob) || signsIn(b, carl) {
		t.Fatal("a token deleted by hand on a, or its user, still signs in on b")
	}
	if users, _ := b.List(); len(users) != 2 {
		t.Fatalf("carl, taken out of a's file, is still on b: %+v", users)
	}

	// A later change on b wins over the earlier one on a: ann is a member again.
	editFile(t, filepath.Dir(b.Path()), func(file map[string]any) {
		setUser(file, "ann", func(u map[string]any) { u["role"] = RoleMember })
	})
	b.Generation()
	exchange(t, a, b)
	if p := mustAuth(t, a, ann); p.Role != RoleMember {
		t.Fatalf("ann on a after b made her a member again: %+v", p)
	}
	// carl made again on b, after his removal, is back on both.
	carl2 := mustAdd(t, b, "carl", RoleGuest)
	exchange(t, a, b)
	if p := mustAuth(t, a, carl2); p.Role != RoleGuest || signsIn(a, carl) {
		t.Fatalf("carl made again: %+v", p)
	}
}

func TestMergeIsAJoin(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := func(c byte) fileToken { return fileToken{SHA256: string(bytes.Repeat([]byte{c}, 64)), Created: at} }
	v := func(clock uint64, of string) *Version { return &Version{Clock: clock, Of: of} }
	docs := []fileData{
		{Users: []fileUser{{Name: "ann", Role: "member", Tokens: []fileToken{tok('a')}, Version: v(1, "member")}}},
		{Users: []fileUser{{Name: "ann", Role: "guest", Tokens: []fileToken{tok('b')}, Version: v(2, "guest")}}, Revoked: []string{string(bytes.Repeat([]byte{'a'}, 64))}},
		{Users: []fileUser{{Name: "bob", Role: "member", Tokens: []fileToken{tok('c')}, Version: v(2, "member")}}, Removed: map[string]Version{"ann": {Clock: 2}}},
		{Roles: map[string][]string{"w": {"terminal:read"}}, RoleVersions: map[string]Version{"w": {Clock: 3, Of: grantsDigest([]string{"terminal:read"})}},
			Users: []fileUser{{Name: "bob", Role: "w", Tokens: []fileToken{tok('d')}, Version: v(3, "w")}}},
	}
	same := func(x, y fileData) bool { return bytes.Equal(canonicalBytes(x), canonicalBytes(y)) }
	for i, x := range docs {
		if !same(merge(x, x), x) {
			t.Errorf("doc %d merged with itself changed", i)
		}
		for j, y := range docs {
			if !same(merge(x, y), merge(y, x)) {
				t.Errorf("docs %d and %d merge differently by order", i, j)
			}
			for k, z := range docs {
				if !same(merge(merge(x, y), z), merge(x, merge(y, z))) {
					t.Errorf("docs %d, %d, %d merge differently by grouping", i, j, k)
				}
			}
		}
	}
	all := merge(merge(docs[0], docs[1]), merge(docs[2], docs[3]))
	if _, err := compile(all); err != nil {
		t.Fatal(err)
	}
	// ann: guest at clock 2 beats her removal at clock 2; token a is revoked.
	want := `{"roles":{"w":["terminal:read"]},"users":[{"name":"ann","role":"guest","tokens":[{"sha256":"` + string(bytes.Repeat([]byte{'b'}, 64)) + `","created":"2026-01-02T03:04:05Z"}],"version":{"clock":2,"of":"guest"}},` +
		`{"name":"bob","role":"w","tokens":[{"sha256":"` + string(bytes.Repeat([]byte{'c'}, 64)) + `","created":"2026-01-02T03:04:05Z"},{"sha256":"` + string(bytes.Repeat([]byte{'d'}, 64)) + `","created":"2026-01-02T03:04:05Z"}],"version":{"clock":3,"of":"w"}}],` +
		`"revoked":["` + string(bytes.Repeat([]byte{'a'}, 64)) + `"],"roleVersions":{"w":{"clock":3,"of":"` + grantsDigest([]string{"terminal:read"}) + `"}}}`
	if got := string(canonicalBytes(all)); got != want {
		t.Fatalf("the merge of all four:\n%s\nwant\n%s", got, want)
	}
}

func TestMergeThatBreaksTheFileIsRefused(t *testing.T) {
	a, dirA := replica(t)
	b, _ := replica(t)
	writeUsers(t, dirA, `{"roles": {"watcher": ["terminal:read"]}, "users": []}`)
	ann := mustAdd(t, a, "ann", "watcher")
	exchange(t, a, b)
	// b deletes the role by hand, later than a made it; a's ann still has it.
	editFile(t, filepath.Dir(b.Path()), func(file map[string]any) {
		delete(file, "roles")
		setUser(file, "ann", func(u map[string]any) { u["role"] = RoleMember })
	})
	b.Generation()
	// Taking b's copy would be fine; a copy that only deletes the role is not.
	var doc map[string]any
	if err := json.Unmarshal(b.Export(), &doc); err != nil {
		t.Fatal(err)
	}
	setUser(doc, "ann", func(u map[string]any) {
		u["role"], u["version"] = "watcher", map[string]any{"clock": 99, "of": "watcher"}
	})
	bad, _ := json.Marshal(doc)
	if changed, _, err := a.Merge(bad); err == nil || changed {
		t.Fatalf("a copy leaving ann's role undefined was taken: changed %v, err %v", changed, err)
	}
	if p := mustAuth(t, a, ann); p.Role != "watcher" {
		t.Fatalf("a refused merge changed ann: %+v", p)
	}
	exchange(t, a, b)
	if p := mustAuth(t, a, ann); p.Role != RoleMember {
		t.Fatalf("ann on a after b's change: %+v", p)
	}
}

// An editor that rewrites the file in place empties it first: a node of a cluster must
// not read that as every user removed, which it would tell every other node.
func TestEmptyFileIsNotEveryoneRemoved(t *testing.T) {
	a, dirA := replica(t)
	b, _ := replica(t)
	ann := mustAdd(t, a, "ann", RoleMember)
	exchange(t, a, b)
	before := a.Export()
	writeUsers(t, dirA, "")
	if !signsIn(a, ann) {
		t.Fatal("ann was signed out by an empty users file")
	}
	if a.ReloadError() == nil || !bytes.Equal(a.Export(), before) {
		t.Fatalf("an empty users file was taken: %v\n%s", a.ReloadError(), a.Export())
	}
	// Removed, the file is filled again from another node's copy.
	if err := os.Remove(filepath.Join(dirA, "users.json")); err != nil {
		t.Fatal(err)
	}
	if signsIn(a, ann) {
		t.Fatal("ann signs in with no users file")
	}
	exchange(t, a, b)
	if !signsIn(a, ann) {
		t.Fatal("a node whose users file was removed did not take the others' users back")
	}
}
