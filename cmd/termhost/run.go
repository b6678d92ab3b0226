package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/termhost/termhost/internal/follow"
	"github.com/termhost/termhost/pty"
)

// runCmd is `termhost run [--cwd DIR] -- CMD ARGS`: a terminal that runs one command,
// its output streamed to stdout, stdin forwarded as its input; it exits with the
// command's code (128+n for signal n, whose name goes to stderr) and the terminal is
// disposed once the command is over.
//
// At the end of stdin, a command under a pseudoterminal is sent ctrl-D, the
// terminal's end-of-file key: a program reading its input sees it end, as after
// ctrl-D at a keyboard (twice when the input did not end a line, since the first only
// ends the line). On a host serving pipes (`serve --pty never`) the command's input
// cannot be closed and stays open. SIGINT is sent on as ctrl-C, so it reaches the
// command; SIGTERM or SIGHUP dispose the terminal, and run exits 128+n.
func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := addHostFlags(fs)
	cwd := fs.String("cwd", "", "the folder the command runs in (a relative one is taken from this folder)")
	node := fs.String("node", "", "on a cluster: the node the command runs on (default: the least loaded)")
	pipes := fs.Bool("pipes", false, "not supported: the host decides pseudoterminal or pipes for all its terminals")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *pipes {
		return errPipes
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError{errors.New("run needs a command: termhost run [--cwd DIR] -- CMD ARGS")}
	}
	h, err := hf.host()
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan syscall.Signal, 1) // the signal that stopped run
	stops := make(chan os.Signal, 1)
	signal.Notify(stops, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(stops)
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)

	clientID := newClientID()
	cctx, ccancel := withTimeout(ctx)
	defer ccancel()
	conn, _, err := h.connect(cctx, clientID)
	if err != nil {
		return err
	}
	uri := "ahp-terminal:/run-" + randomHex(4)
	if err := createTerminal(cctx, h, conn, clientID, uri, titleOf(argv), *cwd, *node, argv, stdout); err != nil {
		_ = conn.WS().CloseNow()
		return err
	}
	f := &follow.Follower{Host: h, ClientID: clientID, URI: uri, Out: stdout, Status: follow.NewStatusLine(stderr, "\n"), Patience: follow.DefaultPatience}
	defer f.Close()
	defer func() {
		// The command is over, or run was stopped: the terminal goes too.
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		_ = f.Dispose(dctx)
	}()
	if err := f.Start(ctx, conn); err != nil {
		return err
	}

	if f.Exited() == nil {
		go forwardStdin(f, os.Stdin, f.IsPty())
		go func() {
			for {
				select {
				case <-interrupts:
					f.Input("\x03")
				case sig := <-stops:
					stopped <- sig.(syscall.Signal)
					cancel()
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	exit, err := f.Follow(ctx)
	switch {
	case exit != nil:
		if exit.Signal != "" {
			fmt.Fprintf(stderr, "termhost: %s was killed by %s\n", argv[0], exit.Signal)
		} else if exit.Code == nil || *exit.Code < 0 {
			fmt.Fprintf(stderr, "termhost: %s %s\n", argv[0], exit)
		}
		if code := exit.Status(); code != 0 {
			return &exitStatus{code}
		}
		return nil
	case ctx.Err() != nil:
		select {
		case sig := <-stopped:
			fmt.Fprintf(stderr, "termhost: stopped by %s; the command's terminal is disposed\n", pty.SignalName(sig))
			return &exitStatus{128 + int(sig)}
		default:
		}
	}
	return err
}

// forwardStdin sends what is read from in as the terminal's input, and at its end
// what the end of input is on a pseudoterminal (see runCmd).
func forwardStdin(f *follow.Follower, in io.Reader, isPty bool) {
	var carry []byte
	lastByte := byte('\n')
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			var whole []byte
			whole, carry = completeUTF8(append(carry, buf[:n]...))
			if len(whole) > 0 {
				f.Input(string(whole))
				lastByte = whole[len(whole)-1]
			}
		}
		if err != nil {
			break
		}
	}
	if len(carry) > 0 {
		f.Input(string(carry))
		lastByte = carry[len(carry)-1]
	}
	if !isPty {
		return
	}
	if lastByte == '\n' || lastByte == '\r' {
		f.Input("\x04")
	} else {
		f.Input("\x04\x04")
	}
}

// titleOf is the terminal's name for a command: its words, clipped well under the
// host's limit on names.
func titleOf(argv []string) string {
	t := strings.Join(argv, " ")
	if len(t) > 200 {
		t = clip(t, 199)
	}
	return t
}
