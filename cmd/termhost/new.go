package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// errPipes answers --pipes: AHP's createTerminal has no field for it (PROTOCOL.md 6:
// no isPty, command or shell field in any version), and termhost's x-termhost
// extension has none either; a host decides for all its terminals.
var errPipes = usageError{errors.New("--pipes: a terminal cannot ask for pipes; the host decides for all of its terminals (start it with `termhost serve --pty never` for pipes)")}

// newCmd is `termhost new [--name N] [--cwd DIR] [--attach] [-- CMD ARGS]`.
func newCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := addHostFlags(fs)
	name := fs.String("name", "", "the terminal's name: its URI is ahp-terminal:/NAME, and attach and kill take it")
	cwd := fs.String("cwd", "", "the folder it starts in (a relative one is taken from this folder)")
	pipes := fs.Bool("pipes", false, "not supported: the host decides pseudoterminal or pipes for all its terminals")
	attachToo := fs.Bool("attach", false, "attach to it once it is made")
	node := fs.String("node", "", "on a cluster: the node it runs on (default: the least loaded)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *pipes {
		return errPipes
	}
	h, err := hf.host()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	clientID := newClientID()
	cctx, cancel := withTimeout(ctx)
	defer cancel()
	conn, _, err := h.connect(cctx, clientID)
	if err != nil {
		return err
	}
	uri := "ahp-terminal:/cli-" + randomHex(4)
	if *name != "" {
		uri = terminalURI(*name)
	}
	if err := createTerminal(cctx, h, conn, clientID, uri, *name, *cwd, *node, fs.Args(), stdout); err != nil {
		_ = conn.WS().CloseNow()
		var rpc *messages.Error
		if *name != "" && errors.As(err, &rpc) && rpc.Code == messages.CodeAlreadyExists {
			return fmt.Errorf("a terminal named %q is there already (%s): pick another --name, or `termhost attach %s`", *name, uri, *name)
		}
		return err
	}
	fmt.Fprintln(stdout, uri)
	if *attachToo {
		return attach(ctx, h, conn, clientID, uri, false, os.Stdin, stdout, stderr)
	}
	closeConn(conn)
	return nil
}

// createTerminal asks the host for a terminal at uri, claimed by this client, sized
// as the terminal out is when it is one. A command goes in termhost's x-termhost
// extension as a program and its arguments: the host quotes them for its shell. A
// node, on a cluster, goes in _meta.node.
func createTerminal(ctx context.Context, h *host, conn *client.Conn, clientID, uri, name, cwd, node string, argv []string, out io.Writer) error {
	p := map[string]any{
		"channel": uri,
		"claim":   map[string]any{"kind": messages.ClaimClient, "clientId": clientID},
	}
	if name != "" {
		p["name"] = name
	}
	if cwd != "" {
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return fmt.Errorf("--cwd: %w", err)
		}
		p["cwd"] = messages.FileURI(abs)
	}
	if f, ok := out.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && rows > 0 {
			p["cols"], p["rows"] = cols, rows
		}
	}
	meta := map[string]any{}
	if len(argv) > 0 {
		meta["x-termhost"] = map[string]any{"command": argv[0], "args": append([]string{}, argv[1:]...)}
	}
	if node != "" {
		meta[root.NodeMeta] = node
	}
	if len(meta) > 0 {
		p["_meta"] = meta
	}
	_, err := conn.Request(ctx, "createTerminal", p)
	var rpc *messages.Error
	if errors.As(err, &rpc) && rpc.Code == messages.CodeAlreadyExists {
		return err
	}
	return h.Explain(err)
}

// killCmd is `termhost kill URI|NAME|#N...`: each is disposed, its processes ended.
func killCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := addHostFlags(fs)
	operands, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(operands) == 0 {
		return usageError{errors.New("kill takes one or more terminals: URI, name or #N")}
	}
	h, err := hf.host()
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(context.Background())
	defer cancel()
	conn, list, err := h.connect(ctx, newClientID())
	if err != nil {
		return err
	}
	defer closeConn(conn)
	// Every name is looked up in the list as it was before any kill: #2 is the
	// second row the person saw.
	// Each failure is said on its own line; the last one is main's to print.
	var last error
	for _, arg := range operands {
		t, err := h.resolveTerminal(list, arg)
		if err == nil {
			_, err = conn.Request(ctx, "disposeTerminal", map[string]any{"channel": t.Resource})
			err = h.Explain(err)
		}
		if err != nil {
			if last != nil {
				fmt.Fprintln(stderr, "termhost:", last)
			}
			last = err
		}
	}
	return last
}
