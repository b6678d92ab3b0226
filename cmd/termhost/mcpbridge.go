package main

// `termhost mcp`: the verb's flags; the bridge itself is internal/mcpbridge.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/termhost/termhost/internal/mcpbridge"
)

// mcpBridge is `termhost mcp`: it bridges stdin and stdout to a host's /mcp until
// stdin ends (or a SIGINT, SIGTERM or SIGHUP), then ends the MCP session with a
// DELETE and returns nil.
func mcpBridge(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urlFlag := fs.String("url", "", "the host's MCP endpoint, http://HOST:PORT/mcp?session=…&chat=…&tools=… (default $TERMHOST_MCP_URL, else $TERMHOST_URL's host, else "+defaultURL+", at /mcp)")
	tokenFlag := fs.String("token", "", "the token to sign in with (default $TERMHOST_TOKEN, else the one in <state-dir>/owner.token)")
	stateDir := fs.String("state-dir", defaultStateDir(), "the local host's state folder, where its owner.token is")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("mcp takes no operands, not %q", fs.Args())}
	}
	endpoint, err := mcpEndpoint(*urlFlag)
	if err != nil {
		return err
	}
	h, err := (&hostFlags{url: &endpoint, token: tokenFlag, stateDir: stateDir}).host()
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cfg := mcpbridge.Config{URL: h.url, Token: h.token, TokenPhrase: h.tokenPhrase(), Log: slog.New(slog.NewTextHandler(stderr, nil))}
	return mcpbridge.Run(ctx, cfg, stdin, stdout)
}

// mcpEndpoint is mcpbridge.Endpoint with this binary's default host; its errors are
// usage errors.
func mcpEndpoint(flagURL string) (string, error) {
	u, err := mcpbridge.Endpoint(flagURL, defaultURL)
	if err != nil {
		return "", usageError{err}
	}
	return u, nil
}
