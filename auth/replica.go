package auth

// A cluster's users: every node keeps its own copy of the users file, and the nodes
// send each other their copies (actors/cluster/users) and merge what they receive
// here, so a user made, changed or revoked on any node is known on every node. No
// node and no other service is the one place users live: a node signs people in from
// its own file even while the others are out of reach.
//
// The merge is a join: the same on every node whatever order copies arrive in, and
// merging a copy twice changes nothing, so nodes that have seen the same changes hold
// the same file. Per part of the file:
//
//   - Tokens are a set: a user's tokens are those any copy lists, minus the revoked.
//   - Revoked is a set that only grows: a token revoked on any node is revoked on
//     all of them, even when another node added or still lists it (a revocation never
//     loses to a concurrent change).
//   - A user's role, and whether the user is in the file at all, is a last-writer-wins
//     register: the version with the higher clock wins, and at equal clocks the one
//     whose value sorts higher (a removal, the empty value, loses). The clock is a
//     Lamport clock: a change takes one more than the highest clock in the file, so a
//     change made after a node learnt of another wins over it.
//   - Each custom role's grants are such a register too, valued by a digest of the
//     grants (a deleted role: the empty digest).
//
// Only a node with replication on (EnableReplication) writes versions. It gives one
// to whatever it finds changed in its file since it last read it, whoever changed it:
// `termhost token` (which knows nothing of clusters), an editor, or the node itself.
// A token deleted from the file by hand while the node runs counts as revoked; one
// deleted while the node is down comes back from the other nodes (revoke it with
// `termhost token revoke` instead, which records the revocation in the file).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Version is the version of one register of the users file: a user's role or a
// custom role's grants. Of is the value the version was given to (the role's name, the
// grants' digest; empty for a removal): a value in the file that differs from it was
// changed by hand and gets a new version.
type Version struct {
	Clock uint64 `json:"clock"`
	Of    string `json:"of,omitempty"`
}

// newer says v wins over w.
func (v Version) newer(w Version) bool {
	return v.Clock > w.Clock || v.Clock == w.Clock && v.Of > w.Of
}

// revoke adds a token's hash to the revoked set.
func (d *fileData) revoke(hash string) {
	hash = strings.ToLower(hash)
	if !slices.Contains(d.Revoked, hash) {
		d.Revoked = append(d.Revoked, hash)
	}
}

// clock is the highest clock any version in d has.
func (d *fileData) clock() uint64 {
	var c uint64
	for _, u := range d.Users {
		if u.Version != nil {
			c = max(c, u.Version.Clock)
		}
	}
	for _, v := range d.Removed {
		c = max(c, v.Clock)
	}
	for _, v := range d.RoleVersions {
		c = max(c, v.Clock)
	}
	return c
}

// grantsDigest is what a custom role's version is given to.
func grantsDigest(grants []string) string {
	b, _ := json.Marshal(grants)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// versionChanges gives a new version to whatever in d differs from prev, the contents
// d's holder last read, and says whether it gave any: a user new, with another role,
// or gone (then removed, its tokens revoked); a token gone (revoked); a custom role
// new, changed or gone.
func versionChanges(prev fileData, d *fileData) bool {
	clock := max(prev.clock(), d.clock())
	next := func(of string) Version { clock++; return Version{Clock: clock, Of: of} }
	changed := false
	live := map[string]*fileUser{}
	for i := range d.Users {
		live[d.Users[i].Name] = &d.Users[i]
	}
	revoked := map[string]bool{}
	for _, h := range d.Revoked {
		revoked[h] = true
	}
	for _, p := range prev.Users {
		u := live[p.Name]
		for _, t := range p.Tokens {
			h := strings.ToLower(t.SHA256)
			if !revoked[h] && (u == nil || !slices.ContainsFunc(u.Tokens, func(x fileToken) bool { return strings.EqualFold(x.SHA256, h) })) {
				d.revoke(h)
				revoked[h], changed = true, true
			}
		}
		if _, gone := d.Removed[p.Name]; u == nil && !gone {
			if d.Removed == nil {
				d.Removed = map[string]Version{}
			}
			d.Removed[p.Name] = next("")
			changed = true
		}
	}
	for i := range d.Users {
		u := &d.Users[i]
		if u.Version == nil || u.Version.Of != u.Role {
			v := next(u.Role)
			u.Version = &v
			changed = true
		}
		if _, ok := d.Removed[u.Name]; ok {
			delete(d.Removed, u.Name) // made again after it was removed
			changed = true
		}
	}
	for name, grants := range d.Roles {
		if v, ok := d.RoleVersions[name]; !ok || v.Of != grantsDigest(grants) {
			if d.RoleVersions == nil {
				d.RoleVersions = map[string]Version{}
			}
			d.RoleVersions[name] = next(grantsDigest(grants))
			changed = true
		}
	}
	for name, v := range d.RoleVersions {
		if _, ok := d.Roles[name]; !ok && v.Of != "" {
			d.RoleVersions[name] = next("")
			changed = true
		}
	}
	return changed
}

// merge is the join of two copies of the users file (see the top of this file).
func merge(a, b fileData) fileData {
	var out fileData
	revoked := map[string]bool{}
	for _, h := range slices.Concat(a.Revoked, b.Revoked) {
		revoked[strings.ToLower(h)] = true
	}

	// Roles.
	for _, name := range unionKeys(a.Roles, b.Roles, a.RoleVersions, b.RoleVersions) {
		va, vb := a.RoleVersions[name], b.RoleVersions[name]
		from, v := a, va
		if vb.newer(va) {
			from, v = b, vb
		}
		if out.RoleVersions == nil {
			out.RoleVersions = map[string]Version{}
		}
		out.RoleVersions[name] = v
		if grants, ok := from.Roles[name]; ok && v.Of != "" {
			if out.Roles == nil {
				out.Roles = map[string][]string{}
			}
			out.Roles[name] = slices.Clone(grants)
		}
	}

	// Users.
	byName := func(d fileData) map[string]fileUser {
		m := map[string]fileUser{}
		for _, u := range d.Users {
			m[u.Name] = u
		}
		return m
	}
	ua, ub := byName(a), byName(b)
	for _, name := range unionKeys(ua, ub, a.Removed, b.Removed) {
		// The winning version: a live user's, or a removal's (Of empty).
		var best Version
		var winner *fileUser
		have := false
		consider := func(v Version, u *fileUser) {
			if !have || v.newer(best) {
				best, winner, have = v, u, true
			}
		}
		if v, ok := a.Removed[name]; ok {
			consider(v, nil)
		}
		if v, ok := b.Removed[name]; ok {
			consider(v, nil)
		}
		for _, m := range []map[string]fileUser{ua, ub} {
			if u, ok := m[name]; ok {
				v := Version{Of: u.Role}
				if u.Version != nil {
					v = *u.Version
				}
				consider(v, &u)
			}
		}
		var tokens []fileToken
		for _, m := range []map[string]fileUser{ua, ub} {
			for _, t := range m[name].Tokens {
				h := strings.ToLower(t.SHA256)
				if winner == nil {
					revoked[h] = true // a removal takes every token the user had
					continue
				}
				if revoked[h] {
					continue
				}
				if i := slices.IndexFunc(tokens, func(x fileToken) bool { return x.SHA256 == h }); i >= 0 {
					if t.Created.Before(tokens[i].Created) {
						tokens[i].Created = t.Created
					}
					continue
				}
				tokens = append(tokens, fileToken{SHA256: h, Created: t.Created})
			}
		}
		if winner == nil {
			if out.Removed == nil {
				out.Removed = map[string]Version{}
			}
			out.Removed[name] = best
			continue
		}
		v := best
		out.Users = append(out.Users, fileUser{Name: name, Role: winner.Role, Tokens: tokens, Version: &v})
	}
	out.Revoked = slices.Collect(maps.Keys(revoked))
	return canonical(out)
}

func unionKeys[V1, V2 any](a, b map[string]V1, c, d map[string]V2) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	for k := range c {
		set[k] = true
	}
	for k := range d {
		set[k] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// canonical is d in one order (users by name, tokens and revoked hashes sorted), so
// two copies with the same contents have the same bytes.
func canonical(d fileData) fileData {
	d = d.clone()
	slices.SortFunc(d.Users, func(x, y fileUser) int { return strings.Compare(x.Name, y.Name) })
	for i := range d.Users {
		if d.Users[i].Tokens == nil {
			d.Users[i].Tokens = []fileToken{}
		}
		for j := range d.Users[i].Tokens {
			d.Users[i].Tokens[j].SHA256 = strings.ToLower(d.Users[i].Tokens[j].SHA256)
		}
		slices.SortFunc(d.Users[i].Tokens, func(x, y fileToken) int { return strings.Compare(x.SHA256, y.SHA256) })
	}
	for i := range d.Revoked {
		d.Revoked[i] = strings.ToLower(d.Revoked[i])
	}
	slices.Sort(d.Revoked)
	d.Revoked = slices.Compact(d.Revoked)
	if len(d.Revoked) == 0 {
		d.Revoked = nil
	}
	if len(d.Removed) == 0 {
		d.Removed = nil
	}
	if len(d.RoleVersions) == 0 {
		d.RoleVersions = nil
	}
	if len(d.Roles) == 0 {
		d.Roles = nil
	}
	return d
}

func canonicalBytes(d fileData) []byte {
	b, _ := json.Marshal(canonical(d))
	return b
}

// EnableReplication makes this store one copy of a cluster's users: from now on
// whatever changes in the file gets a version (see the top of this file), starting
// with what is in it now.
func (s *Store) EnableReplication() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replicate = true
	err := s.editFromLocked(fileData{}, func(*fileData) error { return errNoChange })
	if err != nil && !errors.Is(err, errNoChange) {
		return err
	}
	return nil
}

// Export is this copy of the users file, in one order, for the cluster's other
// nodes: users, roles, versions, and tokens as the file holds them (their hashes).
// The bytes are shared: the caller must not change them.
func (s *Store) Export() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked()
	return s.exportLocked()
}

// exportLocked is Export's bytes, made once per generation: the cluster asks for them
// every few seconds, and they change only with the file.
func (s *Store) exportLocked() []byte {
	if s.exported == nil || s.exportedGen != s.gen {
		s.exported, s.exportedGen = canonicalBytes(s.st.file), s.gen
	}
	return s.exported
}

// Merge takes another node's copy of the users file (Export's bytes) into this one
// and writes the result. changed says this copy changed; behind says the other copy
// lacks something this one has, so the other node should be sent this one. A copy
// that does not read, or whose merge with this one is not a valid users file (a user
// whose role the merge leaves undefined), changes nothing and is an error.
func (s *Store) Merge(doc []byte) (changed, behind bool, err error) {
	var theirs fileData
	if err := json.Unmarshal(doc, &theirs); err != nil {
		return false, false, fmt.Errorf("auth: another node's users do not read: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.editLocked(func(d *fileData) error {
		merged := merge(*d, theirs)
		if _, err := compile(merged.clone()); err != nil {
			return fmt.Errorf("auth: another node's users do not merge with these: %w", err)
		}
		if bytes.Equal(canonicalBytes(merged), canonicalBytes(*d)) {
			return errNoChange
		}
		*d = merged
		changed = true
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return false, false, err
	}
	return changed, !bytes.Equal(s.exportLocked(), canonicalBytes(theirs)), nil
}

// Digest is a short digest of Export's bytes: two nodes whose digests are equal hold
// the same users.
func (s *Store) Digest() string {
	h := sha256.Sum256(s.Export())
	return hex.EncodeToString(h[:16])
}
