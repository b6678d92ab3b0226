package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/termhost/termhost/server"
)

// ownerBrowserLine is the line serve prints on stderr, once, for the owner it has just
// made on a fresh state folder (as Jupyter prints its tokened address): the browser
// page at hostport, signed in with the token in tokenPath. The token rides in the
// address's fragment (#tkn=), which a browser never sends to the host; the page keeps
// it in the tab's sessionStorage and takes it out of the address bar at once.
// Stdout is not used: it carries only the contract line.
func ownerBrowserLine(hostport, tokenPath string) (string, error) {
	b, err := os.ReadFile(tokenPath)
	if err != nil {
		return "", fmt.Errorf("reading the owner's token for the browser address: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s holds no token", tokenPath)
	}
	return "termhost: to use the terminals in a browser, open " + server.PageURL(hostport, token), nil
}
