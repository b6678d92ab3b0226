// Package actors holds every mutable thing of the host in exactly one protoactor-go
// actor: the Host (the root list, root config and the registry of channels), one
// Terminal per terminal with its Shell child that owns the process, and one Connection
// per WebSocket.
//
// Ordering promises:
//   - A Terminal's mailbox serializes everything on its channel: input, resize, claim,
//     title, clear and the shell's output. A subscribe is answered from inside that
//     mailbox, so a subscriber gets the snapshot and then every later action, nothing
//     lost or doubled between them.
//   - terminal/exited goes out once, only after the process exited and its output
//     drained (or the drain grace ran out), so a one-command terminal's output is all
//     there before its exit.
//   - serverSeq is one host-wide counter (the Journal); every envelope on every channel
//     takes the next value, and the Journal keeps a bounded ring for reconnect.
//
// Nothing blocks inside Receive: process waits, reads and socket writes happen on
// goroutines that report back as messages, and a Terminal hands frames to a
// Connection's Outbox, which never blocks.
package actors
