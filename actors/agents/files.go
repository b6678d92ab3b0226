package agents

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// The agent's files (ACP fs/read_text_file, fs/write_text_file): only below the
// session's working directories. A path is cleaned, the symlinks of the part that
// exists are resolved, and the file opened is the resolved one, so a link inside a
// folder that points outside it is refused like the path it points to.

// resolveRoots turns the session's working directories into the folders files may
// be read and written in: absolute, cleaned, symlinks resolved where they exist.
func resolveRoots(dirs []string) []string {
	roots := make([]string, 0, len(dirs))
	for _, d := range dirs {
		root, _ := resolvePath(filepath.Clean(d))
		roots = append(roots, root)
	}
	return roots
}

// resolvePath resolves the symlinks of the longest part of the clean absolute path
// p that exists, and joins the rest to it. ok is false when a part is there but
// cannot be resolved (a symlink to nothing, which a write would follow wherever it
// points), and p is returned as it is.
func resolvePath(p string) (resolved string, ok bool) {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), true
		}
		if _, err := os.Lstat(dir); err == nil {
			return p, false
		}
		if dir == filepath.Dir(dir) {
			return p, true
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// allowedPath is the file the agent names, resolved, when it is below one of the
// session's folders; else an error naming the path and the folders.
func (c *client) allowedPath(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", requestError("%s is not an absolute path: the agent names files by absolute path", path)
	}
	resolved, ok := resolvePath(filepath.Clean(path))
	if !ok {
		return "", requestError("%s is refused: it is, or is below, a link that cannot be followed", path)
	}
	for _, root := range c.roots {
		if within(resolved, root) {
			return resolved, nil
		}
	}
	if len(c.roots) == 0 {
		return "", requestError("%s is refused: this session has no working folder, and the agent reads and writes files only in one", path)
	}
	return "", requestError("%s is outside this session's folders (%s): the agent reads and writes files only there", path, strings.Join(c.roots, ", "))
}

// within says whether path is root or below it (both clean).
func within(path, root string) bool {
	if path == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(path, root)
}

// ReadTextFile reads a file below the session's folders, from line (1-based) for
// limit lines when the agent asks for part of it.
func (c *client) ReadTextFile(_ context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	path, err := c.allowedPath(p.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return acp.ReadTextFileResponse{}, fileError("read", p.Path, err)
	}
	text := string(data)
	if p.Line != nil || p.Limit != nil {
		text = lines(text, p.Line, p.Limit)
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// lines is the part of text from line (1-based; nil or less than 1 is the first)
// for limit lines (nil: to the end), each with its line end.
func lines(text string, line, limit *int) string {
	skip := 0
	if line != nil && *line > 1 {
		skip = *line - 1
	}
	var b strings.Builder
	n := 0
	for l := range strings.Lines(text) {
		if skip > 0 {
			skip--
			continue
		}
		if limit != nil && n >= *limit {
			break
		}
		b.WriteString(l)
		n++
	}
	return b.String()
}

// WriteTextFile writes a file below the session's folders, making the folders it
// is in when they are missing. The write counts in the session's writes.
func (c *client) WriteTextFile(_ context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	path, err := c.allowedPath(p.Path)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return acp.WriteTextFileResponse{}, requestError("the session is closing: %s was not written", p.Path)
	}
	c.writeBeganLocked()
	c.mu.Unlock()
	defer c.writeEnded()
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return acp.WriteTextFileResponse{}, fileError("write", p.Path, err)
	}
	if err := os.WriteFile(path, []byte(p.Content), 0o666); err != nil {
		return acp.WriteTextFileResponse{}, fileError("write", p.Path, err)
	}
	return acp.WriteTextFileResponse{}, nil
}

// fileError says what went wrong with a file, in words.
func fileError(verb, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return requestError("cannot %s %s: no such file", verb, path)
	case errors.Is(err, fs.ErrPermission):
		return requestError("cannot %s %s: permission denied", verb, path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return requestError("cannot %s %s: %v", verb, path, err)
}
