package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestShellKind(t *testing.T) {
	cases := map[string]string{
		"/bin/bash":                 shellBash,
		"-bash":                     shellBash,
		"bash":                      shellBash,
		"/usr/local/bin/zsh":        shellZsh,
		"-zsh":                      shellZsh,
		"/usr/bin/fish":             shellFish,
		"/opt/microsoft/pwsh":       shellPwsh,
		"pwsh-preview":              shellPwsh,
		`C:\Program Files\pwsh.EXE`: shellPwsh,
		"/bin/sh":                   "",
		"/bin/dash":                 "",
		"/bin/ksh":                  "",
		`C:\Windows\cmd.exe`:        "",
		"powershell.exe":            "",
		"":                          "",
		"/usr/bin/bash5":            "",
		"/home/bash/sh":             "",
	}
	for path, want := range cases {
		if got := shellKind(path); got != want {
			t.Errorf("shellKind(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestInjectNoScript(t *testing.T) {
	for _, sh := range []string{"/bin/sh", "/bin/dash", "/usr/bin/ksh", "cmd.exe", ""} {
		inj, ok, err := Inject(sh, nil, InjectOptions{Nonce: "n", TempDir: t.TempDir()})
		if ok || err != nil || inj.Args != nil || inj.Env != nil {
			t.Errorf("Inject(%q) = %+v, %v, %v; want nothing", sh, inj, ok, err)
		}
	}
}

// A shell given arguments the integration does not combine with starts as it was.
func TestInjectUnsupportedArgs(t *testing.T) {
	cases := []struct {
		shell string
		args  []string
	}{
		{"/bin/bash", []string{"-c", "ls"}},
		{"/bin/bash", []string{"--norc"}},
		{"/bin/bash", []string{"script.sh"}},
		{"/bin/bash", []string{"-ix"}},
		{"/bin/zsh", []string{"-f"}},
		{"/usr/bin/fish", []string{"-c", "ls"}},
		{"/usr/bin/fish", []string{"--private"}},
		{"pwsh", []string{"-Command", "ls"}},
	}
	for _, c := range cases {
		_, ok, err := Inject(c.shell, c.args, InjectOptions{Nonce: "n", TempDir: t.TempDir()})
		if ok || err == nil {
			t.Errorf("Inject(%s, %q) = ok %v, err %v; want refused with a reason", c.shell, c.args, ok, err)
		}
	}
}

func envValue(t *testing.T, env []string, key string) string {
	t.Helper()
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	t.Fatalf("%s not in %q", key, env)
	return ""
}

func TestInjectBash(t *testing.T) {
	tmp := t.TempDir()
	for _, args := range [][]string{nil, {"-i"}, {"-l"}, {"--login"}, {"-il"}, {"-li", "-i"}} {
		inj, ok, err := Inject("/usr/bin/bash", args, InjectOptions{Nonce: "abc", TempDir: tmp})
		if !ok || err != nil {
			t.Fatalf("Inject(bash, %q) = %v, %v", args, ok, err)
		}
		if len(inj.Args) != 3 || inj.Args[0] != "--init-file" || inj.Args[2] != "-i" {
			t.Fatalf("args = %q", inj.Args)
		}
		want, _ := scriptBytes("bash.sh")
		got, err := os.ReadFile(inj.Args[1])
		if err != nil || string(got) != string(want) {
			t.Fatalf("the script at %s is not the bash script (%v)", inj.Args[1], err)
		}
		if filepath.Dir(inj.Args[1]) != filepath.Join(tmp, userName()+"-termhost-integration") {
			t.Errorf("script at %s", inj.Args[1])
		}
		if v := envValue(t, inj.Env, NonceEnv); v != "abc" {
			t.Errorf("%s = %q", NonceEnv, v)
		}
		login := slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "l") })
		if v := envValue(t, inj.Env, LoginEnv); (v == "1") != login {
			t.Errorf("args %q: %s = %q", args, LoginEnv, v)
		}
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Lstat(filepath.Join(tmp, userName()+"-termhost-integration"))
		if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("integration folder: %v, %v", fi.Mode(), err)
		}
	}
}

func TestInjectFishAndPwsh(t *testing.T) {
	tmp := t.TempDir()
	inj, ok, err := Inject("/usr/bin/fish", []string{"-l"}, InjectOptions{Nonce: "abc", TempDir: tmp})
	if !ok || err != nil {
		t.Fatalf("fish: %v, %v", ok, err)
	}
	if len(inj.Args) != 3 || inj.Args[0] != "-l" || inj.Args[1] != "--init-command" ||
		!strings.HasPrefix(inj.Args[2], "source '"+tmp) || !strings.HasSuffix(inj.Args[2], ".fish'") {
		t.Errorf("fish args = %q", inj.Args)
	}
	if envValue(t, inj.Env, NonceEnv) != "abc" {
		t.Errorf("fish env = %q", inj.Env)
	}

	inj, ok, err = Inject(`C:\pwsh\pwsh.exe`, []string{"-NoLogo", "-Login"}, InjectOptions{Nonce: "abc", TempDir: tmp})
	if !ok || err != nil {
		t.Fatalf("pwsh: %v, %v", ok, err)
	}
	if len(inj.Args) != 5 || inj.Args[0] != "-Login" || inj.Args[1] != "-NoLogo" || inj.Args[2] != "-NoExit" ||
		inj.Args[3] != "-Command" || !strings.HasPrefix(inj.Args[4], ". '"+tmp) || !strings.HasSuffix(inj.Args[4], ".ps1'") {
		t.Errorf("pwsh args = %q", inj.Args)
	}
}

func TestQuoting(t *testing.T) {
	if got := fishQuote(`/t/it's \x`); got != `'/t/it\'s \\x'` {
		t.Errorf("fishQuote = %s", got)
	}
	if got := pwshQuote("/t/it's ‘x’"); got != "'/t/it''s ‘‘x’’'" {
		t.Errorf("pwshQuote = %s", got)
	}
}

func TestInjectZsh(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, userName()+"-termhost-zsh")
	inj, ok, err := Inject("/bin/zsh", []string{"-l"}, InjectOptions{Nonce: "abc", TempDir: tmp, Environ: []string{"ZDOTDIR=/home/me/.config/zsh"}})
	if !ok || err != nil {
		t.Fatalf("Inject(zsh) = %v, %v", ok, err)
	}
	if !slices.Equal(inj.Args, []string{"-l", "-i"}) {
		t.Errorf("args = %q", inj.Args)
	}
	if v := envValue(t, inj.Env, "ZDOTDIR"); v != dir {
		t.Errorf("ZDOTDIR = %q, want %q", v, dir)
	}
	if v := envValue(t, inj.Env, UserZdotdirEnv); v != "/home/me/.config/zsh" {
		t.Errorf("%s = %q", UserZdotdirEnv, v)
	}
	main := envValue(t, inj.Env, ZshScriptEnv)
	if filepath.Dir(main) != dir {
		t.Errorf("%s = %q", ZshScriptEnv, main)
	}
	for _, f := range zshFiles {
		want, _ := scripts.ReadFile("scripts/zsh/" + f.src)
		if got, err := os.ReadFile(filepath.Join(dir, f.name)); err != nil || string(got) != string(want) {
			t.Errorf("%s: %v", f.name, err)
		}
	}
	if got, err := os.ReadFile(main); err != nil || !strings.Contains(string(got), "633;E") {
		t.Errorf("main script: %v", err)
	}

	// No ZDOTDIR of the person's (or one left over from a shell of ours): empty.
	for _, environ := range [][]string{{"HOME=/home/me"}, {"ZDOTDIR=" + dir}} {
		inj, ok, err = Inject("zsh", []string{"-i"}, InjectOptions{Nonce: "abc", TempDir: tmp, Environ: environ})
		if !ok || err != nil || envValue(t, inj.Env, UserZdotdirEnv) != "" || !slices.Equal(inj.Args, []string{"-i"}) {
			t.Errorf("environ %q: %+v, %v, %v", environ, inj, ok, err)
		}
	}
}

// A folder another user could have made first is refused, unless the options say
// to take the zsh one as found.
func TestInjectRefusesLinkedFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no symbolic links to test with")
	}
	tmp, elsewhere := t.TempDir(), t.TempDir()
	zshDir := filepath.Join(tmp, userName()+"-termhost-zsh")
	intDir := filepath.Join(tmp, userName()+"-termhost-integration")
	if err := os.Symlink(elsewhere, zshDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, intDir); err != nil {
		t.Fatal(err)
	}
	for _, sh := range []string{"zsh", "bash", "fish", "pwsh"} {
		if inj, ok, err := Inject(sh, nil, InjectOptions{Nonce: "n", TempDir: tmp}); ok || err == nil || inj.Env != nil {
			t.Errorf("%s with a linked folder: %+v, %v, %v", sh, inj, ok, err)
		}
	}
	entries, _ := os.ReadDir(elsewhere)
	if len(entries) != 0 {
		t.Errorf("wrote %d files through the link", len(entries))
	}

	inj, ok, err := Inject("zsh", nil, InjectOptions{Nonce: "n", TempDir: tmp, ZshFolderAsFound: true})
	if !ok || err != nil {
		t.Fatalf("zsh, folder as found: %v, %v", ok, err)
	}
	if v := envValue(t, inj.Env, "ZDOTDIR"); v != zshDir {
		t.Errorf("ZDOTDIR = %q", v)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, ".zshrc")); err != nil {
		t.Errorf("as found, the files go where the link points: %v", err)
	}
}

func TestInjectRefusesOpenFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes say nothing of other users")
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, userName()+"-termhost-integration")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: tmp}); ok || err == nil {
		t.Errorf("a folder writable by all: ok %v, err %v", ok, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: tmp}); !ok || err != nil {
		t.Errorf("a folder of ours that others only read: ok %v, err %v", ok, err)
	}

	// A parent anybody can move things out of.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: open}); ok || err == nil {
		t.Errorf("a parent writable by all, not sticky: ok %v, err %v", ok, err)
	}
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: open}); !ok || err != nil {
		t.Errorf("a sticky parent writable by all, as /tmp is: ok %v, err %v", ok, err)
	}

	// A plain file where the folder should be.
	tmp = t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, userName()+"-termhost-zsh"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("zsh", nil, InjectOptions{Nonce: "n", TempDir: tmp}); ok || err == nil {
		t.Errorf("a file in the folder's place: ok %v, err %v", ok, err)
	}
}

func TestInjectRefusesAnotherUsersFolder(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		t.Skip("needs root, to give a folder to another user")
	}
	tmp := t.TempDir()
	for _, name := range []string{"-termhost-zsh", "-termhost-integration"} {
		dir := filepath.Join(tmp, userName()+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 54321, 54321); err != nil {
			t.Fatal(err)
		}
	}
	for _, sh := range []string{"zsh", "bash"} {
		if _, ok, err := Inject(sh, nil, InjectOptions{Nonce: "n", TempDir: tmp}); ok || err == nil {
			t.Errorf("%s, another user's folder: ok %v, err %v", sh, ok, err)
		}
	}
	if _, ok, err := Inject("zsh", nil, InjectOptions{Nonce: "n", TempDir: tmp, ZshFolderAsFound: true}); !ok || err != nil {
		t.Errorf("zsh, another user's folder as found: ok %v, err %v", ok, err)
	}
}

// A script file that is not what it should be is written again.
func TestInjectRewritesChangedScript(t *testing.T) {
	tmp := t.TempDir()
	inj, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: tmp})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	path := inj.Args[1]
	if err := os.WriteFile(path, []byte("echo tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: tmp}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	want, _ := scriptBytes("bash.sh")
	if got, _ := os.ReadFile(path); string(got) != string(want) {
		t.Errorf("the changed script was kept: %q", got)
	}
}

// Hosts starting shells at the same time each get whole files, and leave no
// temporary ones behind.
func TestInjectConcurrent(t *testing.T) {
	tmp := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			sh := []string{"bash", "zsh", "fish", "pwsh"}[i%4]
			if _, ok, err := Inject(sh, nil, InjectOptions{Nonce: "n", TempDir: tmp}); !ok {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, name := range []string{"-termhost-zsh", "-termhost-integration"} {
		entries, err := os.ReadDir(filepath.Join(tmp, userName()+name))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	}
}

func TestUserName(t *testing.T) {
	n := userName()
	if n == "" || strings.ContainsAny(n, `/\ `) || strings.Trim(n, ".") == "" {
		t.Errorf("userName() = %q", n)
	}
}

// The embedded scripts read the nonce from NonceEnv and the variables Inject sets.
func TestScriptsReadTheirVariables(t *testing.T) {
	read := func(name string) string {
		b, err := scripts.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, name := range []string{"scripts/bash.sh", "scripts/zsh/zshenv", "scripts/zsh/integration.zsh", "scripts/fish.fish", "scripts/pwsh.ps1"} {
		if !strings.Contains(read(name), NonceEnv) {
			t.Errorf("%s does not read %s", name, NonceEnv)
		}
	}
	for _, name := range []string{"scripts/bash.sh", "scripts/zsh/integration.zsh", "scripts/fish.fish", "scripts/pwsh.ps1"} {
		if !strings.Contains(read(name), PreventHistoryEnv) {
			t.Errorf("%s does not read %s", name, PreventHistoryEnv)
		}
	}
	if !strings.Contains(read("scripts/bash.sh"), LoginEnv) {
		t.Errorf("bash.sh does not read %s", LoginEnv)
	}
	for _, v := range []string{UserZdotdirEnv, ZshScriptEnv} {
		if !strings.Contains(read("scripts/zsh/zshenv"), v) {
			t.Errorf("zshenv does not read %s", v)
		}
	}
}

// A nonce that would end the mark it is written into is refused.
func TestInjectRefusesControlInNonce(t *testing.T) {
	if _, ok, err := Inject("bash", nil, InjectOptions{Nonce: "ab\x07cd", TempDir: t.TempDir()}); ok || err == nil {
		t.Errorf("ok %v, err %v", ok, err)
	}
}

// Scripts of older builds that no host has installed for a week go when a script is
// installed; a recent one (another build still running) and other files stay.
func TestInstallRemovesStaleScripts(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, userName()+"-termhost-integration")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	files := map[string]time.Time{
		"bash-0123456789abcdef.sh":   old,        // an old build's bash script: goes
		"bash-fedcba9876543210.sh":   time.Now(), // a build running now: stays
		"fish-0123456789abcdef.fish": old,        // another shell's: not bash's to remove
		"notes.txt":                  old,        // not a script at all
	}
	for name, at := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	inj, ok, err := Inject("bash", nil, InjectOptions{Nonce: "n", TempDir: tmp})
	if err != nil || !ok {
		t.Fatalf("Inject: ok %v, err %v", ok, err)
	}
	want := map[string]bool{"bash-fedcba9876543210.sh": true, "fish-0123456789abcdef.fish": true, "notes.txt": true, filepath.Base(inj.Args[1]): true}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		if !want[e.Name()] {
			t.Errorf("%s is still there", e.Name())
		}
	}
	if len(got) != len(want) {
		t.Errorf("the folder holds %v, want %d files", got, len(want))
	}
}

// bash's script is installed without its comment and blank lines, and nothing
// else: a '#' after code, or inside a word, stays.
func TestWithoutCommentLines(t *testing.T) {
	in := "# head\n\nf() {\n\t# why\n\techo a # b\n\t  \n\techo '#x'\n}\n#"
	want := "f() {\n\techo a # b\n\techo '#x'\n}\n"
	if got := string(withoutCommentLines([]byte(in))); got != want {
		t.Errorf("withoutCommentLines = %q, want %q", got, want)
	}
}

// TestInstalledBashDefinesTheSame guards the rule bash.sh states at its top (no line
// inside a quoted string may begin with '#' or be blank): sourced by bash, the
// installed script, stripped of its comment lines, defines exactly the functions
// and their bodies that the script as written does (bash prints bodies without
// comments, so only a change of meaning shows).
func TestInstalledBashDefinesTheSame(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	whole, err := scripts.ReadFile("scripts/bash.sh")
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := scriptBytes("bash.sh")
	if err != nil {
		t.Fatal(err)
	}
	if len(stripped) >= len(whole) {
		t.Fatalf("the installed script (%d bytes) is not smaller than bash.sh (%d)", len(stripped), len(whole))
	}
	defined := func(script []byte) string {
		path := filepath.Join(t.TempDir(), "bash.sh")
		if err := os.WriteFile(path, script, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1" >/dev/null 2>&1; declare -f`, "bash", path)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash sourcing %s: %v", path, err)
		}
		return string(out)
	}
	want, got := defined(whole), defined(stripped)
	if !strings.Contains(want, "__termhost_") {
		t.Fatalf("sourcing bash.sh defined no __termhost_ function:\n%s", want)
	}
	if got != want {
		t.Errorf("the installed script defines other functions than bash.sh does\ninstalled:\n%s\nbash.sh:\n%s", got, want)
	}
}
