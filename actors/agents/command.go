package agents

import (
	"errors"
	"fmt"
	"strings"
)

// ParseCommand reads a --agent flag value NAME='command args' (or NAME=command
// args): the agent's name and the argv it runs, the command line split into words
// with POSIX-shell-like quoting ('…' keeps everything, "…" keeps everything but a
// backslash before \ " $ ` or a newline, a backslash outside quotes keeps the next
// character). No expansion of any kind is done: no variables, globs or ~.
//
// When the whole command is one quoted word (claude='npx acp --flag', as a config
// file or a doubly quoted shell line hands it over), that word is the command line
// and is split in turn; a program whose path has a space is quoted inside it:
// NAME='"/opt/my agent/run" --acp'.
func ParseCommand(flag string) (name string, argv []string, err error) {
	name, line, found := strings.Cut(flag, "=")
	if !found {
		return "", nil, fmt.Errorf("agent %q: want NAME=COMMAND, as in claude='npx @zed-industries/claude-code-acp'", flag)
	}
	if name == "" {
		return "", nil, fmt.Errorf("agent %q: the name before '=' is empty", flag)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "", nil, fmt.Errorf("agent %q: a name has only letters, digits, '-', '_' and '.'; %q has %q", flag, name, r)
		}
	}
	words, err := splitWords(line)
	if err != nil {
		return "", nil, fmt.Errorf("agent %s: %w", name, err)
	}
	if t := strings.TrimSpace(line); len(words) == 1 && len(t) >= 2 && (t[0] == '\'' || t[0] == '"') && t[len(t)-1] == t[0] {
		if words, err = splitWords(words[0]); err != nil {
			return "", nil, fmt.Errorf("agent %s: %w", name, err)
		}
	}
	if len(words) == 0 || words[0] == "" {
		return "", nil, fmt.Errorf("agent %s: no command after '='", name)
	}
	return name, words, nil
}

var errTrailingBackslash = errors.New("the command ends with a backslash that escapes nothing")

// splitWords splits a command line into words as a POSIX shell does, without any
// expansion.
func splitWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\\':
			if i+1 == len(line) {
				return nil, errTrailingBackslash
			}
			i++
			if line[i] != '\n' { // backslash-newline joins lines
				word.WriteByte(line[i])
			}
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("a single quote at byte %d is never closed", i+1)
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) && strings.IndexByte("\\\"$`\n", line[j+1]) >= 0 {
					j++
					if line[j] != '\n' {
						word.WriteByte(line[j])
					}
					continue
				}
				word.WriteByte(line[j])
			}
			if j == len(line) {
				return nil, fmt.Errorf("a double quote at byte %d is never closed", i+1)
			}
			i = j
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
