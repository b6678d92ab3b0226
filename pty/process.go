package pty

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	cpty "github.com/creack/pty"
)

// Process is a started child, as its owner and its readers see it. The methods are
// safe to call from any goroutine, except that only one goroutine reads Output and
// only the owner calls Wait.
type Process interface {
	// Pid is the child's process id, which is also its process group's id.
	Pid() int

	// IsPty says whether the child runs under a pseudoterminal.
	IsPty() bool

	// Output is the merged output stream: under a pseudoterminal the terminal's
	// output, on pipes the one pipe that is both the child's stdout and stderr,
	// so it is in the order the child wrote it. Read returns io.EOF once every
	// holder of the child's end has closed it and everything written has been
	// read, or once CloseOutput was called.
	Output() io.Reader

	// Write writes to the child's input: the terminal (whose line discipline
	// may echo it and turn ^C into SIGINT) or the stdin pipe. It may block while
	// the child does not read, so a caller that must not block writes from a
	// goroutine of its own.
	Write(p []byte) (int, error)

	// Resize sets the terminal's size in character cells; the kernel sends the
	// foreground group SIGWINCH. On pipes there is no terminal: nil, and nothing
	// happens.
	Resize(cols, rows int) error

	// Signal sends sig to the child's whole process group. It fails, sending
	// nothing, once the child has been reaped (its pid may name another process
	// by then).
	Signal(sig syscall.Signal) error

	// Wait blocks until the child exits, reaps it and returns how it ended. The
	// one owner calls it once; a further call waits for the first and returns
	// the same Exit.
	Wait() Exit

	// Done is closed once the child has exited and Wait has its status.
	Done() <-chan struct{}

	// CloseOutput closes the read side of the output (the master, or the pipe's
	// read end), so a Read blocked on it returns io.EOF. A caller uses it when a
	// background job keeps the terminal or pipe open after the child exited and
	// the drain grace is over. Under a pseudoterminal the master is also the
	// input, so Write fails afterwards. Idempotent; every call returns the
	// first call's error.
	CloseOutput() error

	// Close releases every descriptor the host holds for the child. It does not
	// end the child (Signal or Terminate do), though under a pseudoterminal the
	// kernel hangs the terminal up once the master is closed, which sends its
	// foreground group SIGHUP. Idempotent; every call returns the first call's
	// error.
	Close() error
}

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status; for a process a signal ended it is 128 plus the
	// signal's number, as a POSIX shell reports it; -1 when the status could not
	// be read.
	Code int

	// Signal names the signal that ended the process, e.g. "SIGTERM", or is ""
	// when it exited by itself. It tells somebody's SIGINT (130) from a program
	// that chose to exit 130 (seed "What a client sees").
	Signal string
}

func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal + " (" + strconv.Itoa(e.Code) + ")"
	}
	return "exit " + strconv.Itoa(e.Code)
}

// Start starts the process spec describes and returns it running. Its error names
// the shell and, where it was not the exec, the step that failed ("cannot start
// /bin/bash: open a pseudoterminal: ...", "cannot start /bin/nosuch: no such file
// or directory"), and wraps ErrNoShell or ErrNoDir where one of those is the cause;
// when Start fails there is no process and no descriptor left open.
func Start(spec Spec) (Process, error) {
	restoreChildSignalDefaults()
	defer func() {
		for _, f := range spec.ExtraFiles {
			_ = f.Close()
		}
	}()
	shell := spec.shell()
	path := shell
	if !strings.Contains(shell, "/") {
		found, err := exec.LookPath(shell)
		if err != nil {
			return nil, &kindError{kind: ErrNoShell, err: fmt.Errorf("cannot start %s: %w", shell, err)}
		}
		path = found
	}
	if spec.Dir != "" {
		if err := checkDir(shell, spec.Dir); err != nil {
			return nil, err
		}
	}

	cmd := &exec.Cmd{
		Path: path,
		Args: spec.argv(shell),
		Env:  BuildEnv(os.Environ(), spec),
		Dir:  spec.Dir,

		ExtraFiles: spec.ExtraFiles,
	}
	var p *process
	var err error
	if spec.UsePty {
		cols, rows := spec.size()
		p, err = startPty(cmd, shell, cols, rows)
	} else {
		p, err = startPipes(cmd, shell)
	}
	if err != nil {
		return nil, err // a nil Process, not a nil *process inside one
	}
	return p, nil
}

// startPty runs cmd with a new pseudoterminal's slave as its stdin, stdout, stderr
// and controlling terminal, in a session of its own (setsid, TIOCSCTTY).
func startPty(cmd *exec.Cmd, shell string, cols, rows int) (*process, error) {
	master, tty, err := openPty()
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: open a pseudoterminal: %w", shell, err)
	}
	if err := setWinsize(master, cols, rows); err != nil {
		_ = tty.Close()
		_ = master.Close()
		return nil, fmt.Errorf("cannot start %s: set the terminal's size: %w", shell, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// Ctty is a descriptor number in the child: 0 is its stdin, the slave.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	// The child holds its own copies now. The parent's copy would keep the
	// terminal open after the child is gone, and the master would never report
	// the end of the output.
	_ = tty.Close()
	if err != nil {
		_ = master.Close()
		return nil, startError(shell, err)
	}
	return newProcess(cmd, true, master, master), nil
}

// startPipes runs cmd with one pipe as both its stdout and stderr, so there is one
// stream in the order the child wrote it, and a stdin pipe the host keeps open until
// Close: a shell started to sit in reads commands from it.
func startPipes(cmd *exec.Cmd, shell string) (*process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: open its output pipe: %w", shell, err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, fmt.Errorf("cannot start %s: open its input pipe: %w", shell, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	// A session of its own makes the child a process group leader, so Signal
	// reaches the jobs it starts as well.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	// Close the parent's copies of the child's ends: EOF on outR then means the
	// child and everything it started have closed theirs.
	_ = outW.Close()
	_ = inR.Close()
	if err != nil {
		_ = outR.Close()
		_ = inW.Close()
		return nil, startError(shell, err)
	}
	return newProcess(cmd, false, outR, inW), nil
}

func checkDir(shell, dir string) error {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &kindError{kind: ErrNoDir, err: fmt.Errorf("cannot start %s: working directory %s: %w", shell, dir, err)}
	}
	return nil
}

// startError names the step and the cause of a failed exec.Cmd.Start, turning
// os's "fork/exec PATH: errno" into "cannot start SHELL: errno".
func startError(shell string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return fmt.Errorf("cannot start %s: %w", shell, err)
	}
	if pe.Op == "chdir" {
		// The directory went away between checkDir and the start.
		return &kindError{kind: ErrNoDir, err: fmt.Errorf("cannot start %s: working directory %s: %w", shell, pe.Path, pe.Err)}
	}
	wrapped := fmt.Errorf("cannot start %s: %w", shell, pe.Err)
	if errors.Is(pe.Err, syscall.ENOENT) {
		if _, statErr := os.Stat(pe.Path); statErr == nil {
			// "No such file" about a file that is there: exec did not find what
			// the file asks for.
			wrapped = fmt.Errorf("cannot start %s: the interpreter its #! line names, or its loader: %w", shell, pe.Err)
		}
	}
	for _, cause := range []error{syscall.ENOENT, syscall.ENOTDIR, syscall.EACCES, syscall.ENOEXEC, syscall.ELOOP} {
		if errors.Is(pe.Err, cause) {
			return &kindError{kind: ErrNoShell, err: wrapped}
		}
	}
	return wrapped
}

// kindError adds a sentinel to an error's chain without adding it to the message.
type kindError struct {
	kind error // ErrNoShell or ErrNoDir
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// pollable returns a duplicate of the master that the Go runtime polls, and closes
// the original. creack/pty reaches the master through File.Fd, which puts the
// descriptor in blocking mode for good; a Read blocked on such a file keeps it open
// through Close, so CloseOutput could never end a drain. A non-blocking descriptor
// handed to os.NewFile is registered with the poller, and Close wakes its reader.
func pollable(f *os.File) (*os.File, error) {
	defer func() { _ = f.Close() }()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	dup := -1
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		var r uintptr
		r, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno == 0 {
			dup = int(r)
		}
	})
	if err != nil {
		return nil, err
	}
	if errno != 0 {
		return nil, fmt.Errorf("dup: %w", errno)
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		_ = syscall.Close(dup)
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	return os.NewFile(uintptr(dup), f.Name()), nil
}

// setWinsize sets the terminal size through the master. It goes through
// SyscallConn rather than creack/pty's Setsize, which calls File.Fd (see pollable),
// and Control also keeps the descriptor from being closed and reused meanwhile.
func setWinsize(f *os.File, cols, rows int) error {
	if cols <= 0 || rows <= 0 || cols > 0xffff || rows > 0xffff {
		return fmt.Errorf("size %dx%d out of range", cols, rows)
	}
	ws := cpty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// process is a Process. cmd, pid, isPty, out and in never change after
// newProcess.
type process struct {
	cmd   *exec.Cmd
	pid   int
	isPty bool
	out   *os.File // the master, or the output pipe's read end
	in    *os.File // the master (the same file as out), or the stdin pipe's write end

	waitOnce sync.Once
	exit     Exit          // written once, by Wait, before done is closed
	done     chan struct{} // closed by Wait

	closeOutOnce sync.Once
	closeOutErr  error
	closeOnce    sync.Once
	closeErr     error
}

func newProcess(cmd *exec.Cmd, isPty bool, out, in *os.File) *process {
	return &process{
		cmd:   cmd,
		pid:   cmd.Process.Pid,
		isPty: isPty,
		out:   out,
		in:    in,
		done:  make(chan struct{}),
	}
}

func (p *process) Pid() int    { return p.pid }
func (p *process) IsPty() bool { return p.isPty }
func (p *process) Output() io.Reader {
	return outputReader{newBatchReader(p.out)}
}

func (p *process) Write(b []byte) (int, error) {
	return p.in.Write(b)
}

// TryWrite writes what the terminal or pipe takes now and returns; a full buffer is
// syscall.EAGAIN with the count written so far. It lets a keystroke reach the child
// from the caller's goroutine, where Write would park the caller on a full buffer.
func (p *process) TryWrite(b []byte) (int, error) {
	rc, err := p.in.SyscallConn()
	if err != nil {
		return 0, err
	}
	total := 0
	var werr error
	if err := rc.Control(func(fd uintptr) {
		for total < len(b) {
			n, err := syscall.Write(int(fd), b[total:])
			if n > 0 {
				total += n
			}
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				werr = err
				return
			}
			if n == 0 {
				werr = syscall.EAGAIN
				return
			}
		}
	}); err != nil {
		return total, err
	}
	return total, werr
}

func (p *process) Resize(cols, rows int) error {
	if !p.isPty {
		return nil
	}
	if err := setWinsize(p.out, cols, rows); err != nil {
		return fmt.Errorf("resize pty: %w", err)
	}
	return nil
}

func (p *process) Signal(sig syscall.Signal) error {
	// Never group 0: kill(0, sig) signals the host's own process group.
	if p.pid <= 0 {
		return fmt.Errorf("signal %s: no process", SignalName(sig))
	}
	select {
	case <-p.done:
		return fmt.Errorf("signal %s to group %d: %w", SignalName(sig), p.pid, os.ErrProcessDone)
	default:
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("signal %s to group %d: %w", SignalName(sig), p.pid, err)
	}
	return nil
}

func (p *process) Wait() Exit {
	p.waitOnce.Do(func() {
		awaitExit(p.cmd)
		// The error adds nothing to ProcessState: an *exec.ExitError for a
		// non-zero status, or a failed wait, which leaves ProcessState nil.
		_ = p.cmd.Wait()
		p.exit = exitOf(p.cmd.ProcessState)
		close(p.done)
	})
	return p.exit
}

func (p *process) Done() <-chan struct{} { return p.done }

func (p *process) CloseOutput() error {
	p.closeOutOnce.Do(func() { p.closeOutErr = p.out.Close() })
	return p.closeOutErr
}

func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.CloseOutput()
		if p.in != p.out {
			if err := p.in.Close(); p.closeErr == nil {
				p.closeErr = err
			}
		}
	})
	return p.closeErr
}

// outputReader is the one place the end of the output is recognised.
type outputReader struct{ r batchReader }

func (r outputReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, syscall.EIO):
		// Linux: a master whose slave every process has closed reports EIO
		// once what was written is read; that is the end of the output.
		err = io.EOF
	case errors.Is(err, os.ErrClosed):
		// CloseOutput ended the drain.
		err = io.EOF
	}
	return n, err
}

func exitOf(state *os.ProcessState) Exit {
	if state == nil {
		return Exit{Code: -1}
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok {
		return Exit{Code: state.ExitCode()}
	}
	if ws.Signaled() {
		sig := ws.Signal()
		return Exit{Code: 128 + int(sig), Signal: SignalName(sig)}
	}
	return Exit{Code: ws.ExitStatus()}
}

// signalNames spells signals the way people and shells do; syscall.Signal.String
// gives strerror-like text ("terminated").
var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP:    "SIGHUP",
	syscall.SIGINT:    "SIGINT",
	syscall.SIGQUIT:   "SIGQUIT",
	syscall.SIGILL:    "SIGILL",
	syscall.SIGTRAP:   "SIGTRAP",
	syscall.SIGABRT:   "SIGABRT",
	syscall.SIGBUS:    "SIGBUS",
	syscall.SIGFPE:    "SIGFPE",
	syscall.SIGKILL:   "SIGKILL",
	syscall.SIGUSR1:   "SIGUSR1",
	syscall.SIGSEGV:   "SIGSEGV",
	syscall.SIGUSR2:   "SIGUSR2",
	syscall.SIGPIPE:   "SIGPIPE",
	syscall.SIGALRM:   "SIGALRM",
	syscall.SIGTERM:   "SIGTERM",
	syscall.SIGCHLD:   "SIGCHLD",
	syscall.SIGCONT:   "SIGCONT",
	syscall.SIGSTOP:   "SIGSTOP",
	syscall.SIGTSTP:   "SIGTSTP",
	syscall.SIGTTIN:   "SIGTTIN",
	syscall.SIGTTOU:   "SIGTTOU",
	syscall.SIGURG:    "SIGURG",
	syscall.SIGXCPU:   "SIGXCPU",
	syscall.SIGXFSZ:   "SIGXFSZ",
	syscall.SIGVTALRM: "SIGVTALRM",
	syscall.SIGPROF:   "SIGPROF",
	syscall.SIGWINCH:  "SIGWINCH",
	syscall.SIGIO:     "SIGIO",
	syscall.SIGSYS:    "SIGSYS",
}

// SignalName is sig's name, e.g. "SIGTERM", or "SIG<n>" for one without a name here.
func SignalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// Terminate ends p's session the way a terminal going away does: SIGHUP to its
// process group and to every other process of its session (the jobs an interactive
// shell put in groups of their own, and those a double fork handed to init), then,
// if p has not exited within grace, SIGKILL to them all. A process that made a
// session of its own (setsid) left the terminal and is left alone. It returns once
// Done is closed and the rest of the session has ended or been killed, or right
// after the SIGKILL; a grace <= 0 sends the SIGKILL at once. It never calls Wait;
// the owner does, and Done closes when it has. sessions, shared by a host's
// terminals, scans for the session on a kernel without children lists (see
// sessionOf); nil scans alone.
func Terminate(p Process, grace time.Duration, sessions *SessionScanner) {
	TerminateWith(p, syscall.SIGHUP, grace, sessions)
}

// TerminateWith is Terminate with another first signal: SIGTERM, for a kill that
// asks the processes to end rather than telling them their terminal went away.
func TerminateWith(p Process, first syscall.Signal, grace time.Duration, sessions *SessionScanner) {
	pid := p.Pid()
	exited := false
	select {
	case <-p.Done():
		exited = true
	default:
	}
	var members []member
	if pid > 0 {
		members = sessionMembersOf(pid, exited, sessions)
	}
	if !exited {
		_ = p.Signal(first)
	}
	signalMembers(members, first)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-p.Done():
	case <-deadline.C:
		_ = p.Signal(syscall.SIGKILL)
		signalMembers(members, syscall.SIGKILL)
		return
	}
	if !exited && pid > 0 {
		// A job started after the first look, or by a process as it ended, has been
		// handed on by now: a second look finds it.
		more := newMembers(sessionMembersOf(pid, true, sessions), members)
		signalMembers(more, first)
		members = append(members, more...)
	}
	// The shell is gone; the rest of its session gets what is left of the grace to
	// end on SIGHUP. No event says another process ended, so this polls.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(members) > 0 {
		select {
		case <-tick.C:
			members = stillAlive(members)
		case <-deadline.C:
			signalMembers(members, syscall.SIGKILL)
			return
		}
	}
}

// sessionMembersOf lists session sid's processes other than its leader: through
// the children lists where the kernel has them, else by a scan of every process.
// reaped says the leader has been reaped. The kernel hands a pid out again only
// once no session or group is named by it, so a process holding it then means the
// session has no members left, and what a look found would be another session's.
func sessionMembersOf(sid int, reaped bool, sessions *SessionScanner) []member {
	if reaped {
		// A signal 0 asks whether the pid is held, in one system call.
		if err := syscall.Kill(sid, 0); err != syscall.ESRCH {
			return nil
		}
	}
	if ms, ok := sessionOf(sid); ok {
		return ms
	}
	return sessions.members(sid)
}

// newMembers is found without those already in known.
func newMembers(found, known []member) []member {
	var out []member
	for _, m := range found {
		if !slices.Contains(known, m) {
			out = append(out, m)
		}
	}
	return out
}

// Available reports whether this machine can open a pseudoterminal: it opens one
// and closes it.
func Available() bool {
	master, tty, err := cpty.Open()
	if err != nil {
		return false
	}
	_ = tty.Close()
	_ = master.Close()
	return true
}
