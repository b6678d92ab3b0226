package auth

import "slices"

// The grants a role can carry. Each names one thing a person may do on the host.
const (
	GrantTerminalCreate  = "terminal:create"
	GrantTerminalDispose = "terminal:dispose"
	GrantTerminalOutput  = "terminal:output"
	GrantTerminalInput   = "terminal:input"
	GrantTerminalResize  = "terminal:resize"
	GrantTerminalClaim   = "terminal:claim"
	GrantTerminalRename  = "terminal:rename"
	GrantTerminalClear   = "terminal:clear"
	GrantConfigChange    = "config:change"
	GrantChatSend        = "chat:send"
)

// Groups name several grants at once; a role may list a group instead of its members.
const (
	// GroupTerminalRead is watching terminals: terminal:output.
	GroupTerminalRead = "terminal:read"
	// GroupTerminalWrite is every other terminal grant: create, dispose, input,
	// resize, claim, rename and clear.
	GroupTerminalWrite = "terminal:write"
	// GrantAll means every grant.
	GrantAll = "*"
)

// The built-in roles. A users file may override them or add its own.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
	RoleGuest  = "guest"
)

var allGrants = []string{
	GrantTerminalCreate,
	GrantTerminalDispose,
	GrantTerminalOutput,
	GrantTerminalInput,
	GrantTerminalResize,
	GrantTerminalClaim,
	GrantTerminalRename,
	GrantTerminalClear,
	GrantConfigChange,
	GrantChatSend,
}

var groups = map[string][]string{
	GroupTerminalRead: {GrantTerminalOutput},
	GroupTerminalWrite: {
		GrantTerminalCreate,
		GrantTerminalDispose,
		GrantTerminalInput,
		GrantTerminalResize,
		GrantTerminalClaim,
		GrantTerminalRename,
		GrantTerminalClear,
	},
	GrantAll: allGrants,
}

// builtinRoles are present even when the users file does not list them.
var builtinRoles = map[string][]string{
	RoleOwner:  {GrantAll},
	RoleMember: {GroupTerminalRead, GroupTerminalWrite, GrantChatSend},
	RoleGuest:  {},
}

// AllGrants returns every single grant (no groups), in a fixed order. The slice is
// the caller's to keep.
func AllGrants() []string {
	return slices.Clone(allGrants)
}

// expand returns the single grants that name stands for: itself for a single grant,
// the members of a group, or false for a name that is neither.
func expand(name string) ([]string, bool) {
	if g, ok := groups[name]; ok {
		return g, true
	}
	if slices.Contains(allGrants, name) {
		return []string{name}, true
	}
	return nil, false
}

// Principal is who is asking: a signed-in user and the grants of their role. The zero
// value is nobody, who may do nothing.
type Principal struct {
	User string
	Role string

	grants map[string]bool // single grants only; shared, never written after load
}

// Nobody returns the principal of someone who has not signed in.
func Nobody() Principal { return Principal{} }

// SignedIn reports whether p is a user rather than nobody.
func (p Principal) SignedIn() bool { return p.User != "" }

// Can reports whether p may do grant. For a group (or "*") it reports whether p holds
// every grant in it. Unknown grants are never allowed.
func (p Principal) Can(grant string) bool {
	if !p.SignedIn() {
		return false
	}
	members, ok := expand(grant)
	if !ok {
		return false
	}
	for _, g := range members {
		if !p.grants[g] {
			return false
		}
	}
	return true
}

// Refusal is the sentence a person reads when p may not do grant:
// "<user> may not <grant> here", or for nobody "Sign in to use this host".
func (p Principal) Refusal(grant string) string {
	if !p.SignedIn() {
		return "Sign in to use this host"
	}
	return p.User + " may not " + grant + " here"
}
