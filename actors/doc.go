// Package actors is where every mutable thing of the host lives, each in exactly one
// protoactor-go actor, one package per job beneath it:
//
//   - root: the root channel (the list of terminals, root config) and the registry
//     that maps a channel URI to its actor; it spawns and supervises the rest;
//   - terminal: one actor per terminal, with its shell child that owns the process;
//   - session: one actor per session, with its chats, their turns and `!` commands;
//   - channel: the messages every channel actor answers (subscribe, unsubscribe,
//     dispatch, shutdown);
//   - delivery: how frames reach a connection: the Journal (serverSeq and the replay
//     ring) and one Outbox per connection.
//
// The connection actor, one per WebSocket, is the AHP method table in server/ahp.
//
// Nothing blocks inside a Receive: process waits, reads and socket writes happen on
// goroutines that report back as messages, and a channel actor hands frames to a
// connection's Outbox, which never blocks.
package actors
