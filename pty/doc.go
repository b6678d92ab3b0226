// Package pty is the host's port for starting processes: a shell, or one command
// run by a shell, under a pseudoterminal (creack/pty) or on plain pipes. It owns the
// process it starts and every file descriptor that goes with it; it knows nothing
// about terminals as channels, scrollback or clients.
//
// What a caller may rely on (seed "Pipes, or a pseudoterminal" and "What a client
// sees"):
//
//   - One stream. Output is the child's stdout and stderr merged, in the order the
//     child wrote them: on pipes both are the same pipe, under a pseudoterminal both
//     are the terminal. Read it from one goroutine, from Start until io.EOF, and
//     never stop: a child whose output nobody reads blocks on a full kernel buffer.
//
//   - Output is over at io.EOF, not at exit. The process exiting and its output
//     ending are different moments: between them is output written and not yet
//     read. EOF arrives once every holder of the child's end has closed it, which
//     includes a background job the child left running. Linux reports a gone
//     pseudoterminal slave as EIO; Output translates that to io.EOF in one place.
//     A caller that will not wait for a background job forever reads until EOF or a
//     grace of its own, then calls CloseOutput, after which Read returns io.EOF.
//
//   - One owner calls Wait, once. Wait reaps the child; only one goroutine may do
//     that (a second reap would find nothing, or another process with the same
//     pid). Everyone else watches Done, which is closed after Wait has the exit
//     status. Terminate never waits: it signals and watches Done.
//
//   - Signals go to the child's process group. Each child starts in a session of
//     its own (setsid), so its pid names its group, and a signal reaches the jobs it
//     started too. A group is only ever named by a real pid: signalling group 0
//     would signal the host's own group. Terminate ends the whole session, the
//     jobs an interactive shell put in groups of their own and those a double
//     fork handed to init included; only a process that called setsid has left it.
//
//   - Close releases descriptors; it does not end the process. A caller ends a
//     process with Signal or Terminate, lets its owner Wait, then Closes.
//
// What it deliberately does not do: it does not pick a shell for a terminal (the
// caller does; DefaultShell is the daemon's own), does not inject shell integration
// (the caller passes ShellArgs and Env), and does not decide what a missing
// directory means to a client (Start refuses it with ErrNoDir and the caller says
// so in the terminal's output).
package pty
