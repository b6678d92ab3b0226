// Package terminal owns one terminal channel each: the terminal actor, which holds
// the TerminalState (folded with the clients' reducer), the capped scrollback and the
// subscribers; its shell actor, which owns the process (pseudoterminal or pipes), its
// input pump and its output reader; and, under a pseudoterminal, the headless screen
// and the shell integration's command tracker.
//
// It promises:
//   - the terminal's mailbox serializes everything on its channel: input, resize,
//     claim, title, clear and the shell's output. A subscribe is answered from inside
//     that mailbox, so a subscriber gets the snapshot and then every later action,
//     nothing lost or doubled between them;
//   - input keeps its order, from before the process started too;
//   - terminal/exited goes out once, only after the process exited and its output
//     drained (or the drain grace ran out);
//   - a disposed terminal ends every process in its session (SIGHUP, then SIGKILL
//     after the grace) and reaps it before its actor stops;
//   - a shell actor that fails is restarted by the terminal without losing the
//     terminal's state or the process.
//
// Nothing blocks inside Receive: process waits, reads and writes that may block run
// on goroutines that report back as messages.
package terminal
