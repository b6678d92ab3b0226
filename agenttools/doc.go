// Package agenttools owns what the agent shell tools do to text and time that needs no
// shell: shaping terminal output for a model, naming keys, and the monitor delivery
// rules.
//
// Everything here is a pure function or a small value with no goroutines, no clock and
// no I/O, so the shell tools service (actors/shells) can call it from inside a Receive
// and tests can drive it with a fake clock:
//
//   - Output: Clean turns what a pseudoterminal wrote into the text a person would read
//     off the terminal line by line (escape sequences out, carriage-return and backspace
//     redraws folded, stray controls dropped); ForModel then keeps the tail within a
//     model's line and byte limits and says what it dropped; HostOutput is the host tool
//     family's cut, the last HostMaxChars characters.
//   - Keys: KeyBytes turns a key name an agent writes ("ctrl+c", "up", "alt+x") into the
//     bytes a terminal sends for it.
//   - Filter: a monitor's compiled RE2 line filter.
//   - Gate: one monitor's delivery rules. It decides when matching lines wake the
//     agent and what a wake says; it never sleeps, it tells its owner when to call back
//     (Next) and answers for the time it is given (Take).
//
// What it promises: a Gate delivers the exit summary exactly once, whatever else it
// withheld; nothing it drops goes uncounted (omitted and paused lines are reported on a
// later delivery); and ForModel's answer fits the limits it was given, its marker
// included.
package agenttools
