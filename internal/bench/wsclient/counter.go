package wsclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/termhost/termhost/messages"
)

// Counter is a flood's subscriber: a WebSocket read straight off its TCP connection
// (RFC 6455 framing parsed here, not by a library), that counts every terminal/data
// of its channel and checks that they come in order.
//
// The floods' subscribers share two CPUs with the host they measure; with 50 of them
// (the fanout scenario) their reading took as much CPU as the host (issue 13's fifth
// pass). So the reading costs what a client's must and no more: one read(2) takes
// whatever the socket holds into a buffer of counterBuffer bytes (several frames at
// once when they are there, where the library read a frame's header through a 4 KiB
// buffer and its payload into a buffer of its own, a context set up per frame), and
// a terminal/data frame is parsed from its known layout rather than decoded:
//
//   - it must begin with the channel's terminal/data prefix (so it is that
//     terminal's data) and end with `"},"serverSeq":N}}`;
//   - N must be greater than the previous terminal/data's (in order, none replayed);
//   - the data between is scanned for escapes, each of which must be one JSON allows,
//     and no quote may stand unescaped in it; what is counted is its decoded length.
//
// Every other frame is decoded as JSON, as before.
type Counter struct {
	conn    net.Conn
	channel string
	prefix  []byte // the channel's terminal/data frames begin so

	buf  []byte // buf[r:w] is read and not yet parsed
	r, w int
	msg  []byte // a fragmented message's payload so far
	last uint64 // the serverSeq of the last terminal/data counted
	seen bool   // last is set
	// exited is set when the channel had exited before the subscription.
	exited *exitedSnapshot
}

// counterBuffer is each subscriber's read buffer: a flood's frames are up to 64 KiB
// of output (the pty reader's gather), escaped, so a read takes one or more whole.
const counterBuffer = 256 << 10

// counterReadLimit bounds a message, as the library's SetReadLimit did.
const counterReadLimit = 64 << 20

// DialCounter connects to t, initializes as clientID with channel as its one
// subscription and waits for the answer; channel "" subscribes to nothing.
func DialCounter(ctx context.Context, t Target, clientID, channel string) (*Counter, error) {
	u, err := t.DialURL()
	if err != nil {
		return nil, err
	}
	conn, rest, err := dialWebSocket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", t.URL, err)
	}
	c := &Counter{conn: conn, channel: channel, prefix: messages.DataFramePrefix(channel), buf: make([]byte, counterBuffer)}
	c.w = copy(c.buf, rest)
	stop := c.bind(ctx)
	defer stop()
	if err := c.write(opText, initializeFrame(clientID, channel)); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("bench: initialize: %w", err)
	}
	for {
		frame, err := c.next()
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("bench: initialize: %w", ctxErr(ctx, err))
		}
		answered, err := initializeAnswer(frame)
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		if answered {
			c.exited = exitedIn(frame, channel)
			return c, nil
		}
	}
}

// bind makes ctx's end end a blocked read; the returned func undoes it.
func (c *Counter) bind(ctx context.Context) func() {
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// ctxErr prefers the context's error to the deadline it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, errDeadline) {
		return ctx.Err()
	}
	return err
}

var errDeadline = errors.New("i/o deadline")

// counterClosed is the host's close frame.
type counterClosed struct {
	code   int
	reason string
}

func (e *counterClosed) Error() string {
	return fmt.Sprintf("closed by the host: status %d, reason %q", e.code, e.reason)
}

// Drain reads until terminal/exited on the channel, or until the connection ends.
// onData, if set, is told the running byte count after every terminal/data.
func (c *Counter) Drain(ctx context.Context, onData func(total int64)) End {
	if c.exited != nil {
		return endedBefore(c.exited)
	}
	stop := c.bind(ctx)
	defer stop()
	end := End{CloseCode: -1}
	for {
		frame, err := c.next()
		if err != nil {
			end.Err = ctxErr(ctx, err)
			var ce *counterClosed
			if errors.As(err, &ce) {
				end.CloseCode, end.CloseReason = ce.code, ce.reason
			}
			return end
		}
		end.Frames++
		if bytes.HasPrefix(frame, c.prefix) {
			n, seq, err := dataFrameLen(frame, c.prefix)
			if err != nil {
				end.Err = fmt.Errorf("bench: a terminal/data frame of %s: %w", c.channel, err)
				return end
			}
			if c.seen && seq <= c.last {
				end.Err = fmt.Errorf("bench: terminal/data of %s out of order: serverSeq %d after %d", c.channel, seq, c.last)
				return end
			}
			c.last, c.seen = seq, true
			end.Bytes += int64(n)
			if onData != nil {
				onData(end.Bytes)
			}
			continue
		}
		if end.countOther(frame, c.channel) {
			return end
		}
	}
}

// Close sends a normal closure and closes the connection.
func (c *Counter) Close() {
	var p [2]byte
	binary.BigEndian.PutUint16(p[:], 1000)
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = c.write(opClose, p[:])
	_ = c.conn.Close()
}

// dataFrameLen is the decoded length of a terminal/data frame's data and its
// serverSeq; the frame begins with prefix (its data's opening quote included).
func dataFrameLen(f, prefix []byte) (int, uint64, error) {
	tail := bytes.LastIndex(f, []byte(`"},"serverSeq":`))
	if tail < len(prefix) || len(f) < tail+len(`"},"serverSeq":`)+3 || !bytes.HasSuffix(f, []byte("}}")) {
		return 0, 0, errors.New("not laid out as the host writes it")
	}
	seq, err := strconv.ParseUint(string(f[tail+len(`"},"serverSeq":`):len(f)-2]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("its serverSeq: %w", err)
	}
	n, ok := escapedLen(f[len(prefix):tail])
	if !ok {
		return 0, 0, errors.New("its data is not a JSON string's inside")
	}
	return n, seq, nil
}

// escapedLen is the decoded length of s, the inside of a JSON string, and whether
// every escape in it is one JSON allows and every quote is escaped. It looks at the
// bytes between escapes only through vectorised scans (one count of the quotes, one
// search per escape, none for an escape right behind another, as in a line's \r\n).
func escapedLen(s []byte) (int, bool) {
	n := len(s)
	quotes := bytes.Count(s, []byte{'"'})
	for i := 0; ; {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			return n, quotes == 0
		}
		i += j
		for i < len(s) && s[i] == '\\' {
			if i+1 >= len(s) {
				return 0, false
			}
			switch s[i+1] {
			case '"':
				quotes--
				n--
				i += 2
			case '\\', '/', 'b', 'f', 'n', 'r', 't':
				n--
				i += 2
			case 'u':
				r, ok := hexRune(s, i+2)
				if !ok {
					return 0, false
				}
				used := 6
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if i+7 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
						r2, ok = hexRune(s, i+8)
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r, used = dec, 12
					} else {
						r = utf8.RuneError
					}
				}
				n -= used - utf8.RuneLen(r)
				i += used
			default:
				return 0, false
			}
		}
	}
}

// hexRune reads four hex digits at s[at:].
func hexRune(s []byte, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var v rune
	for _, b := range s[at : at+4] {
		switch {
		case b >= '0' && b <= '9':
			v = v<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			v = v<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			v = v<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// WebSocket opcodes (RFC 6455 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// next is the next message's payload, valid until the next call. Pings are answered,
// pongs skipped, a close frame is answered and returned as *counterClosed.
func (c *Counter) next() ([]byte, error) {
	c.msg = c.msg[:0]
	fragmented := false
	for {
		fin, op, payload, err := c.frame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := c.write(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			ce := &counterClosed{code: 1005}
			if len(payload) >= 2 {
				ce.code = int(binary.BigEndian.Uint16(payload))
				ce.reason = string(payload[2:])
			}
			_ = c.write(opClose, payload[:min(2, len(payload))])
			return nil, ce
		case opText, opBinary:
			if fragmented {
				return nil, errors.New("bench: a new message inside a fragmented one")
			}
			if fin {
				return payload, nil
			}
			fragmented = true
			c.msg = append(c.msg, payload...)
		case opContinuation:
			if !fragmented {
				return nil, errors.New("bench: a continuation frame outside a message")
			}
			if len(c.msg)+len(payload) > counterReadLimit {
				return nil, errors.New("bench: a message over the read limit")
			}
			c.msg = append(c.msg, payload...)
			if fin {
				return c.msg, nil
			}
		default:
			return nil, fmt.Errorf("bench: unknown opcode %d", op)
		}
	}
}

// frame parses one frame off the buffer, reading as needed; payload is valid until
// the next call.
func (c *Counter) frame() (fin bool, op byte, payload []byte, err error) {
	if err := c.need(2); err != nil {
		return false, 0, nil, err
	}
	b0, b1 := c.buf[c.r], c.buf[c.r+1]
	if b1&0x80 != 0 {
		return false, 0, nil, errors.New("bench: a masked frame from the host")
	}
	head, size := 2, uint64(b1&0x7f)
	switch size {
	case 126:
		head = 4
	case 127:
		head = 10
	}
	if err := c.need(head); err != nil {
		return false, 0, nil, err
	}
	switch head {
	case 4:
		size = uint64(binary.BigEndian.Uint16(c.buf[c.r+2:]))
	case 10:
		size = binary.BigEndian.Uint64(c.buf[c.r+2:])
	}
	if size > counterReadLimit {
		return false, 0, nil, fmt.Errorf("bench: a frame of %d bytes, over the read limit", size)
	}
	if err := c.need(head + int(size)); err != nil {
		return false, 0, nil, err
	}
	payload = c.buf[c.r+head : c.r+head+int(size)]
	c.r += head + int(size)
	return b0&0x80 != 0, b0 & 0x0f, payload, nil
}

// need reads until the buffer holds n unparsed bytes, moving them to its start (or
// into a larger buffer) when they would not fit. Each read takes all the socket has
// that fits.
func (c *Counter) need(n int) error {
	for c.w-c.r < n {
		if c.r+n > len(c.buf) {
			if n > len(c.buf) {
				nb := make([]byte, max(n, 2*len(c.buf)))
				c.w = copy(nb, c.buf[c.r:c.w])
				c.buf = nb
			} else {
				c.w = copy(c.buf, c.buf[c.r:c.w])
			}
			c.r = 0
		}
		m, err := c.conn.Read(c.buf[c.w:])
		c.w += m
		if err != nil && c.w-c.r < n {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return errDeadline
			}
			return err
		}
	}
	return nil
}

// write sends one masked frame (a client's frames are masked, RFC 6455 5.3).
func (c *Counter) write(op byte, payload []byte) error {
	f := make([]byte, 0, 14+len(payload))
	f = append(f, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	f = append(f, key[:]...)
	for i, b := range payload {
		f = append(f, b^key[i&3])
	}
	_, err := c.conn.Write(f)
	return err
}

// dialWebSocket opens a TCP (wss: TLS) connection to rawURL and makes the opening
// handshake (RFC 6455 4.1); rest is what the host sent after its answer's head.
func dialWebSocket(ctx context.Context, rawURL string) (conn net.Conn, rest []byte, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "wss" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	switch u.Scheme {
	case "ws":
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", host)
	case "wss":
		d := tls.Dialer{Config: &tls.Config{ServerName: u.Hostname()}}
		conn, err = d.DialContext(ctx, "tcp", host)
	default:
		return nil, nil, fmt.Errorf("not a WebSocket URL: %s", rawURL)
	}
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = conn.Close()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
		defer func() { _ = conn.SetDeadline(time.Time{}) }()
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, nil, fmt.Errorf("the handshake was answered %s", resp.Status)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		return nil, nil, errors.New("the handshake's Sec-WebSocket-Accept does not match its key")
	}
	rest, _ = br.Peek(br.Buffered())
	return conn, bytes.Clone(rest), nil
}
