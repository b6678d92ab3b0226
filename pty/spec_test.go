package pty

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnvOrderAndReplacement(t *testing.T) {
	host := []string{"HOME=/home/me", "PAGER=more", "TERM=screen", "BROKEN", "=nokey", "HOME=/home/again"}
	got := BuildEnv(host, Spec{
		Env:                 []string{"PAGER=less", "MINE=1", "COLUMNS=7"},
		Dir:                 "/work",
		UsePty:              true,
		Cols:                120,
		PreventShellHistory: true,
		NonInteractive:      true,
		Shell:               "/bin/sh",
	})
	// A key set again moves to where it was set last.
	want := []string{
		"HOME=/home/again",
		"MINE=1",
		"PWD=/work",
		"TERM=screen",
		"COLUMNS=120",
		"LINES=24",
		"VSCODE_PREVENT_SHELL_HISTORY=1",
		"LC_ALL=C.UTF-8",
		"PAGER=",
		"GIT_PAGER=",
		"GH_PAGER=",
		"GIT_TERMINAL_PROMPT=0",
		"DEBIAN_FRONTEND=noninteractive",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("BuildEnv =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildEnvTerm(t *testing.T) {
	cases := []struct {
		name   string
		host   []string
		usePty bool
		want   string
	}{
		{"pty, host has none", nil, true, "xterm-256color"},
		{"pty, host empty", []string{"TERM="}, true, "xterm-256color"},
		{"pty, host dumb", []string{"TERM=dumb"}, true, "xterm-256color"},
		{"pty, host's own", []string{"TERM=tmux-256color"}, true, "tmux-256color"},
		{"pipes", []string{"TERM=xterm"}, false, "dumb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := BuildEnv(tc.host, Spec{UsePty: tc.usePty, Env: []string{"TERM=vt100"}})
			if got, _ := lookupEnv(env, "TERM"); got != tc.want {
				t.Fatalf("TERM = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBuildEnvPromptEOLMarkOnlyForZsh(t *testing.T) {
	for shell, want := range map[string]bool{"/usr/bin/zsh": true, "/bin/bash": false, "/bin/sh": false} {
		env := BuildEnv(nil, Spec{Shell: shell, NonInteractive: true})
		if v, ok := lookupEnv(env, "PROMPT_EOL_MARK"); ok != want || v != "" {
			t.Errorf("%s: PROMPT_EOL_MARK=%q set %v, want set %v", shell, v, ok, want)
		}
	}
	if _, ok := lookupEnv(BuildEnv(nil, Spec{Shell: "/usr/bin/zsh"}), "PROMPT_EOL_MARK"); ok {
		t.Error("PROMPT_EOL_MARK set without NonInteractive")
	}
}

func TestBuildEnvHasNoDuplicates(t *testing.T) {
	env := BuildEnv([]string{"A=1", "B=2", "A=3", "TERM=x", "LINES=5"}, Spec{Env: []string{"B=4", "B=5"}})
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Fatalf("%s twice in %q", k, env)
		}
		seen[k] = true
	}
	if v, _ := lookupEnv(env, "B"); v != "5" {
		t.Fatalf("B = %q, want the last value 5", v)
	}
}

func TestQuoteArgv(t *testing.T) {
	cases := []struct {
		argv []string
		want string
	}{
		{[]string{"ls"}, `'ls'`},
		{[]string{"printf", `%s\n`, "a b"}, `'printf' '%s\n' 'a b'`},
		{[]string{"echo", "c'd"}, `'echo' 'c'\''d'`},
		{[]string{"echo", ""}, `'echo' ''`},
		{[]string{"A=b", "$x", "`id`", "*"}, "'A=b' '$x' '`id`' '*'"},
		{nil, ""},
	}
	for _, tc := range cases {
		if got := QuoteArgv(tc.argv); got != tc.want {
			t.Errorf("QuoteArgv(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

func TestDirFromURI(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"file:///tmp/a%20b", "/tmp/a b"},
		{"file:///tmp/x%23y", "/tmp/x#y"},
		{"file://host/tmp", "/tmp"},
		{"file:///tmp/x#y", "/tmp/x#y"},
		{"file:/tmp/one", "/tmp/one"},
		{"FILE:///tmp", "/tmp"},
		{"file:///tmp/caf%C3%A9", "/tmp/café"},
		{"/tmp", "/tmp"},
		{"/tmp/a%20b", "/tmp/a%20b"}, // a path is taken as it is, not decoded
		{"", ""},
	}
	for _, tc := range cases {
		got, err := DirFromURI(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("DirFromURI(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"tmp", "file:relative", "file://host", "file:///tmp/%zz", "file:///tmp/%00", "https://example.com/tmp"} {
		if got, err := DirFromURI(bad); err == nil {
			t.Errorf("DirFromURI(%q) = %q, want an error", bad, got)
		}
	}
}

func TestDefaultShell(t *testing.T) {
	t.Setenv("SHELL", "/nonexistent/shell")
	if got := DefaultShell(); got != "/bin/sh" {
		t.Errorf("DefaultShell with a missing $SHELL = %q, want /bin/sh", got)
	}
	t.Setenv("SHELL", "")
	if got := DefaultShell(); got != "/bin/sh" {
		t.Errorf("DefaultShell with no $SHELL = %q, want /bin/sh", got)
	}
	t.Setenv("SHELL", "/etc/passwd") // a file, not executable
	if got := DefaultShell(); got != "/bin/sh" {
		t.Errorf("DefaultShell with a non-executable $SHELL = %q, want /bin/sh", got)
	}
	t.Setenv("SHELL", "/bin/sh")
	if got := DefaultShell(); got != "/bin/sh" {
		t.Errorf("DefaultShell = %q, want /bin/sh", got)
	}
}

func TestSpecArgv(t *testing.T) {
	cases := []struct {
		spec Spec
		want []string
	}{
		{Spec{ShellArgs: []string{"--norc"}}, []string{"/bin/sh", "--norc"}},
		{Spec{Command: "echo a; echo b", ShellArgs: []string{"--norc"}}, []string{"/bin/sh", "-c", "echo a; echo b"}},
		{Spec{Command: "echo", Args: []string{"a b"}}, []string{"/bin/sh", "-c", "exec 'echo' 'a b'"}},
		{Spec{Command: "ls", Args: []string{}}, []string{"/bin/sh", "-c", "exec 'ls'"}},
	}
	for _, tc := range cases {
		if got := tc.spec.argv("/bin/sh"); !slices.Equal(got, tc.want) {
			t.Errorf("argv(%+v) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestProgramSignalUnderAnyShell: a program run by argv ends with its own signal,
// even under a shell that would wait for it and report 128+n as an exit code.
func TestProgramSignalUnderAnyShell(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := os.Stat(shell); err != nil {
			continue
		}
		p, err := Start(Spec{Shell: shell, Command: "sh", Args: []string{"-c", "kill -TERM $$"}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, p.Output()) }()
		exit := p.Wait()
		_ = p.Close()
		if exit.Signal != "SIGTERM" {
			t.Errorf("under %s: exit %+v, want SIGTERM", shell, exit)
		}
	}
}
