// Package mcphost serves the agent shell tools over the Model Context Protocol:
// streamable HTTP at /mcp, signed in with the host's own tokens and grants. Each MCP
// connection is bound to one session and chat (named in the URL, or a new session
// made for it, visible to AHP clients like any other), and its tool calls go to that
// session's shell service (actors/shells). Which tools are offered is the host's
// --tools choice (host, pty or both), which a connection may narrow with ?tools=.
//
// A wake (a monitor's lines, a background command's end) reaches an MCP client
// three ways, since an MCP client cannot be made to take a turn: a logging
// notification, a resources/updated notification on the shell's resource, and the
// wakes not yet seen prepended to the next tool result.
package mcphost
