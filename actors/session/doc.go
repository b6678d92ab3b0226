// Package session owns sessions and their chats: one actor per session holds the
// session's state, its chats with their turns, and the `!` commands that run in
// them, each in a host terminal the session opens through the root, claimed by the
// session, chat, turn and tool call, and read as a client reads it. An agent backend's
// terminals are opened through actors/backendterm, which the session hands its agent.
//
// It promises:
//   - a chat's actions are folded with the clients' reducers and stamped in order, so
//     a subscriber's snapshot then stream is the chat as every other client sees it;
//   - a chat runs one turn at a time; queued messages start, in order, when it is idle;
//   - a finished command's output is kept before the turn that names it, so a host
//     killed at any moment never leaves a turn naming output that was never written,
//     and the terminal a tool result names opens after the process and the host are
//     gone;
//   - a command's turn completes (chat/turnComplete) only once both are on disk, so a
//     turn a client was told is complete survives the host being killed right after;
//   - what a chat holds of a command is let go once its turn is kept: what the run
//     read goes, the turn stays in the chat's state and its output in the store;
//   - a shutdown ends the commands still waiting and waits for what must be written.
package session
