// Package shells owns the shells an agent's tools open in one session: which shell
// each call runs in, the command running in it and when it ended, what the agent has
// read of it, the monitors watching it, and the wakes it sends when something
// happens while the agent is not looking.
//
// Every shell is an ordinary host terminal: the service asks the root to open it,
// claimed for the session and chat, so it is on the root list and any client with
// the grants subscribes to it and types into it. The service is the terminal's
// watcher and reads it the way a client does (terminal/data and the command marks);
// it never owns a process itself.
//
// One Service actor runs per session, a child of the session actor, spawned on the
// first tool call (session.ToolServiceQuery). Tool calls reach it as requests from
// the MCP server (server/mcp); each is answered with a *Result, at once or, for a
// command, when it ends or its wait is over. Wakes go to the session as a
// session.Wake turn, and to every attached Sink (an MCP connection).
package shells
