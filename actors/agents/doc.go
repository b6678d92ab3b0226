// Package agents runs the ACP agent behind a session: the process, its protocol
// (the Agent Client Protocol, over the process's stdin and stdout, with
// github.com/coder/acp-go-sdk), and what it streams turned into chat actions for the
// session to apply (the contract is actors/session/agent.go).
//
// One runner actor runs per session, a child of the session actor; every message of
// the contract goes to its parent. It promises:
//
//   - one agent process per runner, in its own process group, started in the
//     session's first working directory; its stderr goes to the log at debug;
//   - one prompt at a time: a prompt that arrives while another runs, or before the
//     agent is ready, waits for its turn; every prompt ends with exactly one
//     agentmsg.TurnEnded, a cancelled one included;
//   - what the agent streams for a turn reaches the session as agentmsg.Actions
//     in the order the agent sent it, and before that turn's agentmsg.TurnEnded; a
//     permission request (agentmsg.Permission) comes after the actions of the
//     tool call it is about;
//   - every command the agent runs through ACP's terminal/* methods is a host
//     terminal (backendterm.Terminals), listed on the root and claimed for the session,
//     its chat, turn and tool call; a tool call whose content names such a terminal
//     names that terminal's URI;
//   - the agent reads and writes files only below the session's working
//     directories, symlinks resolved;
//   - a crash ends the running turn with an error, and the runner starts the agent
//     again and loads the conversation when the agent can (a bounded number of
//     times in a window), else says the agent is lost;
//   - once the runner stops, the process group is gone (SIGTERM, then SIGKILL after
//     a grace), the terminals the agent left open are released, and no goroutine
//     the runner started is left running (each wait is bounded and logged if it
//     fires).
//
// It does not keep anything on disk of its own: the session keeps the agent's
// conversation id (agentmsg.Started) and the kept outputs of its terminals.
package agents
