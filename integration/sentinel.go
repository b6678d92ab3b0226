package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A shell that prints no marks (integration absent, or a shell the scripts do not
// know) still says when a command the host typed has ended: the host types a
// second line after it that echoes a sentinel carrying the exit code,
// <<<COPILOT_SENTINEL_<id>_EXIT_<code>>>>, with an id of its own per command so
// that a program printing an old sentinel cannot end the next command. The text is
// the seed's (000, the ! command), VS Code's runner's own, because a client reads it
// in the terminal too: one that knows VS Code's sentinel knows this host's.

// SentinelPrefix starts every sentinel line.
const SentinelPrefix = "COPILOT_SENTINEL_"

var sentinelLine = regexp.MustCompile(`<<<` + SentinelPrefix + `([0-9a-z]+)_EXIT_(\d+)>>>`)

// SentinelEcho is the line to type after a command so that the shell echoes the
// sentinel id with the command's exit code.
func SentinelEcho(id string) string {
	return fmt.Sprintf("echo \"<<<%s%s_EXIT_$?>>>\"", SentinelPrefix, id)
}

// SentinelCode finds the sentinel with id in out and returns the exit code it carries.
func SentinelCode(out, id string) (int, bool) {
	if !strings.Contains(out, SentinelPrefix+id) {
		return 0, false
	}
	for _, m := range sentinelLine.FindAllStringSubmatch(out, -1) {
		if m[1] == id {
			code, err := strconv.Atoi(m[2])
			return code, err == nil
		}
	}
	return 0, false
}

// sentinelMax bounds a sentinel line's length: the prefix, an id and an exit code.
const sentinelMax = 3 + len(SentinelPrefix) + 32 + len("_EXIT_") + 10 + 3

// SentinelCodeSince is SentinelCode over what out gained from offset from on (and
// the few characters before it a sentinel split across two reads may start in), so
// that a command printing megabytes is not searched again from its start on every read.
func SentinelCodeSince(out string, from int, id string) (int, bool) {
	return SentinelCode(out[max(0, from-sentinelMax):], id)
}

// WithoutSentinel drops the lines of text that carry the sentinel id: the typed echo
// line as the terminal echoed it, and the sentinel the shell printed.
func WithoutSentinel(text, id string) string {
	if !strings.Contains(text, SentinelPrefix+id) {
		return text
	}
	lines := strings.Split(text, "\n")
	keep := lines[:0]
	for _, line := range lines {
		if !strings.Contains(line, SentinelPrefix+id) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// WithoutSentinels drops every line of text that carries one of this host's
// sentinels, whatever its id: the typed echo lines and the sentinels printed, as a
// read of a shell's log shows them between commands.
func WithoutSentinels(text string) string {
	mark := "<<<" + SentinelPrefix
	if !strings.Contains(text, mark) {
		return text
	}
	lines := strings.Split(text, "\n")
	keep := lines[:0]
	for _, line := range lines {
		if !strings.Contains(line, mark) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
