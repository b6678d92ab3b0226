// Package benchproc owns the programs `termhost bench` runs as processes of their own
// beside the host, which the binary serves as hidden verbs: the CPU-bound neighbour of
// the busy scenario (`termhost bench-busy N`) and the ACP agent with no model behind
// the agents scenario's sessions (`termhost bench-agent`). The scenarios start them
// and measure against them; nothing here measures anything.
package benchproc
