package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The WebSocket library flushes every message to the socket as it is written: one
// write(2) per frame. A connection's writer takes everything its outbox holds at once
// (delivery.Outbox.Next), so the frames of one batch are gathered here and go out in
// one write instead (issue 13). corkConn is the connection the library writes to: the
// writer corks it before a batch and uncorks it after, and whatever the library
// wrote in between (frames, and a pong or a close frame another goroutine sent
// meanwhile, in the order they were written) is sent at the uncork.

// corkGather is how much a batch gathers by copying; a larger write (a flood's
// frame) goes out at once, behind what was gathered, in one writev, rather than be
// copied.
const corkGather = 16 << 10

// corkAlone is the largest frame written alone without corking: the write buffer
// of the connection's bufio.Writer (net/http's, 4 KiB), which the library flushes
// before writing a larger payload's rest.
const corkAlone = 4 << 10

// corkConn is a net.Conn whose writes made while corked are held until uncork.
type corkConn struct {
	net.Conn
	// writeTimeout bounds the uncork's write, which the library's own deadline
	// does not cover.
	writeTimeout time.Duration

	// raw is the socket's descriptor, for room; nil when it has none (then
	// nothing is written directly, see room).
	raw syscall.RawConn

	mu     sync.Mutex // guards the fields below; held across the socket write, so writes keep their order
	corked bool
	held   []byte
}

// room reports whether n more bytes go into the socket's send buffer at once, so
// that a producer writing them itself (delivery.Direct) never waits for the peer:
// what the kernel has queued unsent (SIOCOUTQ), plus n and a frame header's worth,
// is at most half the send buffer. The kernel's own accounting adds overhead per
// packet, hence the half.
func (c *corkConn) room(n int) bool {
	if c.raw == nil {
		return false
	}
	ok := false
	_ = c.raw.Control(func(fd uintptr) {
		queued, err := unsentBytes(int(fd))
		if err != nil {
			return
		}
		sndbuf, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return
		}
		ok = queued+n+1024 <= sndbuf/2
	})
	return ok
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(p) <= corkGather {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	if len(c.held) == 0 {
		return c.Conn.Write(p)
	}
	bufs := net.Buffers{c.held, p}
	n, err := bufs.WriteTo(c.Conn)
	held := len(c.held)
	c.held = c.held[:0]
	if err != nil {
		return max(int(n)-held, 0), err
	}
	return len(p), nil
}

// cork holds the writes that follow until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held, in one write bounded by the write timeout.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.held) == 0 {
		return nil
	}
	if c.writeTimeout > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout))
		defer func() { _ = c.Conn.SetWriteDeadline(time.Time{}) }()
	}
	_, err := c.Conn.Write(c.held)
	if cap(c.held) > 4*corkGather {
		c.held = nil // a burst's buffer is not kept for the connection's life
	} else {
		c.held = c.held[:0]
	}
	return err
}

// corkingWriter hands the WebSocket library a corkConn when it hijacks the
// connection.
type corkingWriter struct {
	http.ResponseWriter
	writeTimeout time.Duration
	conn         *corkConn
}

func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("server: the connection cannot be taken over for a WebSocket")
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc, writeTimeout: w.writeTimeout}
	if tc, ok := nc.(*net.TCPConn); ok {
		w.conn.raw, _ = tc.SyscallConn()
	}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, brw.Writer.Size())), nil
}
