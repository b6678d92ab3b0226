package auth

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Stores opened separately on one folder stand for separate processes: each has its
// own handle on the lock file, so they exclude each other as processes would. Every
// change they make at once is kept, a revocation among them included, and a store
// that read the file before them all sees the final file.
func TestWritersInSeveralStoresLoseNothing(t *testing.T) {
	dir := t.TempDir()
	setup, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	victim := mustAdd(t, setup, "victim", RoleMember)
	watcher := reopen(t, dir)
	mustAuth(t, watcher, victim)

	const writers = 12
	stores := make([]*Store, writers)
	for i := range stores {
		stores[i] = reopen(t, dir)
	}
	revoker := reopen(t, dir)
	tokens := make([]string, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			tok, err := s.AddToken(fmt.Sprintf("user-%d", i), RoleGuest)
			if err != nil {
				t.Error(err)
			}
			tokens[i] = tok
		})
	}
	wg.Go(func() {
		<-start
		if n, err := revoker.Revoke("victim"); err != nil || n != 1 {
			t.Errorf("Revoke(victim) = %d, %v; want 1 token", n, err)
		}
	})
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	for name, s := range map[string]*Store{"a store opened afterwards": reopen(t, dir), "a store that read the file before": watcher} {
		if _, ok := s.Authenticate(victim); ok {
			t.Errorf("%s: the revoked token still signs in", name)
		}
		for i, tok := range tokens {
			if p, ok := s.Authenticate(tok); !ok || p.User != fmt.Sprintf("user-%d", i) {
				t.Errorf("%s: user-%d's token signs in as %q, %v", name, i, p.User, ok)
			}
		}
		list, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != writers+1 {
			t.Errorf("%s: %d users, want %d", name, len(list), writers+1)
		}
	}
}

// A reader knows the file changed from its identity, size and modification time. A
// new version may reuse the old one's inode number and have its size, within one tick
// of the file system's clock; its modification time must still be later.
func TestEveryVersionIsNewerThanTheLast(t *testing.T) {
	s, dir := openStore(t)
	path := filepath.Join(dir, "users.json")
	mustAdd(t, s, "ann", RoleMember)
	last, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		// Revoke and add again: each pair leaves a file of the same size.
		if i%2 == 0 {
			if _, err := s.Revoke("ann"); err != nil {
				t.Fatal(err)
			}
		} else {
			mustAdd(t, s, "ann", "")
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().After(last.ModTime()) {
			t.Fatalf("version %d modified at %v, not after the one before (%v)", i+2, fi.ModTime().Format(time.RFC3339Nano), last.ModTime().Format(time.RFC3339Nano))
		}
		last = fi
	}
}
