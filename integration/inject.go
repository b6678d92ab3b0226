package integration

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The shell-integration scripts, written for termhost from the OSC 633 marks they
// print. scripts/bash.sh, scripts/fish.fish and scripts/pwsh.ps1 are each one
// shell's integration; scripts/zsh holds the four startup files of the ZDOTDIR
// folder zsh is given and the integration they load.
//
//go:embed scripts/bash.sh scripts/fish.fish scripts/pwsh.ps1 scripts/zsh
var scripts embed.FS

// Environment variables the scripts read, besides NonceEnv. Each script takes
// NonceEnv and its own out of the environment, so that programs started from the
// shell do not see them: bash and zsh before the person's startup files run, fish
// and pwsh (whose scripts run last) once they have.
const (
	// LoginEnv=1 tells the bash script to read the login files (/etc/profile, then
	// ~/.bash_profile, ~/.bash_login or ~/.profile) in place of ~/.bashrc: bash
	// ignores --init-file in a login shell, so it is started as a non-login one.
	LoginEnv = "TERMHOST_SHELL_LOGIN"
	// UserZdotdirEnv is the ZDOTDIR the person's zsh would have had; empty for none,
	// which is their home folder.
	UserZdotdirEnv = "TERMHOST_USER_ZDOTDIR"
	// ZshScriptEnv is the path of the zsh integration, which the .zshrc of the
	// ZDOTDIR folder loads after the person's own .zshrc.
	ZshScriptEnv = "TERMHOST_ZSH_SCRIPT"
	// PreventHistoryEnv=1, set by the caller, keeps the shell's commands out of the
	// person's history.
	PreventHistoryEnv = "VSCODE_PREVENT_SHELL_HISTORY"
	// ScratchEnv=3 tells the bash script that its descriptor 3 is the scratch file
	// Injection.Files gives it (see newScratch).
	ScratchEnv = "TERMHOST_BASH_SCRATCH"
)

// Injection is how to start a shell with integration: the arguments to start it
// with instead of its own, and the variables (KEY=VALUE) to mix into its
// environment, over everything else.
type Injection struct {
	Args []string
	Env  []string
	// Files go to the shell as its descriptors 3, 4, ... (exec.Cmd.ExtraFiles);
	// the caller closes its own copies once the shell has started, or when it is
	// not started after all (Close). Bash's is its scratch file.
	Files []*os.File
}

// Close closes the injection's files: the shell has its own copies, or is not to
// be started.
func (inj Injection) Close() {
	for _, f := range inj.Files {
		_ = f.Close()
	}
}

// InjectOptions configure Inject.
type InjectOptions struct {
	// Nonce is the terminal's nonce (NewNonce), handed to the script in NonceEnv; the
	// script writes it after the command line of every OSC 633 E.
	Nonce string
	// TempDir is where the scripts are written; os.TempDir() when empty.
	TempDir string
	// ZshFolderAsFound takes <TempDir>/<user>-termhost-zsh whatever it is, a link or
	// another user's folder included, as VS Code does. By default such a folder,
	// which another user can have made first, means zsh starts with no integration.
	ZshFolderAsFound bool
	// Environ is the environment the shell will start with, before Injection.Env is
	// mixed in; nil means os.Environ(). Only ZDOTDIR is read from it, so that zsh
	// still reads the person's startup files from the folder it names.
	Environ []string
	// Installed, when set, remembers the scripts written and checked, so that the
	// next shell's start does not check them again (see Installed). Nil checks them
	// at every Inject.
	Installed *Installed
}

// Shell kinds, by the basename of the shell's path.
const (
	shellBash = "bash"
	shellZsh  = "zsh"
	shellFish = "fish"
	shellPwsh = "pwsh"
)

// shellKind names the kind of shell at path, or "" for one with no script (sh,
// dash, ksh, cmd.exe, anything unknown). A login shell's leading '-' and a
// Windows ".exe" are ignored.
func shellKind(path string) string {
	base := path
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimPrefix(base, "-")
	if len(base) > 4 && strings.EqualFold(base[len(base)-4:], ".exe") {
		base = base[:len(base)-4]
	}
	switch base {
	case "bash":
		return shellBash
	case "zsh":
		return shellZsh
	case "fish":
		return shellFish
	case "pwsh", "pwsh-preview":
		return shellPwsh
	}
	return ""
}

// Inject answers how to start shellPath, an interactive shell given no command,
// under a pseudoterminal, with termhost's shell integration: the arguments to
// start it with in place of shellArgs, and the variables to mix into its
// environment. ok is false when the shell has no script (sh, dash, anything
// unknown), when shellArgs are not ones the integration can be combined with, or
// when the scripts cannot be put on disk safely; the shell then starts exactly as
// it would have. err says why, for the caller to log; it is nil for a shell that
// simply has no script. Inject never panics.
//
// The scripts are written once, under content-addressed names, into
// <TempDir>/<user>-termhost-integration, a folder of the current user's alone
// (0700, not a link, not writable by others); zsh gets <TempDir>/<user>-termhost-zsh
// for the four startup files it reads from ZDOTDIR. Files are replaced by rename,
// so concurrent hosts never see one half-written.
func Inject(shellPath string, shellArgs []string, opts InjectOptions) (inj Injection, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			inj, ok, err = Injection{}, false, fmt.Errorf("integration: inject %s: %v", shellPath, r)
		}
	}()
	kind := shellKind(shellPath)
	if kind == "" {
		return Injection{}, false, nil
	}
	if strings.ContainsFunc(opts.Nonce, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Injection{}, false, fmt.Errorf("integration: no shell integration for %s: the nonce holds a control character", shellPath)
	}
	switch kind {
	case shellBash:
		inj, err = injectBash(shellArgs, opts)
	case shellZsh:
		inj, err = injectZsh(shellArgs, opts)
	case shellFish:
		inj, err = injectFish(shellArgs, opts)
	case shellPwsh:
		inj, err = injectPwsh(shellArgs, opts)
	}
	if err != nil {
		return Injection{}, false, fmt.Errorf("integration: no shell integration for %s: %w", shellPath, err)
	}
	return inj, true, nil
}

// errArgs is the error for shell arguments the integration is not combined with.
func errArgs(args []string) error {
	return fmt.Errorf("unsupported shell arguments %q", args)
}

// shortFlags reports whether arg is a cluster of single-letter options, all in
// letters ("-il"), and whether it holds 'l'.
func shortFlags(arg, letters string) (ok, login bool) {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return false, false
	}
	for _, c := range arg[1:] {
		if !strings.ContainsRune(letters, c) {
			return false, false
		}
		if c == 'l' {
			login = true
		}
	}
	return true, login
}

// hasInteractive reports whether args, read by bashOrZshArgs, ask for an
// interactive shell already.
func hasInteractive(args []string) bool {
	for _, a := range args {
		if a == "--interactive" || (!strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'i')) {
			return true
		}
	}
	return false
}

// bashOrZshArgs reads the arguments of an interactive bash or zsh: -i, -l,
// --login (and, for zsh, --interactive), alone or as clusters such as -il.
func bashOrZshArgs(args []string, longInteractive bool) (login bool, err error) {
	for _, a := range args {
		switch {
		case a == "--login":
			login = true
		case a == "--interactive" && longInteractive:
		default:
			ok, l := shortFlags(a, "il")
			if !ok {
				return false, errArgs(args)
			}
			login = login || l
		}
	}
	return login, nil
}

func injectBash(args []string, opts InjectOptions) (Injection, error) {
	login, err := bashOrZshArgs(args, false)
	if err != nil {
		return Injection{}, err
	}
	path, err := installScript(opts, "bash.sh", "bash", ".sh")
	if err != nil {
		return Injection{}, err
	}
	loginValue := ""
	if login {
		loginValue = "1"
	}
	inj := Injection{
		Args: []string{"--init-file", path, "-i"},
		Env:  []string{NonceEnv + "=" + opts.Nonce, LoginEnv + "=" + loginValue},
	}
	// Without a scratch file (no memfd here) the script reads what builtins print
	// through $(...), which forks: slower, never wrong.
	if f := newScratch(opts.Nonce); f != nil {
		inj.Files = []*os.File{f}
		inj.Env = append(inj.Env, ScratchEnv+"=3")
	}
	return inj, nil
}

// zshFiles are the startup files of termhost's ZDOTDIR folder: the embedded file,
// and its name in the folder.
var zshFiles = [...]struct{ src, name string }{
	{"zshenv", ".zshenv"},
	{"zprofile", ".zprofile"},
	{"zshrc", ".zshrc"},
	{"zlogin", ".zlogin"},
}

func injectZsh(args []string, opts InjectOptions) (Injection, error) {
	if _, err := bashOrZshArgs(args, true); err != nil {
		return Injection{}, err
	}
	tmp, user := tempDir(opts), userName()
	dir := filepath.Join(tmp, user+"-termhost-zsh")
	var root *os.Root
	var err error
	if opts.ZshFolderAsFound {
		root, err = openFolderAsFound(dir)
	} else {
		root, err = openPrivateFolder(dir)
	}
	if err != nil {
		return Injection{}, err
	}
	defer root.Close()
	main, err := scripts.ReadFile("scripts/zsh/integration.zsh")
	if err != nil {
		return Injection{}, err
	}
	mainName := contentName("termhost", ".zsh", main)
	if _, err := writeAtomic(root, mainName, main); err != nil {
		return Injection{}, err
	}
	for _, f := range zshFiles {
		b, err := scripts.ReadFile("scripts/zsh/" + f.src)
		if err != nil {
			return Injection{}, err
		}
		if _, err := writeAtomic(root, f.name, b); err != nil {
			return Injection{}, err
		}
	}
	userZdotdir := lookupEnv(opts.Environ, "ZDOTDIR")
	if userZdotdir != "" && filepath.Clean(userZdotdir) == filepath.Clean(dir) {
		userZdotdir = "" // left over from a shell of ours: the person has none
	}
	outArgs := append([]string(nil), args...)
	if !hasInteractive(args) {
		outArgs = append(outArgs, "-i")
	}
	return Injection{
		Args: outArgs,
		Env: []string{
			NonceEnv + "=" + opts.Nonce,
			"ZDOTDIR=" + dir,
			UserZdotdirEnv + "=" + userZdotdir,
			ZshScriptEnv + "=" + filepath.Join(dir, mainName),
		},
	}, nil
}

func injectFish(args []string, opts InjectOptions) (Injection, error) {
	for _, a := range args {
		switch a {
		case "-l", "--login", "-i", "--interactive":
		default:
			if ok, _ := shortFlags(a, "il"); !ok {
				return Injection{}, errArgs(args)
			}
		}
	}
	path, err := installScript(opts, "fish.fish", "fish", ".fish")
	if err != nil {
		return Injection{}, err
	}
	outArgs := append(append([]string(nil), args...), "--init-command", "source "+fishQuote(path))
	return Injection{Args: outArgs, Env: []string{NonceEnv + "=" + opts.Nonce}}, nil
}

func injectPwsh(args []string, opts InjectOptions) (Injection, error) {
	var login, noProfile bool
	for _, a := range args {
		switch strings.ToLower(a) {
		case "-l", "-login":
			login = true
		case "-nol", "-nologo":
		case "-nop", "-noprofile":
			noProfile = true
		default:
			return Injection{}, errArgs(args)
		}
	}
	path, err := installScript(opts, "pwsh.ps1", "pwsh", ".ps1")
	if err != nil {
		return Injection{}, err
	}
	var outArgs []string
	if login {
		outArgs = append(outArgs, "-Login") // pwsh takes -Login only as its first argument
	}
	if noProfile {
		outArgs = append(outArgs, "-NoProfile")
	}
	outArgs = append(outArgs, "-NoLogo", "-NoExit", "-Command", ". "+pwshQuote(path))
	return Injection{Args: outArgs, Env: []string{NonceEnv + "=" + opts.Nonce}}, nil
}

// installScript writes the embedded scripts/<src> into the per-user integration
// folder under a content-addressed name and returns its path.
func installScript(opts InjectOptions, src, prefix, ext string) (string, error) {
	dir := filepath.Join(tempDir(opts), userName()+"-termhost-integration")
	now := time.Now()
	if path, ok := opts.Installed.lookup(dir, src, now); ok {
		return path, nil
	}
	b, err := scriptBytes(src)
	if err != nil {
		return "", err
	}
	root, err := openPrivateFolder(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	name := scriptNames[src]
	if name == "" {
		name = contentName(prefix, ext, b)
	}
	modified, err := writeAtomic(root, name, b)
	if err != nil {
		return "", err
	}
	// The file is in use now: its time says so, and what no host has used for a
	// while (an older build's script) goes: when the script is new here, and
	// then once an hour, often enough against a week of staleness, so that a
	// shell mostly starts without the folder read.
	if now.Sub(modified) > touchScript {
		_ = root.Chtimes(name, now, now)
		removeStale(root, prefix, ext, name, now)
	}
	opts.Installed.remember(root, dir, src, name, now)
	return filepath.Join(dir, name), nil
}

// scriptBytes is the script scripts/<src> as it is installed. bash's goes without
// its comment lines and blank lines: bash reads every byte of the file it is
// given at each start, a comment at some 200 instructions a byte, and the
// comments are half of the file (about 1.2 million instructions a shell). Only
// whole lines go, so a line inside a quoted string must not begin with '#'
// (bash.sh says so at its top).
func scriptBytes(src string) ([]byte, error) {
	b, err := scripts.ReadFile("scripts/" + src)
	if err != nil || src != "bash.sh" {
		return b, err
	}
	return withoutCommentLines(b), nil
}

// withoutCommentLines is a shell script without the lines that are blank or hold
// a comment alone (their first character other than a space or tab is '#').
func withoutCommentLines(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for line := range bytes.Lines(b) {
		t := bytes.TrimLeft(line, " \t")
		if len(t) == 0 || t[0] == '#' || t[0] == '\n' {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// touchScript is how long after a script's time was last set it is set again, and
// the folder swept for stale scripts.
const touchScript = time.Hour

// scriptNames is the installed name of each script of installScript (by its
// source), made once from the embedded bytes, which never change.
var scriptNames = func() map[string]string {
	names := map[string]string{}
	for _, sc := range []struct{ src, prefix, ext string }{
		{"bash.sh", "bash", ".sh"}, {"fish.fish", "fish", ".fish"}, {"pwsh.ps1", "pwsh", ".ps1"},
	} {
		if b, err := scriptBytes(sc.src); err == nil {
			names[sc.src] = contentName(sc.prefix, sc.ext, b)
		}
	}
	return names
}()

// staleScript is how long a script no host has installed may stay: a host of an
// older build that still runs writes its own again when it next starts a shell.
const staleScript = 7 * 24 * time.Hour

// removeStale removes prefix-*ext scripts other than keep that nothing has
// installed for staleScript, so scripts of older builds do not pile up.
func removeStale(root *os.Root, prefix, ext, keep string, now time.Time) {
	dir, err := root.Open(".")
	if err != nil {
		return
	}
	entries, err := dir.ReadDir(-1)
	_ = dir.Close()
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name == keep || !e.Type().IsRegular() || !strings.HasPrefix(name, prefix+"-") || !strings.HasSuffix(name, ext) {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > staleScript {
			_ = root.Remove(name)
		}
	}
}

// contentName is prefix-<hash of b>ext: a new script never takes the name of
// another one.
func contentName(prefix, ext string, b []byte) string {
	sum := sha256.Sum256(b)
	return prefix + "-" + hex.EncodeToString(sum[:8]) + ext
}

func tempDir(opts InjectOptions) string {
	if opts.TempDir != "" {
		return opts.TempDir
	}
	return os.TempDir()
}

// lookupEnv is the value of key in environ (os.Environ() when nil); the last
// setting wins, as it does when a process starts.
func lookupEnv(environ []string, key string) string {
	if environ == nil {
		environ = os.Environ()
	}
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// fishQuote quotes s as one fish word.
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s + "'"
}

// pwshQuote quotes s as a PowerShell single-quoted string, in which each of
// ' and the typographic single quotes ends the string unless it is doubled.
func pwshQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'', '\u2018', '\u2019', '\u201a', '\u201b':
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// scratchHeader is what bash's scratch file begins with: the script reads it back
// before it takes its descriptor 3 for the scratch file, ended by a NUL.
func scratchHeader(nonce string) string { return "termhost-scratch " + nonce + "\x00" }
