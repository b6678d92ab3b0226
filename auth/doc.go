// Package auth owns who may do what on the host: the users, their roles, the grants
// each role carries, and the bearer tokens people sign in with.
//
// Everything lives in one file, <stateDir>/users.json, written atomically with mode
// 0600; every writer holds an exclusive lock on users.json.lock beside it from reading
// the file to replacing it, so concurrent `termhost token` commands lose nothing. Roles are data in that file, so a host can define its own roles or change the
// built-in ones (owner, member, guest). Tokens are only ever stored hashed: the file
// holds the SHA-256 of each token, never the token itself, and a token is shown to a
// person exactly once, when it is made. The store re-reads the file when it changes on
// disk, so editing it (for example to revoke a token) takes effect without a restart.
//
// In a cluster every node's file is one copy of the cluster's users: the nodes send
// each other their copies and merge them (replica.go), so a user made, changed or
// revoked on any node counts on all of them.
package auth
