// Package persistence owns the session store on disk: what the host keeps of a session
// after its turns have run, so that a restart, a client's dispose or a backend's release
// does not lose it (seed 000, "A terminal a tool result names" and "Who opens one").
//
// It keeps three things, and only these:
//
//   - a session's record: its URI, title (and whether somebody named it), working
//     directories, when it was created and when its first command started and its last
//     one ended, so that a session whose turns are all `!` commands - which no backend
//     has a transcript of - is still listed after a restart;
//   - a chat's local turns: each `!` command's turn, anchored to the turn before it, in
//     the order they ran (MergeTurns puts them back among a transcript's turns);
//   - a chat's retained terminals: what a terminal a tool result names printed, its exit
//     code and whether a pseudoterminal wrote it, kept under the chat and a key so that a
//     subscribe no live terminal answers can be answered from it (PROTOCOL.md section 8,
//     the `terminal` ToolResultContent). An output over MaxRetainedOutput is not kept.
//
// # Layout
//
// Under the root folder (the host's <state-dir>/sessions):
//
//	<session>/session.json                          the SessionRecord
//	<session>/chats/<chat>/chat.json                the chat's URI
//	<session>/chats/<chat>/turns.jsonl              its local turns: a log, one line a turn
//	<session>/chats/<chat>/terminals/<key>.json     its retained terminals
//
// A chat's turns.json, where versions before the log kept its turns whole, is read
// while no log is there and moved into turns.jsonl by the chat's first write.
//
// Every <session>, <chat> and <key> folder or file name is an encoding of the name the
// caller gave: a lower-case slug of at most 40 letters, digits and dashes, "_", and 32 hex
// digits of the name's SHA-256. The name itself never reaches the file system, so no URI,
// chat or key (`ahp-session:/../../x`, `..`, `a/b`, `C:\x`, a NUL) can lead outside the
// root, and a name never contains a dot, so none is mistaken for a temporary file. The
// names are kept inside the files (session.json, chat.json, the terminal's key), which is
// how Sessions lists the sessions and their chats.
//
// # Atomicity
//
// Every file but a chat's log is written whole, atomically: the bytes go to a
// temporary file in the same folder (named
// ".<name>.<random>.tmp"), which is written, fsynced and closed, then renamed over the
// file, and the folder is fsynced so that the rename itself survives a crash. A reader
// therefore sees either the old file or the new one, never part of one; a crash leaves at
// worst a temporary file, which every read ignores and Open removes once it is a minute
// old. A folder the store creates is fsynced into its parent the same way. The one
// helper that does this, atomicfile.Write, is the whole host's: the users file and the
// shell integration scripts are written through it too.
//
// A chat's log (turns.jsonl) is appended to instead, so that keeping a chat's n-th
// turn writes that turn and not the n-1 before it: one line, written and fsynced. A
// line counts once it ends in a newline; a crash during an append leaves a torn last
// line, which every read drops, keeping every turn before it, and which the next write
// rewrites away. The log is rewritten whole, atomically, only to compact it: when it
// is first opened for writing and holds lines a later line replaced (a turn kept
// again) or a torn tail, and when such lines come to outweigh the rest. The store
// keeps an index of where each turn's line is, made by one read of the log (ids read
// off the lines' starts, nothing decoded) the first time it reads a page of the chat
// or appends to it, so a page of a long chat's history reads only that page's lines.
// turnlog.go says why JSON Lines and not an embedded database.
//
// The session's record is rewritten only when it changes: a turn moves its LastEnd
// on, and Sessions reads that date off the newest line of each chat's log instead.
//
// Writes that depend on each other are made in the order a crash cannot make wrong,
// each durable before the next begins: KeepTurn writes a turn's output, then the
// session's record (when it changed), then the turn that names the output, and
// RemoveTurns drops turns before their output. A crash leaves at worst output no turn names, never a turn
// naming output that was never written.
//
// Deleting a session or a chat is atomic too: its folder is first renamed to a hidden
// ".<name>.<random>.trash" beside it (and the parent fsynced), which is the moment it is
// gone, and only then removed; Open finishes any removal a crash interrupted.
//
// A file that does not parse - one truncated or written by something else - is refused
// with an error wrapping ErrCorrupt, never a panic and never a partial value, so the
// caller refuses what it named and logs it. In a log, that is a line that does not
// parse with a line after it that does: a torn tail is a crash's, and is dropped.
//
// # Concurrency
//
// A Store is safe for concurrent use by many goroutines. Writes to different files go on
// in parallel (different chats' appends, and their fsyncs, included); the appends to a
// chat's log are serialised with every other writer of that chat, and deleting or
// moving a chat or a session waits for the writes under it. Reads take no lock: an
// atomic rename leaves nothing partial to see, and a line being appended is a torn
// tail to a reader, which drops it. The store assumes it is the only process writing
// under its root.
//
// # Memory
//
// What a Store holds grows with the chats it has written to, not with their turns'
// bodies: for each such chat, the log's length and the length of each turn's newest
// line under a 64-bit hash of the turn's id (about 20 bytes a turn), so that an
// append knows where to write and when replaced lines call for a compaction without
// reading the file; and each session's record as last written. Turns reads a chat's
// whole log and returns it; nothing of it is kept.
//
// # Keeping nothing
//
// A Store opened with root "" (and a nil *Store) keeps nothing, as a host with no folders
// keeps nothing (seed 000): every write does nothing and returns nil once its arguments
// are checked, and every read finds nothing.
package persistence
