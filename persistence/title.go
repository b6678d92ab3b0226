package persistence

import (
	"strings"
	"unicode"
)

// maxTitle is how many characters (runes) of a command a seeded title keeps.
const maxTitle = 200

// TitleFromCommand is the title a session nobody named takes from its first command:
// the text's first line that is not blank, trimmed and cut at 200 characters, as VS
// Code's host seeds a title from a first message (seed 000, "Who opens one"). Text that
// is not UTF-8 has its bad bytes replaced with U+FFFD; a cut never splits a character.
func TitleFromCommand(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	// A line ends at \n, \r\n or a lone \r.
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	n := 0
	for i := range line {
		if n == maxTitle {
			line = line[:i]
			break
		}
		n++
	}
	return strings.TrimRightFunc(line, unicode.IsSpace)
}
