package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/backendterm"
	"github.com/termhost/termhost/messages"
)

// TestBackendSeam drives the seam an agent backend will use: open a program in a
// terminal the host owns and lists, read its output as a client would, wait for its
// exit, write and resize, kill (the row stays) and release (the row goes).
func TestBackendSeam(t *testing.T) {
	h := startHost(t)
	watcher := h.dial("watcher")
	ts := backendterm.NewTerminals(h.srv.System(), h.srv.RootPID(), h.kept)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	spec := backendterm.OpenSpec{Session: "ahp-session:/agent", Chat: "ahp-session:/agent/chat", TurnID: "turn-1", ToolCallID: "call-1",
		Cwd: t.TempDir(), Program: "printf", Args: []string{"%s|", "one two", "three"}}
	bt, err := ts.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	code, err := bt.Wait(ctx)
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v", code, err)
	}
	out, err := bt.Output(ctx)
	if err != nil || out != "one two|three|" {
		t.Fatalf("output %q %v", out, err)
	}
	// Kept by the time Wait returns: what it printed, how it ended, isPty.
	kept, err := h.kept.LoadTerminal(spec.Session, spec.Chat, "call-1")
	if err != nil || kept.Output != "one two|three|" || kept.ExitCode == nil || *kept.ExitCode != 0 || kept.IsPty != bt.IsPty() || kept.URI != bt.URI {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	rows := waitRoot(watcher, func(r []messages.TerminalInfo) bool { return findRow(r, bt.URI) != nil })
	if row := findRow(rows, bt.URI); row.Claim.Kind != "session" || row.Claim.ToolCallID != "call-1" {
		t.Fatalf("row %+v", row)
	}

	// A shell to sit in: write, resize, kill (the row stays), release (it goes).
	sh, err := ts.Open(ctx, backendterm.OpenSpec{Session: "ahp-session:/agent", Chat: "ahp-session:/agent/chat", ToolCallID: "call-2", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sh.Resize(123, 45)
	sh.Write("echo typed-$((20+22))\r")
	// The seam reads output on demand, as a backend does; poll it under the deadline.
	for o, _ := sh.Output(ctx); !strings.Contains(o, "typed-42"); o, _ = sh.Output(ctx) {
		if ctx.Err() != nil {
			t.Fatalf("no output of the typed command; got %q", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	snap, err := watcher.Subscribe(watcher.ctx(), sh.URI)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := snap.TerminalState(); *st.Cols != 123 || *st.Rows != 45 {
		t.Fatalf("resize not recorded: %s", snap.State)
	}
	sh.Kill()
	if _, err := sh.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	rows = waitRoot(watcher, func(r []messages.TerminalInfo) bool {
		row := findRow(r, sh.URI)
		return row != nil && row.Lifecycle != nil && row.Lifecycle.Status == "exited"
	})
	if err := sh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitRoot(watcher, func(r []messages.TerminalInfo) bool { return findRow(r, sh.URI) == nil })
	if kept, err := h.kept.LoadTerminal(spec.Session, spec.Chat, "call-2"); err != nil || !strings.Contains(kept.Output, "typed-42") {
		t.Fatalf("the released shell's output was not kept: %+v, %v", kept, err)
	}

	// An output no terminal printed, kept the same way, answers for its key's URI.
	exit := 3
	uri, err := ts.KeepOutput(spec.Session, spec.Chat, "call-3", "a result too large to send", false, &exit)
	if err != nil || !strings.HasSuffix(uri, "/call-3") {
		t.Fatalf("KeepOutput = %q, %v", uri, err)
	}
	if kept, err := h.kept.LoadTerminal(spec.Session, spec.Chat, "call-3"); err != nil || kept.Output != "a result too large to send" || *kept.ExitCode != 3 || kept.URI != uri {
		t.Fatalf("kept output %+v, %v", kept, err)
	}

	// A missing folder is a start that fails: 127 with the reason in the output.
	bad, err := ts.Open(ctx, backendterm.OpenSpec{Session: "ahp-session:/agent", Chat: "ahp-session:/agent/chat", Cwd: "/no/such/dir", Program: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := bad.Wait(ctx); code != 127 {
		t.Fatalf("missing folder gave %d", code)
	}
}
