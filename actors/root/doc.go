// Package root owns the root channel (ahp-root://) and the registry of channels: the
// list of terminals, the root config (defaultShell, enableCustomTerminalTool), and
// which actor answers each terminal, session and chat URI. It spawns the terminals and
// sessions and supervises them.
//
// It promises:
//   - root/terminalsChanged carries the whole list whenever a terminal opens, closes,
//     exits, is renamed or changes claim; a burst of changes within 10 ms goes as one
//     list at the window's end, and a snapshot always has the list as it is now;
//   - a terminal is taken off the registry before the answer to its dispose, or to
//     its failed create, goes out, so a subscribe sent after that answer finds no
//     channel;
//   - a shutdown asks the sessions to end their commands and write what they keep
//     first, then ends every terminal, and answers once every process is reaped.
package root
