// Package raw owns the raw baselines of `termhost bench`: what the host is compared
// against. Proc is the same work a scenario asks of the host done by this process
// straight on a pseudoterminal (creack/pty) or on pipes, as the host's own terminals
// are, with the same shell: its figures are the floor each host figure is held to.
// NodePinger times the node-to-node round trip between processes that the cluster
// scenario's cross-node echo is held to.
//
// Start and StartCmd run the child in a session of its own, like the host's
// children, so Kill ends its whole process group; Close reaps it and does not treat
// the child's exit status as an error (the bench wanted its output). A pseudoterminal
// whose slave is gone reads as EOF, not EIO.
package raw
