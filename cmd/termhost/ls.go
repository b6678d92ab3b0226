package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/internal/follow"
	"github.com/termhost/termhost/messages"
)

// lsRow is one terminal as `termhost ls` shows it; --json prints these.
type lsRow struct {
	Index    int            `json:"index"` // #N, as attach and kill take it
	URI      string         `json:"uri"`
	Title    string         `json:"title"`
	Cwd      string         `json:"cwd,omitempty"`  // a path on the host's machine
	Node     string         `json:"node,omitempty"` // the cluster node it runs on
	Claim    messages.Claim `json:"claim"`
	Status   string         `json:"status"` // running or exited
	ExitCode *int           `json:"exitCode,omitempty"`
	Signal   string         `json:"signal,omitempty"`
	Cols     *int           `json:"cols,omitempty"`
	Rows     *int           `json:"rows,omitempty"`
}

// lsCmd is `termhost ls [--json] [--watch]`.
func lsCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := addHostFlags(fs)
	asJSON := fs.Bool("json", false, "print the list as JSON (with --watch, one array a line)")
	watch := fs.Bool("watch", false, "print the list again whenever it changes, until interrupted")
	operands, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usageError{fmt.Errorf("ls takes no arguments, got %q", operands)}
	}
	h, err := hf.host()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cctx, cancel := withTimeout(ctx)
	conn, list, err := h.connect(cctx, newClientID())
	cancel()
	if err != nil {
		return err
	}
	defer closeConn(conn)

	// The root's lists are handed over, the newest only; every other frame (from
	// the terminals subscribed for a moment to read their folder and size) is
	// dropped, so that requests are always answered.
	lists := make(chan []messages.TerminalInfo, 1)
	go func() {
		defer close(lists)
		for n := range conn.Notifications {
			env := n.Envelope
			if env == nil || env.Channel != messages.RootURI || env.Type != messages.RootTerminalsChanged {
				continue
			}
			a, err := env.Decode()
			if err != nil || a.Terminals == nil {
				continue
			}
			select {
			case <-lists:
			default:
			}
			lists <- *a.Terminals
		}
	}()

	clearScreen := *watch && !*asJSON && isTerminal(stdout)
	for {
		rows, detailErr := details(ctx, conn, list)
		if clearScreen {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		}
		if err := printRows(stdout, rows, *asJSON); err != nil {
			return err
		}
		if detailErr != nil && !*watch {
			fmt.Fprintf(stderr, "termhost: the folder and size of a terminal are not shown: %v\n", h.Explain(detailErr))
		}
		if !*watch {
			return nil
		}
		select {
		case l, ok := <-lists:
			if !ok {
				return fmt.Errorf("the connection to %s ended: %v", h.url, conn.Err())
			}
			list = l
		case <-ctx.Done():
			return nil
		}
	}
}

// details makes the rows of list, reading each terminal's folder and size from its
// snapshot (the root list does not carry them). A terminal that cannot be read
// keeps its row without them; the first such error is returned.
func details(ctx context.Context, conn *client.Conn, list []messages.TerminalInfo) ([]lsRow, error) {
	rows := make([]lsRow, len(list))
	var first error
	for i, t := range list {
		r := lsRow{Index: i + 1, URI: t.Resource, Title: t.Title, Claim: t.Claim, Status: messages.StatusRunning}
		r.Node, _ = t.Meta[root.NodeMeta].(string)
		if e := follow.ExitFromState(&messages.TerminalState{Lifecycle: t.Lifecycle, ExitCode: t.ExitCode, Meta: t.Meta}); e != nil {
			r.Status, r.ExitCode, r.Signal = messages.StatusExited, e.Code, e.Signal
		}
		rctx, cancel := withTimeout(ctx)
		snap, err := conn.Subscribe(rctx, t.Resource)
		cancel()
		if err == nil {
			_ = conn.Unsubscribe(ctx, t.Resource)
			var st *messages.TerminalState
			if st, err = snap.TerminalState(); err == nil {
				r.Cwd, r.Cols, r.Rows = cwdPath(st.Cwd), st.Cols, st.Rows
			}
		}
		var rpc *messages.Error
		if err != nil && !(errors.As(err, &rpc) && rpc.Code == messages.CodeNotFound) && first == nil {
			first = err // a terminal gone since the list was made is no error
		}
		rows[i] = r
	}
	return rows, first
}

// cwdPath is the path of a file: URI, or the URI as it is.
func cwdPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return uri
}

func printRows(w io.Writer, rows []lsRow, asJSON bool) error {
	if asJSON {
		if rows == nil {
			rows = []lsRow{}
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	// A cluster's rows name their node; a single host's table stays as it was.
	clustered := slices.ContainsFunc(rows, func(r lsRow) bool { return r.Node != "" })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "#\tURI\tTITLE\tCWD\tCLAIM\tSTATUS\tSIZE"
	if clustered {
		header += "\tNODE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s", r.Index, r.URI, clip(r.Title, 32), orDash(r.Cwd), claimText(r.Claim), r.statusText(), r.sizeText())
		if clustered {
			fmt.Fprintf(tw, "\t%s", orDash(r.Node))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func (r *lsRow) statusText() string {
	if r.Status != messages.StatusExited {
		return r.Status
	}
	s := "exited"
	if r.ExitCode != nil {
		s += " " + strconv.Itoa(*r.ExitCode)
	}
	if r.Signal != "" {
		s += " (" + r.Signal + ")"
	}
	return s
}

func (r *lsRow) sizeText() string {
	if r.Cols == nil || r.Rows == nil {
		return "-"
	}
	return fmt.Sprintf("%dx%d", *r.Cols, *r.Rows)
}

func claimText(c messages.Claim) string {
	switch c.Kind {
	case messages.ClaimClient:
		return "client " + orDash(c.ClientID)
	case messages.ClaimSession:
		return "session " + c.Session
	}
	return orDash(c.Kind)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clip shortens s to n characters, control characters shown as spaces: a title is
// the shell's to set, and is not to move this table's cursor.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// closeConn closes a connection nobody reads any more.
func closeConn(c *client.Conn) {
	go func() {
		for range c.Notifications { // so the close handshake is read
		}
	}()
	_ = c.Close()
}
