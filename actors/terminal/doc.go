// Package terminal owns one terminal channel each: the terminal actor, which holds
// the TerminalState (folded with the clients' reducer), the capped scrollback and the
// subscribers; its two children, the shell actor, which owns the process
// (pseudoterminal or pipes) and the goroutines that serve it (output reader, exit
// waiter, input pump), and the claim actor, which decides who holds the terminal and
// watches the holder; and, under a pseudoterminal, the headless screen and the shell
// integration's command tracker.
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
//   - a shell actor that fails, or whose reader, exit waiter or input pump panics,
//     is restarted by the terminal without losing the terminal's state or the
//     process; the restarted actor starts again what panicked;
//   - a terminal/claimed is decided by the claim actor and still takes its place in
//     the channel's order; what becomes of a claim whose holder goes is decided
//     there (see the claim type).
//
// Nothing blocks inside Receive: process waits, reads and writes that may block run
// on goroutines that report back as messages.
package terminal
