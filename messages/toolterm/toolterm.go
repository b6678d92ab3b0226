// Package toolterm names the terminals a chat's tools open: a `!` command's terminal
// and an agent tool's shell. Such a terminal is named after its chat, with a key (the
// tool call's id, or the shell's), so that a subscribe no live terminal answers can be
// answered from what was kept of it (seed 000: "A terminal a tool result names"), and
// so that whoever routes a channel (the root, a cluster node, the MCP host) can tell
// whose it is from its name alone.
package toolterm

import (
	"net/url"
	"strings"
)

// prefix starts every such terminal's URI.
const prefix = "ahp-terminal:/termhost-command/"

// AgentShellKeyPrefix starts the key of an agent tool's shell (actors/shells). No
// tool call of the chat names such a shell, so what was kept of it is answered on its
// own.
const AgentShellKeyPrefix = "agent-"

// URI names the terminal a tool of chat opened, with its key.
func URI(chat, key string) string {
	return prefix + url.PathEscape(chat) + "/" + url.PathEscape(key)
}

// Parse returns the chat and key a tool terminal's URI names; ok is false for any
// other URI.
func Parse(uri string) (chat, key string, ok bool) {
	rest, found := strings.CutPrefix(uri, prefix)
	if !found {
		return "", "", false
	}
	c, k, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	chat, err1 := url.PathUnescape(c)
	key, err2 := url.PathUnescape(k)
	if err1 != nil || err2 != nil || chat == "" || key == "" {
		return "", "", false
	}
	return chat, key, true
}
