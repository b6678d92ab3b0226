package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/termhost/termhost/internal/bench/benchproc"
)

// benchAgent is the hidden `termhost bench-agent`: the ACP agent with no model that
// `termhost bench --scenario agents` runs behind its sessions (as the host's agent
// "bench") and drives directly for its raw side. It answers every prompt with one short
// agent_message_chunk and end_turn, on stdin and stdout, until stdin closes.
func benchAgent(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("bench-agent takes no arguments, got %q", args)}
	}
	benchproc.ServeAgent(stdin, stdout)
	return nil
}

// benchBusy is the hidden `termhost bench-busy N`: the CPU-bound neighbour of `termhost
// bench`'s busy scenario, N goroutines spinning until stdin closes.
func benchBusy(args []string, stdin io.Reader) error {
	if len(args) != 1 {
		return usageError{fmt.Errorf("bench-busy takes one argument, the number of goroutines, got %q", args)}
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return usageError{fmt.Errorf("bench-busy: want a positive number of goroutines, got %q", args[0])}
	}
	benchproc.ServeBusy(n, stdin)
	return nil
}
