// Package ahp is the AHP method table: one connection actor per WebSocket decodes each
// JSON-RPC frame a client sends, admits it (the signed-in principal's grants, read
// again on every frame), and routes it to the root, a terminal or a session through
// the channel messages; answers and actions go back through the connection's Outbox.
//
// It promises:
//   - requests are answered in the order they came on the connection, and a
//     subscribe's snapshot is released before any action that follows it;
//   - a client's terminal/* dispatches reach the terminal in the order they were sent;
//   - bad input is answered (a JSON-RPC error, or a dispatch echoed with its
//     rejectionReason) and loses nothing: the connection and the host go on;
//   - a connection whose token is revoked, or that may no longer read a channel it is
//     subscribed to, is closed with a reason saying which.
package ahp
