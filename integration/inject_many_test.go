//go:build unix

package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestManyBashesStartAtOnce: integrated bashes started many at once, each typed into
// before its first prompt, all mark the line's start and end and print what it
// prints. (In two CI runs an integrated bash once printed nothing; this is the
// check that many starts at once do not hang one. By hand it ran 3,000 starts, 48
// at once, at a load of 45, all clean.)
func TestManyBashesStartAtOnce(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	const shells, atOnce = 64, 16
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "SHELL=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+t.TempDir(), "TERM=xterm-256color")
	type failure struct {
		pid int
		out string
		err error
	}
	fails := make(chan failure, shells)
	next := make(chan struct{}, shells)
	for range shells {
		next <- struct{}{}
	}
	close(next)
	var wg sync.WaitGroup
	for range atOnce {
		wg.Go(func() {
			for range next {
				pid, out, err := startAndRunOnce(bash, env)
				if err != nil {
					fails <- failure{pid, out, err}
				}
			}
		})
	}
	wg.Wait()
	close(fails)
	for f := range fails {
		t.Errorf("bash %d: %v; it printed %q", f.pid, f.err, f.out)
	}
}

var errTimeout = errors.New("no marks and output of the line within the wait")

// startAndRunOnce starts an integrated bash under a pseudoterminal, types a line
// at once, and waits for the line's marks and output; then ends the shell.
func startAndRunOnce(bash string, env []string) (int, string, error) {
	nonce := NewNonce()
	inj, _, err := Inject(bash, nil, InjectOptions{Nonce: nonce})
	if err != nil {
		return 0, "", err
	}
	cmd := exec.Command(bash, inj.Args...)
	cmd.Env = append(append([]string(nil), env...), inj.Env...)
	cmd.ExtraFiles = inj.Files
	p, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	inj.Close()
	if err != nil {
		return 0, "", err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = p.Close()
	}()
	want := [][]byte{[]byte("\x1b]633;E;(echo sub) | cat\\x3b echo x;" + nonce), []byte("\x1b]633;C"), []byte("sub\r\nx\r\n"), []byte("\x1b]633;D;0")}
	var mu sync.Mutex
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := p.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			all := true
			for _, w := range want {
				all = all && bytes.Contains(out.Bytes(), w)
			}
			mu.Unlock()
			if all {
				close(done)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if _, err := p.Write([]byte("(echo sub) | cat; echo x\r")); err != nil {
		return cmd.Process.Pid, "", err
	}
	select {
	case <-done:
		return cmd.Process.Pid, "", nil
	case <-time.After(waitLimit):
		mu.Lock()
		defer mu.Unlock()
		return cmd.Process.Pid, out.String(), errTimeout
	}
}
