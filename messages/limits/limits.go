// Package limits owns what a client may name things with on this host: the bounds
// on a channel URI and a title, and which URI schemes are a terminal's. Every name a
// client gives is sent to every other client, so each is checked where it comes in.
package limits

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// What a client may name things with. Everything a client names is sent to every
// other client (a terminal's name in every root snapshot), so each is bounded: one
// client's 3 MiB name would otherwise be megabytes in every newcomer's handshake.
const (
	// MaxURIBytes bounds a channel URI a client creates or refers to.
	MaxURIBytes = 2048
	// MaxTitleBytes bounds a terminal's name and any title a client sets (terminal,
	// session or chat). Longer ones are refused, not clipped: the client learns at
	// once, and no one sees a name its author did not write.
	MaxTitleBytes = 1024
)

// Terminal URI schemes a client may create a terminal under: this host's own and the
// one VS Code gives the terminals it opens itself. Every other scheme is some other
// kind of channel (a session's, a chat's, the root's) and is not a terminal's to take.
var terminalSchemes = []string{"ahp-terminal:", "agenthost-terminal:"}

// IsTerminalURI reports whether uri is under a terminal scheme.
func IsTerminalURI(uri string) bool {
	for _, s := range terminalSchemes {
		if strings.HasPrefix(uri, s) {
			return true
		}
	}
	return false
}

// CheckURI says what is wrong with a channel URI, or nil: it has a scheme, is at most
// MaxURIBytes and holds no control character (C0, DEL, C1) and no bidirectional
// formatting character, any of which could make one URI print as another in a log
// or a client's list.
func CheckURI(uri string) error {
	switch {
	case uri == "":
		return fmt.Errorf("the URI is empty")
	case len(uri) > MaxURIBytes:
		return fmt.Errorf("the URI is %d bytes; at most %d", len(uri), MaxURIBytes)
	case !utf8.ValidString(uri):
		return fmt.Errorf("the URI is not UTF-8")
	}
	i := strings.IndexByte(uri, ':')
	if i <= 0 {
		return fmt.Errorf("%q has no scheme", uri)
	}
	for _, r := range uri {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("the URI holds the control character %U", r)
		}
		if isBidiControl(r) {
			return fmt.Errorf("the URI holds the bidirectional formatting character %U", r)
		}
	}
	return nil
}

// isBidiControl reports the characters that reorder text around them: the marks,
// embeddings, overrides and isolates of Unicode's bidirectional algorithm, and the
// line and paragraph separators.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// CheckTitle says what is wrong with a name or title a client sets, or nil.
func CheckTitle(what, title string) error {
	if len(title) > MaxTitleBytes {
		return fmt.Errorf("%s is %d bytes; at most %d", what, len(title), MaxTitleBytes)
	}
	return nil
}
