package auth

import (
	"maps"
	"slices"
)

// Grants lists p's single grants, sorted: what a cluster node tells the node that
// acts for p of what p may do.
func (p Principal) Grants() []string {
	return slices.Sorted(maps.Keys(p.grants))
}

// Carried is a principal another cluster node signed in and checked, as that node
// told this one (user, role and single grants). Grants this host does not know are
// dropped, so a newer node cannot widen what an older one allows.
func Carried(user, role string, grants []string) Principal {
	p := Principal{User: user, Role: role, grants: map[string]bool{}}
	for _, g := range grants {
		if slices.Contains(allGrants, g) {
			p.grants[g] = true
		}
	}
	return p
}
