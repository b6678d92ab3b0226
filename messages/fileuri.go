package messages

import (
	"net/url"
	"strings"
)

// FileURI is the file:// URI of a path, percent-encoded as a URI path needs, as AHP
// carries folders (cwd, defaultDirectory). A Windows path (C:\dir) becomes
// file:///C:/dir, as a shell on Windows reports its folder that way.
func FileURI(path string) string {
	if len(path) >= 2 && path[1] == ':' && isLetter(path[0]) {
		path = "/" + strings.ReplaceAll(path, `\`, "/")
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return (&url.URL{Scheme: "file", Path: path}).String()
}

func isLetter(c byte) bool { return 'A' <= c&^0x20 && c&^0x20 <= 'Z' }
