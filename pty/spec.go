package pty

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Default size of a terminal, seed "What a client sees": 80 columns, 24 rows.
const (
	DefaultCols = 80
	DefaultRows = 24
)

// Spec says what to start. Its zero value starts DefaultShell on pipes, 80x24, in
// the host's own working directory, with the host's environment.
type Spec struct {
	// Shell is the shell's program path; "" means DefaultShell(). A name without a
	// slash is looked up in the host's PATH.
	Shell string

	// Command, when non-empty, is run with `Shell -c <line>` and the process exits
	// when it is done (seed "One command, or a shell to sit in"). How the line is
	// made depends on Args.
	Command string

	// Args, when non-nil and Command is set, makes Command a program: Command and
	// Args are quoted word by word (QuoteArgv) into the -c line, so the shell runs
	// exactly that argv. When nil, Command is already shell syntax and is passed as
	// it is; quoting it would ask for a program named after the whole line.
	Args []string

	// ShellArgs are extra arguments for a shell started to sit in (no Command),
	// such as a shell integration's injection. Ignored with Command.
	ShellArgs []string

	// Dir is the working directory, already a path (see DirFromURI); "" means the
	// host's own. A Dir that is missing or not a directory makes Start fail with an
	// error wrapping ErrNoDir.
	Dir string

	// Env is the caller's variables, KEY=VALUE, applied over the host's
	// environment (see BuildEnv).
	Env []string

	// ExtraFiles go to the process as its descriptors 3, 4, ... (a shell
	// integration's scratch file). Start closes them once the process has its own
	// copies, or has failed to start; whoever does not call Start closes them.
	ExtraFiles []*os.File

	// Cols and Rows are the terminal's size in character cells; a value <= 0
	// means DefaultCols or DefaultRows. Under a pseudoterminal it is the window
	// size; on pipes it only reaches the child as COLUMNS and LINES.
	Cols, Rows int

	// UsePty starts the process under a pseudoterminal; false means pipes.
	UsePty bool

	// PreventShellHistory sets VSCODE_PREVENT_SHELL_HISTORY=1, which VS Code's
	// shell integration scripts read to keep what runs out of the person's history.
	PreventShellHistory bool

	// NonInteractive tells the child nobody is there to answer: LC_ALL=C.UTF-8,
	// empty PAGER, GIT_PAGER and GH_PAGER, GIT_TERMINAL_PROMPT=0,
	// DEBIAN_FRONTEND=noninteractive, and for zsh an empty PROMPT_EOL_MARK (the %
	// it prints after output with no final newline).
	NonInteractive bool
}

func (s Spec) shell() string {
	if s.Shell != "" {
		return s.Shell
	}
	return DefaultShell()
}

func (s Spec) size() (cols, rows int) {
	cols, rows = s.Cols, s.Rows
	if cols <= 0 {
		cols = DefaultCols
	}
	if rows <= 0 {
		rows = DefaultRows
	}
	return cols, rows
}

// argv is what the shell is started with, program path first.
func (s Spec) argv(shell string) []string {
	if s.Command == "" {
		return append([]string{shell}, s.ShellArgs...)
	}
	line := s.Command
	if s.Args != nil {
		// The shell hands its process over to the program: the program's exit, a
		// signal's included, is the process's, whatever the shell (dash, for one,
		// would otherwise wait and report a signal as exit 128+n).
		line = "exec " + QuoteArgv(append([]string{s.Command}, s.Args...))
	}
	return []string{shell, "-c", line}
}

// fallbackShell is the shell of last resort, seed "Who opens one": $SHELL, then
// /bin/sh.
const fallbackShell = "/bin/sh"

// DefaultShell is the daemon's own shell: $SHELL when it names an executable file,
// else /bin/sh.
func DefaultShell() string {
	if sh := strings.TrimSpace(os.Getenv("SHELL")); sh != "" {
		if path, err := exec.LookPath(sh); err == nil {
			return path
		}
	}
	return fallbackShell
}

// BuildEnv is the environment a process starts with (seed "One command, or a shell
// to sit in"): host, then spec.Env over it, then PWD when spec.Dir is set, then the
// terminal's own TERM, COLUMNS and LINES (a command may not disagree with those), then the variables of
// PreventShellHistory and NonInteractive last. A later value of a key replaces an
// earlier one, which moves the key to the later position; the result holds every
// key once. Entries without a '=' or with an empty key are dropped.
//
// TERM under a pseudoterminal is the host's own, or xterm-256color when the host
// has none or says dumb; on pipes it is dumb, since there is no terminal to drive.
func BuildEnv(host []string, spec Spec) []string {
	var e envList
	for _, kv := range host {
		e.setPair(kv)
	}
	for _, kv := range spec.Env {
		e.setPair(kv)
	}
	if spec.Dir != "" {
		// A shell trusts PWD when it names the directory it starts in; the
		// host's own PWD names the host's directory, not this one.
		e.set("PWD", spec.Dir)
	}

	term := "dumb"
	if spec.UsePty {
		term = "xterm-256color"
		if t, ok := lookupEnv(host, "TERM"); ok && t != "" && t != "dumb" {
			term = t
		}
	}
	cols, rows := spec.size()
	e.set("TERM", term)
	e.set("COLUMNS", strconv.Itoa(cols))
	e.set("LINES", strconv.Itoa(rows))

	if spec.PreventShellHistory {
		e.set("VSCODE_PREVENT_SHELL_HISTORY", "1")
	}
	if spec.NonInteractive {
		e.set("LC_ALL", "C.UTF-8")
		e.set("PAGER", "")
		e.set("GIT_PAGER", "")
		e.set("GH_PAGER", "")
		e.set("GIT_TERMINAL_PROMPT", "0")
		e.set("DEBIAN_FRONTEND", "noninteractive")
		if isZsh(spec.shell()) {
			e.set("PROMPT_EOL_MARK", "")
		}
	}
	return e.list()
}

func isZsh(shell string) bool {
	return filepath.Base(shell) == "zsh"
}

// lookupEnv finds key in env the way the child will: the last entry wins.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// envList is an ordered set of KEY=VALUE entries in which setting a key again
// drops its earlier entry.
type envList struct {
	entries []string // "" marks an entry replaced by a later one
	index   map[string]int
}

func (e *envList) setPair(kv string) {
	k, _, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return
	}
	e.put(k, kv)
}

func (e *envList) set(key, value string) {
	e.put(key, key+"="+value)
}

func (e *envList) put(key, kv string) {
	if e.index == nil {
		e.index = make(map[string]int)
	}
	if i, ok := e.index[key]; ok {
		e.entries[i] = ""
	}
	e.index[key] = len(e.entries)
	e.entries = append(e.entries, kv)
}

func (e *envList) list() []string {
	out := make([]string, 0, len(e.index))
	for _, kv := range e.entries {
		if kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

// QuoteArgv quotes argv word by word for a POSIX shell, so that the line runs
// exactly that program with exactly those arguments: every word goes in single
// quotes, inside which nothing is special, and a single quote in a word closes
// the quotes, is escaped with a backslash and opens them again. Every
// word is quoted, the first included, because a bare first word could be read as a
// keyword (time, if, !), an alias or an assignment (A=b) instead of a program.
func QuoteArgv(argv []string) string {
	var b strings.Builder
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

// DirFromURI turns a working directory a client sent into a path (seed "Where it
// runs"). A file: URI is percent-decoded and its host part ignored, so
// file:///tmp/a%20b is "/tmp/a b" and file://host/tmp is "/tmp". A file URI has no
// use for a query or a fragment, so a raw '#' or '?' is kept as part of the name.
// Anything else must be an absolute path and is returned as it is. "" is returned
// as "", which Spec.Dir reads as the host's own directory.
func DirFromURI(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "file:") {
		return pathFromFileURI(s)
	}
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("directory %q: contains a NUL byte", s)
	}
	if !filepath.IsAbs(s) {
		return "", fmt.Errorf("directory %q is neither a file: URI nor an absolute path", s)
	}
	return s, nil
}

func pathFromFileURI(uri string) (string, error) {
	rest := uri[len("file:"):]
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		// The authority runs to the next '/'; it names a host, and a shell runs
		// on this one whatever it says.
		slash := strings.IndexByte(after, '/')
		if slash < 0 {
			return "", fmt.Errorf("directory URI %q names no path", uri)
		}
		rest = after[slash:]
	}
	path, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("directory URI %q: %w", uri, err)
	}
	if strings.ContainsRune(path, 0) {
		return "", fmt.Errorf("directory URI %q: contains a NUL byte", uri)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("directory URI %q does not name an absolute path", uri)
	}
	return path, nil
}

// ErrNoDir is wrapped by Start's error when Spec.Dir is missing or not a directory.
var ErrNoDir = errors.New("no such directory")

// ErrNoShell is wrapped by Start's error when the shell cannot be executed: not
// found, not a file, or not executable. The underlying errno stays in the chain,
// so errors.Is(err, fs.ErrPermission) tells the last case apart.
var ErrNoShell = errors.New("shell cannot be executed")
