// Package messages owns the Agent Host Protocol as termhost speaks it: the JSON-RPC
// frames, the wire shapes of states and actions (PROTOCOL.md sections 4 to 6), and the
// pure reducers that fold actions into state.
//
// The host folds every action it sends through the same reducers a client runs, so a
// snapshot always equals the fold of the actions that came before it. Reducers never
// do I/O and never keep references to their inputs' mutable parts.
package messages
