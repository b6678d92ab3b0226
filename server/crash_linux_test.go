package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/persistence"
)

// hostBinary is the real termhost, built once for the tests that run it into the
// home folder TestMain made (and removes). The go command gets the HOME it had
// before, where its module and build caches are.
var hostBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(os.Getenv("HOME"), "termhost-bin", "termhost")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/termhost")
	if realHome != "" {
		cmd.Env = append(os.Environ(), "HOME="+realHome)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// hostProcess is `termhost serve` running in a process of its own.
type hostProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	owner  string
	stderr *strings.Builder
	exited chan struct{}
}

// startHostProcess runs the real binary's serve on state until the test ends.
func startHostProcess(t *testing.T, state string) *hostProcess {
	t.Helper()
	bin, err := hostBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--state-dir", state)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &hostProcess{t: t, cmd: cmd, stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.signal(syscall.SIGKILL) })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("serve ended before listening")
		}
		p.addr = strings.TrimSuffix(strings.TrimPrefix(line, "termhost listening on ws://"), "/")
	case <-time.After(waitTimeout):
		t.Fatalf("serve did not listen within %v", waitTimeout)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	p.owner = readToken(t, filepath.Join(state, "owner.token"))
	return p
}

// signal sends sig and waits for the process to end.
func (p *hostProcess) signal(sig syscall.Signal) {
	p.t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(waitTimeout):
		p.t.Fatalf("serve did not end within %v of %v", waitTimeout, sig)
	}
}

func (p *hostProcess) dial(clientID string) *conn {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cc, err := client.Dial(ctx, "ws://"+p.addr+"/?tkn="+p.owner, nil)
	if err != nil {
		p.t.Fatalf("dial: %v", err)
	}
	p.t.Cleanup(func() { _ = cc.Close() })
	c := &conn{t: p.t, Conn: cc, clientID: clientID}
	if _, err := c.Initialize(c.ctx(), clientID, messages.RootURI); err != nil {
		p.t.Fatalf("initialize: %v", err)
	}
	return c
}

// queueCommands queues `!` turns on the chat; each runs once the one before it ends.
func (c *conn) queueCommands(chat string, texts ...string) {
	for _, text := range texts {
		turnSeq++
		c.dispatch(chat, map[string]any{"type": "chat/pendingMessageSet", "kind": "queued", "id": fmt.Sprintf("q%d", turnSeq),
			"message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}})
	}
}

// waitTurnsCompleted waits until n turns of the chat have completed since the
// connection began.
func (c *conn) waitTurnsCompleted(chat string, n int) {
	c.t.Helper()
	seen := 0
	c.waitFor(fmt.Sprintf("%d turns completed", n), func(m *client.Notification) bool {
		if m.Envelope != nil && m.Envelope.Channel == chat && m.Envelope.Type == "chat/turnComplete" {
			seen++
		}
		return seen >= n
	})
}

// TestKilledHostKeepsNoTurnWithoutItsOutput kills the real host (SIGKILL) at the
// moment a `!` turn lands on disk - its line written to the chat's turns.jsonl - with more
// turns queued behind it, in a few rounds. After each kill every turn the host saved
// names output that was written before it, and after the restart every saved turn's
// terminal opens: none is refused with -32008 because its cut preview has nothing
// kept behind it.
func TestKilledHostKeepsNoTurnWithoutItsOutput(t *testing.T) {
	state, work := t.TempDir(), t.TempDir()
	const session = "ahp-session:/killed"
	// Over the 80,000 characters of a preview, so only the kept output has it whole.
	big := "!seq 1 20000"
	const bigTail = "\n20000"

	// A clean round first: turns the later kills must not lose, and the chat's folder
	// on disk to watch.
	p := startHostProcess(t, state)
	c := p.dial("crash-0")
	chat := c.openSession(session, work)
	c.queueCommands(chat, big, "!echo clean-round")
	c.waitTurnsCompleted(chat, 2)
	p.signal(syscall.SIGTERM)
	turnsFile := findFile(t, filepath.Join(state, "sessions"), "turns.jsonl")

	for round, killAt := range []int{1, 2} {
		p := startHostProcess(t, state)
		c := p.dial(fmt.Sprintf("crash-%d", round+1))
		if _, err := c.Subscribe(c.ctx(), chat); err != nil {
			t.Fatalf("round %d: the chat after a kill: %v", round+1, err)
		}
		landed := watchWritesTo(t, turnsFile)
		for i := 0; i <= killAt; i++ {
			c.queueCommands(chat, big, fmt.Sprintf("!echo round-%d-%d", round+1, i))
		}
		for range killAt {
			select {
			case <-landed:
			case <-time.After(waitTimeout):
				t.Fatalf("round %d: no turn landed on disk within %v", round+1, waitTimeout)
			}
		}
		p.signal(syscall.SIGKILL)
		checkKeptTurns(t, state, session, chat)
	}

	p = startHostProcess(t, state)
	c = p.dial("after")
	snap, err := c.Subscribe(c.ctx(), chat)
	if err != nil {
		t.Fatalf("the chat after the kills: %v", err)
	}
	uris := commandTerminals(t, snap.State)
	if len(uris) < 2+1+2 {
		t.Fatalf("the chat has %d turns; the clean round and each turn that landed before a kill make 5: %s", len(uris), snap.State)
	}
	for _, uri := range uris {
		// The live shells went with the host, so each is rebuilt from what was kept.
		ts, err := c.Subscribe(c.ctx(), uri)
		if err != nil {
			t.Fatalf("a saved turn's terminal %s: %v (of %d terminals)", uri, err, len(uris))
		}
		st, text := terminalText(t, ts)
		if st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusExited {
			t.Fatalf("terminal %s is not exited: %s", uri, ts.State)
		}
		if text = strings.ReplaceAll(text, "\r", ""); strings.Contains(text, "\n1\n2\n") && !strings.Contains(text, bigTail) {
			t.Fatalf("terminal %s lost the end of its output", uri)
		}
	}
	p.signal(syscall.SIGTERM)
}

// findFile finds the one file named name under root.
func findFile(t *testing.T, root, name string) string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one %s under %s, found %v", name, root, found)
	}
	return found[0]
}

// watchWritesTo reports each time path is written (a turn appended to the log) or
// renamed into place (the log compacted), through inotify, until the test ends.
func watchWritesTo(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, filepath.Dir(path), syscall.IN_MODIFY|syscall.IN_MOVED_TO); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	landed := make(chan struct{}, 64)
	done := make(chan struct{})
	t.Cleanup(func() { f.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				if name == filepath.Base(path) {
					landed <- struct{}{}
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}()
	return landed
}

// checkKeptTurns reads the store on disk as the host left it: every turn kept there
// names only output that is kept too.
func checkKeptTurns(t *testing.T, state, session, chat string) {
	t.Helper()
	store, err := persistence.Open(filepath.Join(state, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	turns, err := store.Turns(session, chat)
	if err != nil {
		t.Fatalf("kept turns: %v", err)
	}
	for _, turn := range turns {
		if turn.TerminalKey == "" {
			t.Errorf("turn %s (%s) kept without its output", turn.ID, turn.Text)
			continue
		}
		if _, err := store.LoadTerminal(session, chat, turn.TerminalKey); err != nil {
			t.Errorf("turn %s (%s) names output that was never written: %v", turn.ID, turn.Text, err)
		}
	}
}
