package auth

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func mustAdd(t *testing.T, s *Store, user, role string) string {
	t.Helper()
	tok, err := s.AddToken(user, role)
	if err != nil {
		t.Fatalf("AddToken(%q, %q): %v", user, role, err)
	}
	return tok
}

func mustAuth(t *testing.T, s *Store, token string) Principal {
	t.Helper()
	p, ok := s.Authenticate(token)
	if !ok {
		t.Fatalf("token does not authenticate")
	}
	return p
}

// writeUsers replaces users.json in place, the way a person with an editor would.
func writeUsers(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBuiltinRoleGrants(t *testing.T) {
	s, _ := openStore(t)
	principals := map[string]Principal{"nobody": Nobody()}
	for _, role := range []string{RoleOwner, RoleMember, RoleGuest} {
		principals[role] = mustAuth(t, s, mustAdd(t, s, "u-"+role, role))
	}
	Y, N := true, false
	tests := []struct {
		grant                       string
		owner, member, guest, nobod bool
	}{
		{GrantTerminalCreate, Y, Y, N, N},
		{GrantTerminalDispose, Y, Y, N, N},
		{GrantTerminalOutput, Y, Y, N, N},
		{GrantTerminalInput, Y, Y, N, N},
		{GrantTerminalResize, Y, Y, N, N},
		{GrantTerminalClaim, Y, Y, N, N},
		{GrantTerminalRename, Y, Y, N, N},
		{GrantTerminalClear, Y, Y, N, N},
		{GrantConfigChange, Y, N, N, N},
		{GrantChatSend, Y, Y, N, N},
		{GroupTerminalRead, Y, Y, N, N},
		{GroupTerminalWrite, Y, Y, N, N},
		{GrantAll, Y, N, N, N},
		{"terminal:fly", N, N, N, N},
		{"", N, N, N, N},
	}
	var covered []string
	for _, tc := range tests {
		covered = append(covered, tc.grant)
		want := map[string]bool{RoleOwner: tc.owner, RoleMember: tc.member, RoleGuest: tc.guest, "nobody": tc.nobod}
		for who, p := range principals {
			if got := p.Can(tc.grant); got != want[who] {
				t.Errorf("%s Can(%q) = %v, want %v", who, tc.grant, got, want[who])
			}
		}
	}
	for _, g := range AllGrants() {
		if !slices.Contains(covered, g) {
			t.Errorf("grant %q missing from the table", g)
		}
	}
	if principals["nobody"].SignedIn() || !principals[RoleGuest].SignedIn() {
		t.Error("SignedIn wrong")
	}
	if p := principals[RoleMember]; p.User != "u-member" || p.Role != RoleMember {
		t.Errorf("principal = %+v", p)
	}
}

func TestAllGrants(t *testing.T) {
	g := AllGrants()
	if len(g) != 10 {
		t.Fatalf("AllGrants has %d grants: %v", len(g), g)
	}
	g[0] = "mutated"
	if AllGrants()[0] != GrantTerminalCreate {
		t.Error("AllGrants shares its slice")
	}
}

func TestGroupExpansionAndCustomRoles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeUsers(t, dir, `{
  "roles": {
    "viewer": ["terminal:read"],
    "typist": ["terminal:write", "chat:send"],
    "admin": ["config:change"],
    "member": ["terminal:read"]
  },
  "users": []
}`)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	viewer := mustAuth(t, s, mustAdd(t, s, "vic", "viewer"))
	typist := mustAuth(t, s, mustAdd(t, s, "tia", "typist"))
	admin := mustAuth(t, s, mustAdd(t, s, "ada", "admin"))
	member := mustAuth(t, s, mustAdd(t, s, "mo", "member"))
	owner := mustAuth(t, s, mustAdd(t, s, "oz", "owner")) // built-in still there

	writeGroup := []string{GrantTerminalCreate, GrantTerminalDispose, GrantTerminalInput,
		GrantTerminalResize, GrantTerminalClaim, GrantTerminalRename, GrantTerminalClear}
	for _, g := range AllGrants() {
		if got, want := viewer.Can(g), g == GrantTerminalOutput; got != want {
			t.Errorf("viewer Can(%s) = %v", g, got)
		}
		if got, want := typist.Can(g), slices.Contains(writeGroup, g) || g == GrantChatSend; got != want {
			t.Errorf("typist Can(%s) = %v", g, got)
		}
		if got, want := admin.Can(g), g == GrantConfigChange; got != want {
			t.Errorf("admin Can(%s) = %v", g, got)
		}
		// member is overridden by the file to read only.
		if got, want := member.Can(g), g == GrantTerminalOutput; got != want {
			t.Errorf("overridden member Can(%s) = %v", g, got)
		}
		if !owner.Can(g) {
			t.Errorf("owner Can(%s) = false", g)
		}
	}
	if !typist.Can(GroupTerminalWrite) || typist.Can(GroupTerminalRead) {
		t.Error("typist group checks wrong")
	}
	if !viewer.Can(GroupTerminalRead) || viewer.Can(GroupTerminalWrite) {
		t.Error("viewer group checks wrong")
	}
	if _, err := s.AddToken("x", "nosuchrole"); err == nil {
		t.Error("AddToken with an unknown role succeeded")
	}
	// Adding users keeps the file's roles.
	b, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	if !strings.Contains(string(b), `"viewer"`) || !strings.Contains(string(b), `"typist"`) {
		t.Errorf("custom roles lost on write:\n%s", b)
	}
}

func TestUnknownGrantInFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	writeUsers(t, dir, `{"roles": {"odd": ["terminal:fly"]}, "users": []}`)
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "terminal:fly") {
		t.Fatalf("Open = %v, want an error naming the grant", err)
	}
}

func TestEnsureOwner(t *testing.T) {
	s, dir := openStore(t)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", fi.Mode().Perm())
	}
	path, created, err := s.EnsureOwner()
	if err != nil || !created {
		t.Fatalf("EnsureOwner = %q, %v, %v", path, created, err)
	}
	if path != filepath.Join(dir, "owner.token") {
		t.Errorf("token path %q", path)
	}
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	token := strings.TrimSpace(string(b))
	if !strings.HasPrefix(token, "th_") || len(token) != 3+43 {
		t.Errorf("token %q is not th_ + 43 base64url characters", token)
	}
	p := mustAuth(t, s, token)
	if p.User != "owner" || p.Role != RoleOwner || !p.Can(GrantConfigChange) {
		t.Errorf("owner principal = %+v", p)
	}

	ufi, err := os.Stat(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ufi.Mode().Perm() != 0o600 {
		t.Errorf("users.json mode %v, want 0600", ufi.Mode().Perm())
	}
	users, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	if strings.Contains(string(users), token) || strings.Contains(string(users), strings.TrimPrefix(token, "th_")) {
		t.Error("users.json holds the plain token")
	}

	// Second call, and a call from a fresh store, change nothing.
	for _, st := range []*Store{s, reopen(t, dir)} {
		path2, created, err := st.EnsureOwner()
		if err != nil || created || path2 != path {
			t.Fatalf("second EnsureOwner = %q, %v, %v", path2, created, err)
		}
	}
	b2, _ := os.ReadFile(path)
	if string(b2) != string(b) {
		t.Error("second EnsureOwner rewrote the token file")
	}
	users2, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	if string(users2) != string(users) {
		t.Error("second EnsureOwner rewrote users.json")
	}
	mustAuth(t, reopen(t, dir), token)
}

func TestEnsureOwnerLeavesExistingUsers(t *testing.T) {
	s, dir := openStore(t)
	mustAdd(t, s, "alice", RoleMember)
	_, created, err := s.EnsureOwner()
	if err != nil || created {
		t.Fatalf("EnsureOwner = %v, %v", created, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "owner.token")); !os.IsNotExist(err) {
		t.Error("owner.token written on a store that has users")
	}
}

func reopen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddListRevoke(t *testing.T) {
	s, dir := openStore(t)
	a1 := mustAdd(t, s, "alice", RoleMember)
	a2 := mustAdd(t, s, "alice", "") // existing user keeps her role
	b1 := mustAdd(t, s, "bob", RoleGuest)
	if a1 == a2 {
		t.Fatal("two tokens are equal")
	}
	if _, err := s.AddToken("alice", RoleOwner); err == nil {
		t.Error("AddToken changed alice's role")
	}
	if _, err := s.AddToken("carol", ""); err == nil {
		t.Error("AddToken made a user without a role")
	}
	if _, err := s.AddToken("bad name", RoleMember); err == nil {
		t.Error("AddToken accepted a name with a space")
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "alice" || list[1].Name != "bob" {
		t.Fatalf("List = %+v", list)
	}
	if list[0].Role != RoleMember || len(list[0].Tokens) != 2 || len(list[1].Tokens) != 1 {
		t.Fatalf("List = %+v", list)
	}
	users, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	for _, tok := range []string{a1, a2, b1} {
		if strings.Contains(string(users), tok) {
			t.Error("users.json holds a plain token")
		}
	}
	for _, u := range list {
		for _, ti := range u.Tokens {
			if len(ti.ID) != 8 || strings.Trim(ti.ID, "0123456789abcdef") != "" {
				t.Errorf("token id %q is not 8 hex digits", ti.ID)
			}
			if ti.Created.IsZero() || time.Since(ti.Created) > time.Minute {
				t.Errorf("token created %v", ti.Created)
			}
		}
	}

	// Revoke one token by id.
	h := hashToken(a1)
	a1ID := hexOf(h[:])[:8]
	if !slices.ContainsFunc(list[0].Tokens, func(ti TokenInfo) bool { return ti.ID == a1ID }) {
		t.Fatalf("List does not show a1's id %s: %+v", a1ID, list[0].Tokens)
	}
	if n, err := s.Revoke(a1ID); n != 1 || err != nil {
		t.Fatalf("Revoke(id) = %d, %v", n, err)
	}
	if _, ok := s.Authenticate(a1); ok {
		t.Error("revoked token still works")
	}
	mustAuth(t, s, a2)

	// Revoke a user's tokens by name.
	if n, err := s.Revoke("alice"); n != 1 || err != nil {
		t.Fatalf("Revoke(alice) = %d, %v", n, err)
	}
	if _, ok := s.Authenticate(a2); ok {
		t.Error("revoked user's token still works")
	}
	if n, err := s.Revoke("alice"); n != 0 || err != nil {
		t.Errorf("Revoke(alice) again = %d, %v", n, err)
	}
	if n, err := s.Revoke("nobody-here"); n != 0 || !errors.Is(err, ErrNotFound) {
		t.Errorf("Revoke(unknown) = %d, %v", n, err)
	}
	mustAuth(t, s, b1)
	list, _ = s.List()
	if b, _ := os.ReadFile(filepath.Join(dir, "users.json")); strings.Contains(string(b), "null") {
		t.Errorf("users.json holds null:\n%s", b)
	}
	if len(list) != 2 || len(list[0].Tokens) != 0 {
		t.Errorf("after revoke List = %+v", list)
	}
	// The user stays and can get a new token.
	mustAuth(t, s, mustAdd(t, s, "alice", ""))
	// A fresh store sees the same.
	if _, ok := reopen(t, dir).Authenticate(a2); ok {
		t.Error("revocation not saved")
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestAuthenticateRejects(t *testing.T) {
	s, _ := openStore(t)
	tok := mustAdd(t, s, "alice", RoleMember)
	for _, bad := range []string{"", "th_", tok + "x", tok[:len(tok)-1], strings.Repeat("a", 5000)} {
		if p, ok := s.Authenticate(bad); ok || p.SignedIn() {
			t.Errorf("Authenticate(%.20q) = %+v, %v", bad, p, ok)
		}
	}
}

func TestEditingFileTakesEffect(t *testing.T) {
	s, dir := openStore(t)
	alice := mustAdd(t, s, "alice", RoleMember)
	bob := mustAdd(t, s, "bob", RoleMember)
	mustAuth(t, s, alice)

	// Revoke alice by rewriting the file without her, and promote bob.
	b, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	var bobHash string
	h := hashToken(bob)
	bobHash = hexOf(h[:])
	if !strings.Contains(string(b), bobHash) {
		t.Fatalf("file does not hold bob's hash:\n%s", b)
	}
	writeUsers(t, dir, `{"users": [{"name": "bob", "role": "owner", "tokens": [{"sha256": "`+bobHash+`"}]}]}`)
	if _, ok := s.Authenticate(alice); ok {
		t.Error("alice still signs in after being removed from the file")
	}
	p := mustAuth(t, s, bob)
	if p.Role != RoleOwner || !p.Can(GrantConfigChange) {
		t.Errorf("bob = %+v after promotion", p)
	}

	// Adding a role in the file works too.
	writeUsers(t, dir, `{"roles": {"chatter": ["chat:send"]}, "users": [{"name": "bob", "role": "chatter", "tokens": [{"sha256": "`+bobHash+`"}]}]}`)
	p = mustAuth(t, s, bob)
	if p.Role != "chatter" || !p.Can(GrantChatSend) || p.Can(GrantTerminalOutput) {
		t.Errorf("bob = %+v as chatter", p)
	}
	if _, err := s.AddToken("carl", "chatter"); err != nil {
		t.Errorf("AddToken with the file's new role: %v", err)
	}

	// Removing the file removes everyone.
	if err := os.Remove(filepath.Join(dir, "users.json")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(bob); ok {
		t.Error("bob signs in after users.json was removed")
	}
}

func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	writeUsers(t, dir, "{\n  \"users\": [\n    {\"name\": \"a\",, }\n  ]\n}\n")
	_, err := Open(dir)
	if err == nil {
		t.Fatal("Open of a corrupt users.json succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, filepath.Join(dir, "users.json")) || !strings.Contains(msg, "line 3") {
		t.Errorf("error %q does not name the file and line", msg)
	}
	for _, content := range []string{
		`{"users": [{"name": "a", "role": "wizard"}]}`,
		`{"users": [{"name": "a", "role": "owner", "tokens": [{"sha256": "abc"}]}]}`,
		`{"users": [{"name": "a", "role": "owner", "token": "th_plain"}]}`,
		`{"users": [{"name": "a", "role": "owner"}, {"name": "a", "role": "guest"}]}`,
		`{"users": []} {}`,
		`[]`,
	} {
		writeUsers(t, dir, content)
		if _, err := Open(dir); err == nil {
			t.Errorf("Open accepted %s", content)
		}
	}
	writeUsers(t, dir, "")
	if _, err := Open(dir); err != nil {
		t.Errorf("Open of an empty users.json: %v", err)
	}
}

func TestFileBecomesCorrupt(t *testing.T) {
	s, dir := openStore(t)
	alice := mustAdd(t, s, "alice", RoleMember)
	good, _ := os.ReadFile(filepath.Join(dir, "users.json"))

	writeUsers(t, dir, `{"users": [ this is not json`)
	if _, ok := s.Authenticate("th_unknown"); ok {
		t.Error("unknown token authenticated")
	}
	p, ok := s.Authenticate(alice)
	if !ok || p.User != "alice" {
		t.Error("last good data not kept")
	}
	if err := s.ReloadError(); err == nil {
		t.Error("ReloadError is nil for a corrupt file")
	}
	if _, err := s.List(); err == nil {
		t.Error("List succeeded on a corrupt file")
	}
	if _, err := s.AddToken("bob", RoleMember); err == nil {
		t.Error("AddToken overwrote a corrupt file")
	}
	if _, err := s.Revoke("alice"); err == nil {
		t.Error("Revoke overwrote a corrupt file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "users.json")); string(b) != `{"users": [ this is not json` {
		t.Error("corrupt file was overwritten")
	}

	// Fixing the file recovers.
	writeUsers(t, dir, string(good))
	mustAuth(t, s, alice)
	if err := s.ReloadError(); err != nil {
		t.Errorf("ReloadError after fix: %v", err)
	}
	if _, err := s.List(); err != nil {
		t.Error(err)
	}
}

// TestFileEmptiedWhileWritten: a users file written in place is empty for a moment
// (truncated, then written); that moment signs nobody out, and the contents written
// after it are read.
func TestFileEmptiedWhileWritten(t *testing.T) {
	s, dir := openStore(t)
	alice := mustAdd(t, s, "alice", RoleMember)
	good, _ := os.ReadFile(filepath.Join(dir, "users.json"))

	writeUsers(t, dir, "")
	p, ok := s.Authenticate(alice)
	if !ok || p.User != "alice" || p.Role != RoleMember {
		t.Fatalf("an emptied users file signed alice out: %+v, %v", p, ok)
	}
	if err := s.ReloadError(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("ReloadError = %v, want it to say the file is empty", err)
	}

	// The write completes, with alice made a guest.
	writeUsers(t, dir, strings.Replace(string(good), `"role": "member"`, `"role": "guest"`, 1))
	if p := mustAuth(t, s, alice); p.Role != RoleGuest {
		t.Errorf("after the write alice is %q, want guest", p.Role)
	}
	if err := s.ReloadError(); err != nil {
		t.Errorf("ReloadError after the write: %v", err)
	}

	// Deleting the file is how every user goes.
	if err := os.Remove(filepath.Join(dir, "users.json")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(alice); ok {
		t.Error("alice signed in after the users file was deleted")
	}
}

func TestRefusal(t *testing.T) {
	if got := Nobody().Refusal(GrantTerminalInput); got != "Sign in to use this host" {
		t.Errorf("nobody refusal %q", got)
	}
	p := Principal{User: "alice", Role: RoleGuest}
	if got := p.Refusal(GrantTerminalInput); got != "alice may not terminal:input here" {
		t.Errorf("refusal %q", got)
	}
	if got := p.Refusal(GrantConfigChange); got != "alice may not config:change here" {
		t.Errorf("refusal %q", got)
	}
}

func TestNoTempFilesLeft(t *testing.T) {
	s, dir := openStore(t)
	if _, _, err := s.EnsureOwner(); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, "alice", RoleMember)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	// users.json.lock stays: it is the writers' lock, not a leftover.
	if !slices.Equal(names, []string{"owner.token", "users.json", "users.json.lock"}) {
		t.Errorf("state dir holds %v", names)
	}
	if fi, err := os.Stat(filepath.Join(dir, "users.json.lock")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, mode %v", err, fi.Mode().Perm())
	}
}

func TestConcurrentUse(t *testing.T) {
	s, dir := openStore(t)
	tok := mustAdd(t, s, "alice", RoleMember)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if _, ok := s.Authenticate(tok); !ok {
					t.Error("alice lost")
					return
				}
				if j%5 == 0 {
					if _, err := s.AddToken("u"+string(rune('a'+i)), RoleGuest); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := s.List(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	list, err := reopen(t, dir).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 9 {
		t.Errorf("%d users after concurrent adds, want 9", len(list))
	}
}

// Generation moves when the users change, by this store, by another one on the same
// folder, or by hand, and stays put when nothing did.
func TestGenerationFollowsTheUsersFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g0 := s.Generation()
	if g := s.Generation(); g != g0 {
		t.Fatalf("generation moved from %d to %d with nothing changed", g0, g)
	}
	if _, err := s.AddToken("ann", RoleMember); err != nil {
		t.Fatal(err)
	}
	g1 := s.Generation()
	if g1 == g0 {
		t.Fatal("generation stayed put after AddToken")
	}
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Revoke("ann"); err != nil {
		t.Fatal(err)
	}
	if g := s.Generation(); g == g1 {
		t.Fatal("generation stayed put after another store revoked a token")
	}
}
