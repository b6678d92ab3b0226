package main

// The client verbs (ls, new, attach, run, kill) speak AHP to a running host, like any
// other client: this file holds what they share — which host and token, the
// connection, the terminal a person names, and errors in sentences.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// defaultURL is the host `termhost serve` starts with no --listen.
const defaultURL = "ws://127.0.0.1:9187/"

// requestTimeout bounds one request's round trip; a host that does not answer in it
// is one a person should hear about rather than wait on.
const requestTimeout = 30 * time.Second

// clientVerbs runs a client verb. An *exitStatus it returns is the process's exit
// code (attach and run exit with their terminal's), already explained on stderr.
func clientVerbs(verb string, args []string, stdout, stderr io.Writer) error {
	switch verb {
	case "ls":
		return lsCmd(args, stdout, stderr)
	case "new":
		return newCmd(args, stdout, stderr)
	case "attach":
		return attachCmd(args, stdout, stderr)
	case "run":
		return runCmd(args, stdout, stderr)
	case "kill":
		return killCmd(args, stdout, stderr)
	}
	return usageError{fmt.Errorf("unknown verb %q", verb)}
}

// exitWithStatus ends the process with an *exitStatus's code; any other error goes
// back to main, which exits 1 or 2. It is called only on main's path, never in tests.
func exitWithStatus(err error) error {
	var st *exitStatus
	if errors.As(err, &st) {
		os.Exit(st.code)
	}
	return err
}

// exitStatus is an exit code of the verb's own, whose reason it has already printed.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return "exit status " + strconv.Itoa(e.code) }

// hostFlags are the flags every client verb takes to find its host.
type hostFlags struct {
	url, token, stateDir *string
}

func addHostFlags(fs *flag.FlagSet) *hostFlags {
	return &hostFlags{
		url:      fs.String("url", "", "the host, ws://HOST:PORT/ (default $TERMHOST_URL, else "+defaultURL+")"),
		token:    fs.String("token", "", "the token to sign in with (default $TERMHOST_TOKEN, else the one in <state-dir>/owner.token)"),
		stateDir: fs.String("state-dir", defaultStateDir(), "the local host's state folder, where its owner.token is"),
	}
}

// parseInterspersed parses flags that may come before or after the operands (`attach
// NAME --read-only`), as token does; after --, nothing is a flag.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, nil
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(operands, rest...), nil
		}
		operands, args = append(operands, rest[0]), rest[1:]
	}
}

// host is the host a verb talks to and how it signs in.
type host struct {
	url       string
	token     string
	tokenFrom string // --token, $TERMHOST_TOKEN, the token file's path; "" for none
	tokenFile string // where the owner's token would be
}

func (f *hostFlags) host() (*host, error) {
	h := &host{url: *f.url, token: *f.token, tokenFrom: "--token", tokenFile: filepath.Join(*f.stateDir, "owner.token")}
	if h.url == "" {
		h.url = os.Getenv("TERMHOST_URL")
	}
	if h.url == "" {
		h.url = defaultURL
	}
	u, err := url.Parse(h.url)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss" && u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError{fmt.Errorf("--url must be ws://HOST:PORT/ (or wss://), not %q", h.url)}
	}
	if h.token == "" {
		h.token, h.tokenFrom = os.Getenv("TERMHOST_TOKEN"), "$TERMHOST_TOKEN"
	}
	if h.token == "" {
		b, err := os.ReadFile(h.tokenFile)
		switch {
		case err == nil:
			h.token, h.tokenFrom = strings.TrimSpace(string(b)), h.tokenFile
		case errors.Is(err, os.ErrNotExist):
			h.tokenFrom = "" // no token: a loopback host still lists its terminals
		default:
			return nil, fmt.Errorf("reading the owner's token: %w", err)
		}
	}
	return h, nil
}

// URL is the host's address as given.
func (h *host) URL() string { return h.url }

// Dial opens a connection, without a handshake, signed in with the token as a
// Bearer header (kept out of the URL, which proxies and logs may record).
func (h *host) Dial(ctx context.Context) (*client.Conn, error) {
	var opts *websocket.DialOptions
	if h.token != "" {
		opts = &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + h.token}}}
	}
	c, err := client.Dial(ctx, h.url, opts)
	if err != nil {
		return nil, h.Explain(err)
	}
	return c, nil
}

// connect dials and initializes as clientID with the root channel subscribed, and
// returns the root's list of terminals.
func (h *host) connect(ctx context.Context, clientID string) (*client.Conn, []messages.TerminalInfo, error) {
	c, err := h.Dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := c.Initialize(ctx, clientID, messages.RootURI)
	if err != nil {
		_ = c.WS().CloseNow()
		return nil, nil, h.Explain(err)
	}
	var list []messages.TerminalInfo
	for _, s := range res.Snapshots {
		if s.Resource != messages.RootURI {
			continue
		}
		st, err := s.RootState()
		if err != nil {
			_ = c.WS().CloseNow()
			return nil, nil, fmt.Errorf("the host's root state: %w", err)
		}
		if st.Terminals != nil {
			list = *st.Terminals
		}
	}
	return c, list, nil
}

// Explain turns what went wrong talking to the host into a sentence a person can act
// on; errors it does not know come back as they are.
func (h *host) Explain(err error) error {
	var up *client.UpgradeError
	var rpc *messages.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no termhost is running at %s (connection refused); start one with `termhost serve`", h.url)
	case errors.As(err, &up) && up.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("the host at %s did not accept %s (401 Unauthorized); give a token of one of its users with --token or $TERMHOST_TOKEN (`termhost token add` on the host makes one)", h.url, h.tokenPhrase())
	case errors.As(err, &up):
		return fmt.Errorf("the host at %s refused the connection (%d): %s", h.url, up.StatusCode, up.Body)
	case errors.As(err, &rpc) && rpc.Code == messages.CodePermissionDenied && strings.HasPrefix(rpc.Message, "Sign in"):
		// A host on loopback lets a connection without a valid token in as nobody,
		// who may read the list and drive nothing: the token is what is wrong.
		return fmt.Errorf("the host at %s did not accept %s: it lets you in as nobody, who can only list terminals; give a token of one of its users with --token or $TERMHOST_TOKEN", h.url, h.tokenPhrase())
	case errors.As(err, &rpc) && rpc.Code == messages.CodePermissionDenied:
		return fmt.Errorf("the host refused: %s (ask its owner for a role with that grant)", rpc.Message)
	}
	return err
}

func (h *host) tokenPhrase() string {
	if h.tokenFrom == "" {
		return "a connection without a token (no --token, no $TERMHOST_TOKEN, no " + h.tokenFile + ")"
	}
	return "the token from " + h.tokenFrom
}

// NotFound is the error for a terminal the host does not have.
func (h *host) NotFound(name string) error {
	return fmt.Errorf("no terminal %s on %s; `termhost ls` lists them", name, h.url)
}

// newClientID names this invocation to the host. A clientId is its person's; each
// run of a verb is a client of its own.
func newClientID() string { return "termhost-cli-" + randomHex(6) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// resolveTerminal finds the terminal a person named: its URI, its name (the last
// part of its URI, as `termhost new --name` makes it, or its title), or #N, its row
// in `termhost ls`.
func (h *host) resolveTerminal(list []messages.TerminalInfo, arg string) (messages.TerminalInfo, error) {
	if n, ok := strings.CutPrefix(arg, "#"); ok {
		i, err := strconv.Atoi(n)
		if err != nil || i < 1 {
			return messages.TerminalInfo{}, usageError{fmt.Errorf("%q: #N is a row of `termhost ls`, counted from 1", arg)}
		}
		if i > len(list) {
			return messages.TerminalInfo{}, fmt.Errorf("no terminal %s on %s: it lists %d; `termhost ls` shows them", arg, h.url, len(list))
		}
		return list[i-1], nil
	}
	if strings.Contains(arg, ":") {
		for _, t := range list {
			if t.Resource == arg {
				return t, nil
			}
		}
		return messages.TerminalInfo{}, h.NotFound(arg)
	}
	var found []messages.TerminalInfo
	for _, t := range list {
		if terminalName(t.Resource) == arg || t.Title == arg {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return messages.TerminalInfo{}, h.NotFound(arg)
	case 1:
		return found[0], nil
	}
	uris := make([]string, len(found))
	for i, t := range found {
		uris[i] = t.Resource
	}
	return messages.TerminalInfo{}, fmt.Errorf("%q names %d terminals (%s); give its URI or #N", arg, len(found), strings.Join(uris, ", "))
}

// terminalName is the name in a terminal URI: its path without the leading slash,
// unescaped.
func terminalName(uri string) string {
	_, rest, ok := strings.Cut(uri, ":")
	if !ok {
		return ""
	}
	rest = strings.TrimPrefix(rest, "/")
	if name, err := url.PathUnescape(rest); err == nil {
		return name
	}
	return rest
}

// terminalURI is the URI `termhost new` gives a terminal named name.
func terminalURI(name string) string { return "ahp-terminal:/" + url.PathEscape(name) }

// withTimeout is a request's context.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}
