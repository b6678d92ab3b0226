// Package cluster owns what makes several termhost nodes one host: the membership
// (protoactor-go's cluster package, with providers of our own over etcd, package
// etcdmembers, or over a list of seeds, package seeds),
// the nodes' authentication of one another (a shared secret on every gRPC call of
// protoactor-go's remote, and mutual TLS when certificates are given), and every
// message that passes between nodes.
//
// Each node runs one node actor, named NodeName, at the same place on every node, so
// any node can address any other's by its address alone. It plays two parts:
//
//   - as the owner of terminals, it is their gateway: a remote node's subscription,
//     create or dispose is acted out here as a local subscriber or client would,
//     through the root, and what the terminal sends back is streamed to the calling
//     node as it was delivered here. A dispatch (a keystroke) goes to the gateway
//     process (GatewayName) instead, which hands it to the terminal on the goroutine
//     that read it off the wire;
//   - as the caller, it stands one proxy actor (package proxy) in for each remote
//     terminal somebody here uses. The root routes a remote terminal's URI to it, so a connection
//     speaks to a proxy exactly as to a local terminal: the proxy holds one
//     subscription on the owner, folds what comes with the terminals' own reducer, and
//     answers each local subscribe with a snapshot, then every later action stamped
//     by this node's journal, nothing lost or doubled. Keystrokes out and frames in
//     pass through two processes of the proxy, not its mailbox, so a keystroke to
//     another node meets no actor of this package on either node.
//
// Actor messages inside a node carry Go pointers and channels and never leave it.
// Between nodes only the small set of messages of package wire goes: it owns them,
// their encoding (JSON, but for frames as their own bytes and a dispatch in a small
// binary layout, inside a protobuf BytesValue protoactor-go's remote carries without
// generated code) and their decoding, and it imports nothing of this package. Every
// actor here reads what it is sent through wire.Decode. The echo of a client's action waits on the owner for the output
// it causes, up to a couple of milliseconds, and crosses with it in one message
// (remoteSub), and output that comes while protoactor's endpoint writer is behind
// joins the frame message it has not taken yet, so a flood crosses as few large
// messages. The HTTP/2 windows between nodes are fixed, so grpc-go sends no
// bandwidth-probing ping for each small message, and its writes are unbuffered, so
// a small one does not wait for the writer to yield first (package nodeauth).
//
// The root lists every node's terminals: each node tells the others its own rows
// (and its load, for placement) whenever they change, and each row carries its
// node's name in _meta.node. A node the provider reports gone has its rows taken off
// every list, and every subscriber of one of its terminals is sent terminal/exited
// with no code and _meta.reason "node lost".
//
// Sessions are placed on a node as terminals are, and run their terminals and agent
// there; each node tells the others its sessions' summaries with its rows, and a
// session's or chat's channel is reached from another node through the same proxy,
// folded with the session's or chat's own reducer (sessions.go).
//
// A subscriber here of a lost node's session or chat is told on that channel
// (root/sessionRemoved scoped to it, _meta.reason "node lost"), and a terminal's claim
// naming another node's session is released when that session is disposed there
// (actors/root/cluster.go). A client's session or terminal URI is reserved at its home
// node before it is made, so two creates of one URI on two nodes do not both succeed
// (reserve.go); which node is a URI's home is package rendezvous's pure decision,
// and the home's book of who holds each URI is package reservations'.
//
// Users and grants are the cluster's: a users actor on each node sends the others its
// copy of the users file and merges theirs (package users, which this package spawns
// and gives the membership to through users.Node).
package cluster
