// Package integration owns shell integration on a terminal's output: it finds the
// command-boundary marks a shell prints into its own output (OSC 133 A/B/C/D, VS
// Code's OSC 633 A/B/C/D/E/P and OSC 7), takes them out of that output, and turns
// them, together with what was typed into the terminal, into the terminal channel's
// actions: terminal/data for the output that is left, terminal/commandDetectionAvailable,
// terminal/commandExecuted, terminal/commandFinished and terminal/cwdChanged.
//
// Parser is the streaming mark parser, with no notion of commands; Tracker feeds it
// and keeps the state of the command in flight. NewNonce and NonceEnv are the nonce
// a terminal hands to VS Code's scripts so that only its own shell can name a command
// line with OSC 633 E.
//
// Neither Parser nor Tracker starts goroutines. A Parser is for one goroutine at a
// time; a Tracker may be called from several.
package integration
