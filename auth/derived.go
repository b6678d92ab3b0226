package auth

// Principals that sign in with no token of the users file: an agent a session runs
// acts with the rights of the person who made the session (seed: "An agent behind
// the session"), read from the users file as it is now, so a changed role or a
// revoked token counts at once.

// UserPrincipal is who user is as the users file says now: their role's grants. A
// user it does not list, or whose every token was revoked, is nobody (false).
func (s *Store) UserPrincipal(user string) (Principal, bool) {
	if user == "" {
		return Nobody(), false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.refreshLocked() // on failure the last good state is used; see ReloadError
	for _, u := range s.st.file.Users {
		if u.Name == user && len(u.Tokens) > 0 {
			return Principal{User: u.Name, Role: u.Role, grants: s.st.roles[u.Role]}, true
		}
	}
	return Nobody(), false
}

// RolePrincipal is a principal named user holding role's grants as the users file
// defines them now, narrowed to those only names (single grants or groups; none
// narrows nothing). A role the file does not define grants nothing.
func (s *Store) RolePrincipal(user, role string, only ...string) Principal {
	s.mu.Lock()
	_ = s.refreshLocked()
	grants := s.st.roles[role]
	s.mu.Unlock()
	if len(only) > 0 {
		keep := grantSet(only)
		narrowed := map[string]bool{}
		for g := range grants {
			if keep[g] {
				narrowed[g] = true
			}
		}
		grants = narrowed
	}
	return Principal{User: user, Role: role, grants: grants}
}
