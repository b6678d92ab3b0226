package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/internal/follow"
	"github.com/termhost/termhost/messages"
)

// detachPrefix is ctrl-\ (FS, 0x1c): the first key of the detach sequence, as tmux
// has a prefix key. ctrl-\ d detaches; ctrl-\ ctrl-\ sends one ctrl-\. It is the key
// a shell needs least (SIGQUIT), and in raw mode it reaches us as a byte.
const detachPrefix = 0x1c

const detachHelp = `ctrl-\ d detaches, ctrl-\ ctrl-\ sends ctrl-\`

// attachCmd is `termhost attach URI|NAME|#N`.
func attachCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := addHostFlags(fs)
	readOnly := fs.Bool("read-only", false, "watch: send neither input nor this window's size")
	operands, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return usageError{errors.New("attach takes one terminal: its URI, its name or #N (a row of `termhost ls`)")}
	}
	h, err := hf.host()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	clientID := newClientID()
	cctx, cancel := withTimeout(ctx)
	defer cancel()
	conn, list, err := h.connect(cctx, clientID)
	if err != nil {
		return err
	}
	info, err := h.resolveTerminal(list, operands[0])
	if err != nil {
		_ = conn.WS().CloseNow()
		return err
	}
	return attach(ctx, h, conn, clientID, info.Resource, *readOnly, os.Stdin, stdout, stderr)
}

// attach shows the terminal uri on this one: raw mode, the terminal's content, then
// live, with this window's size sent on start and on every SIGWINCH, until the person
// detaches (ctrl-\ d, or a signal to this process), which leaves the terminal running,
// or the terminal exits, whose code attach exits with. conn is initialized as
// clientID; attach owns it from now on.
func attach(ctx context.Context, h *host, conn *client.Conn, clientID, uri string, readOnly bool, stdin *os.File, stdout, stderr io.Writer) error {
	// The root list was only needed to find the terminal.
	_ = conn.Unsubscribe(ctx, messages.RootURI)
	fd := int(stdin.Fd())
	tty := term.IsTerminal(fd)
	eol := "\n"
	if tty {
		old, err := term.MakeRaw(fd)
		if err != nil {
			_ = conn.WS().CloseNow()
			return fmt.Errorf("putting this terminal in raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, old) }()
		eol = "\r\n"
	}
	status := follow.NewStatusLine(stderr, eol)
	f := &follow.Follower{Host: h, ClientID: clientID, URI: uri, Out: stdout, Status: status, Patience: follow.DefaultPatience}
	defer f.Close()
	if err := f.Start(ctx, conn); err != nil {
		_ = conn.WS().CloseNow()
		return err
	}
	if f.Exited() != nil {
		return ended(status, uri, f.Exited())
	}
	mode := detachHelp
	if readOnly {
		mode = "read-only; " + detachHelp
	}
	status.Line(fmt.Sprintf("attached to %s (%s)", uri, mode))

	ctx, detach := context.WithCancel(ctx)
	defer detach()
	if tty && !readOnly {
		sendSize(f, fd)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-winch:
					sendSize(f, fd)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		// This goroutine lives as long as stdin can be read: a read cannot be
		// interrupted, and the process ends soon after attach returns.
		var keys detachKeys
		var carry []byte
		buf := make([]byte, 32<<10)
		for {
			n, err := stdin.Read(buf)
			if n > 0 {
				send, gone := keys.feed(buf[:n])
				if gone {
					detach()
					return
				}
				if !readOnly {
					var whole []byte
					whole, carry = completeUTF8(append(carry, send...))
					if len(whole) > 0 {
						f.Input(string(whole))
					}
				}
			}
			if err != nil {
				return // stdin ended: go on watching until the terminal exits or a signal
			}
		}
	}()

	exit, err := f.Follow(ctx)
	switch {
	case exit != nil:
		return ended(status, uri, exit)
	case ctx.Err() != nil: // ctrl-\ d, or a signal
		status.Line(fmt.Sprintf("detached from %s; it goes on running (termhost attach %s)", uri, uri))
		return nil
	}
	return err
}

// ended says how the terminal ended and makes that the exit status.
func ended(status *follow.StatusLine, uri string, exit *follow.Exit) error {
	status.Line(fmt.Sprintf("%s %s", uri, exit))
	if code := exit.Status(); code != 0 {
		return &exitStatus{code}
	}
	return nil
}

func sendSize(f *follow.Follower, fd int) {
	cols, rows, err := term.GetSize(fd)
	if err == nil && cols > 0 && rows > 0 {
		f.Resize(cols, rows)
	}
}

// detachKeys finds ctrl-\ d in what is typed, across reads.
type detachKeys struct {
	prefixed bool // the last byte read was a lone ctrl-\
}

// feed returns what of in is to be sent, and whether the detach sequence came; what
// follows it is dropped. ctrl-\ ctrl-\ sends one ctrl-\; ctrl-\ and any other key
// sends both.
func (k *detachKeys) feed(in []byte) (send []byte, detach bool) {
	out := make([]byte, 0, len(in))
	for _, b := range in {
		switch {
		case k.prefixed && b == 'd':
			return out, true
		case k.prefixed && b == detachPrefix:
			out = append(out, detachPrefix)
			k.prefixed = false
		case k.prefixed:
			out = append(out, detachPrefix, b)
			k.prefixed = false
		case b == detachPrefix:
			k.prefixed = true
		default:
			out = append(out, b)
		}
	}
	return out, false
}

// completeUTF8 splits b into whole characters and an unfinished one at its end,
// which waits for the next read: terminal/input carries a JSON string, in which
// half a character would become U+FFFD. Bytes that can never be UTF-8 go as they are.
func completeUTF8(b []byte) (whole, rest []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i], append([]byte(nil), b[i:]...)
			}
			break
		}
	}
	return b, nil
}
