// Package proxy owns the caller's side of a channel another cluster node holds: one
// proxy actor per remote terminal, session or chat that somebody on this node uses.
// It holds one subscription on the owning node however many subscribers it has
// here, folds what comes with the channel's own reducer (a terminal's, or for a
// session or chat the copy of its state it keeps), answers each subscribe here with a snapshot
// and then every later action stamped by this node's journal, and pages in a chat's
// older turns on the owner when a subscriber's view asks for them. Keystrokes out
// and frames in pass through two processes of the proxy, not its mailbox.
//
// The node actor (package cluster) spawns a proxy (Props) when the root routes a
// remote URI to it, and tells it when the owning node is lost (NodeLost). What
// crosses between nodes is package wire's.
package proxy
