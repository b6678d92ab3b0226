package main

import (
	"strings"
	"testing"

	"github.com/termhost/termhost/messages"
)

func TestDetachKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reads  []string
		sent   string
		detach bool
	}{
		{"plain typing", []string{"ls\r"}, "ls\r", false},
		{"ctrl-\\ d detaches, dropping what follows", []string{"ab\x1cdcd"}, "ab", true},
		{"across two reads", []string{"a\x1c", "d"}, "a", true},
		{"ctrl-\\ twice is one", []string{"\x1c\x1c"}, "\x1c", false},
		{"ctrl-\\ twice, then d, is one and a d", []string{"\x1c\x1cd"}, "\x1cd", false},
		{"ctrl-\\ and another key send both", []string{"\x1cx"}, "\x1cx", false},
		{"a lone ctrl-\\ waits for the next key", []string{"\x1c"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k detachKeys
			var sent strings.Builder
			detach := false
			for _, r := range tc.reads {
				out, d := k.feed([]byte(r))
				sent.Write(out)
				if d {
					detach = true
					break
				}
			}
			if sent.String() != tc.sent || detach != tc.detach {
				t.Fatalf("sent %q, detach %v; want %q, %v", sent.String(), detach, tc.sent, tc.detach)
			}
		})
	}
}

func TestCompleteUTF8(t *testing.T) {
	euro := "€" // three bytes
	for _, tc := range []struct {
		in, whole, rest string
	}{
		{"abc", "abc", ""},
		{"a" + euro, "a" + euro, ""},
		{"a" + euro[:1], "a", euro[:1]},
		{"a" + euro[:2], "a", euro[:2]},
		{"\xff", "\xff", ""}, // never UTF-8: sent as it is
		{"", "", ""},
	} {
		whole, rest := completeUTF8([]byte(tc.in))
		if string(whole) != tc.whole || string(rest) != tc.rest {
			t.Errorf("completeUTF8(%q) = %q, %q; want %q, %q", tc.in, whole, rest, tc.whole, tc.rest)
		}
	}
}

func TestResolveTerminal(t *testing.T) {
	h := &host{url: "ws://h/"}
	list := []messages.TerminalInfo{
		{Resource: "ahp-terminal:/work", Title: "bash"},
		{Resource: "ahp-terminal:/two%20words", Title: "make test"},
		{Resource: "ahp-terminal:/cli-1", Title: "bash"},
	}
	for arg, want := range map[string]string{
		"ahp-terminal:/work": "ahp-terminal:/work",
		"work":               "ahp-terminal:/work",
		"two words":          "ahp-terminal:/two%20words",
		"make test":          "ahp-terminal:/two%20words",
		"#3":                 "ahp-terminal:/cli-1",
	} {
		got, err := h.resolveTerminal(list, arg)
		if err != nil || got.Resource != want {
			t.Errorf("%q: %s, %v; want %s", arg, got.Resource, err, want)
		}
	}
	for arg, want := range map[string]string{
		"bash":               `"bash" names 2 terminals`,
		"nosuch":             "no terminal nosuch on ws://h/",
		"ahp-terminal:/nope": "no terminal ahp-terminal:/nope on ws://h/",
		"#4":                 "no terminal #4 on ws://h/: it lists 3",
		"#0":                 "#N is a row of `termhost ls`",
	} {
		if _, err := h.resolveTerminal(list, arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error saying %q", arg, err, want)
		}
	}
	if got := terminalURI("two words"); got != "ahp-terminal:/two%20words" {
		t.Errorf("terminalURI: %s", got)
	}
}
