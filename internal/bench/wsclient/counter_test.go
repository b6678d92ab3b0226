package wsclient

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/messages"
)

// escapedLen must agree with decoding the string, for what the host escapes and for
// what a JSON encoder may write beside it.
func TestEscapedLenAsDecoding(t *testing.T) {
	for _, s := range []string{
		"", "abc", "a\r\nb", `"\`, "\x1b[0m", "é", "😀", "\u2028", "\x00\x7f",
		strings.Repeat("QUJD", 40) + "\r\n", "<>&", "\ufffd", string([]byte{0xff, 'a'}),
	} {
		enc, _ := json.Marshal(s)
		inside := enc[1 : len(enc)-1]
		var dec string
		_ = json.Unmarshal(enc, &dec)
		if n, ok := escapedLen(inside); !ok || n != len(dec) {
			t.Errorf("escapedLen(%s) = %d, %v; want %d", inside, n, ok, len(dec))
		}
	}
	for _, in := range []string{`\ud83d\ude00`, `\u00e9`, `\/`, `\b\f\t`} {
		var dec string
		if err := json.Unmarshal([]byte(`"`+in+`"`), &dec); err != nil {
			t.Fatal(err)
		}
		if n, ok := escapedLen([]byte(in)); !ok || n != len(dec) {
			t.Errorf("escapedLen(%s) = %d, %v; want %d", in, n, ok, len(dec))
		}
	}
	for _, bad := range []string{`a"b`, `\`, `\x`, `\u12`, `\u12g4`, `ab\`} {
		if _, ok := escapedLen([]byte(bad)); ok {
			t.Errorf("escapedLen(%s) took it", bad)
		}
	}
}

func TestDataFrameLen(t *testing.T) {
	prefix := messages.DataFramePrefix("term://a")
	data := strings.Repeat("QUJD\r\n", 100) + "\x1b[0m😀\""
	f := messages.DataFrame("term://a", data, 42)
	n, seq, err := dataFrameLen(f, prefix)
	if err != nil || n != len(data) || seq != 42 {
		t.Fatalf("dataFrameLen = %d, %d, %v; want %d, 42", n, seq, err, len(data))
	}
	for _, bad := range [][]byte{
		f[:len(f)-1], // no closing braces
		bytes.Replace(f, []byte(`42}}`), []byte(`x}}`), 1),              // no number
		append(append([]byte{}, prefix...), `a"b"},"serverSeq":1}}`...), // a bare quote
	} {
		if _, _, err := dataFrameLen(bad, prefix); err == nil {
			t.Errorf("dataFrameLen(%s) took it", bad)
		}
	}
}

// serverFrame is an unmasked frame as a host writes it.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, byte(n))
	case n <= 0xffff:
		f = append(f, 126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	return append(f, payload...)
}

// readClientFrame reads one masked frame as a host would, unmasked.
func readClientFrame(t *testing.T, c net.Conn) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := c.Read(h[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(h[1:]); err != nil {
		t.Fatal(err)
	}
	if h[1]&0x80 == 0 {
		t.Fatal("a client frame without a mask")
	}
	n := int(h[1] & 0x7f)
	if n >= 126 {
		t.Fatal("test frames are short")
	}
	rest := make([]byte, 4+n)
	for got := 0; got < len(rest); {
		m, err := c.Read(rest[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += m
	}
	p := rest[4:]
	for i := range p {
		p[i] ^= rest[i&3]
	}
	return h[0] & 0x0f, p
}

// The counter's framing: a fragmented message, a ping between the fragments
// answered, frames larger than its buffer, data out of order refused, and a close.
func TestCounterFraming(t *testing.T) {
	host, client := net.Pipe()
	defer host.Close()
	c := &Counter{conn: client, channel: "term://a", prefix: messages.DataFramePrefix("term://a"), buf: make([]byte, 64)}
	big := strings.Repeat("x", 300)
	exited, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "action", "params": map[string]any{
		"channel": "term://a", "action": map[string]any{"type": messages.TerminalExited}, "serverSeq": 9}})
	go func() {
		w := func(b []byte) { _, _ = host.Write(b) }
		w(serverFrame(true, opText, messages.DataFrame("term://a", "ab\r\n", 1)))
		f := messages.DataFrame("term://a", big, 2)
		w(serverFrame(false, opText, f[:10]))
		w(serverFrame(true, opPing, []byte("hi")))
		w(serverFrame(true, opContinuation, f[10:]))
		w(serverFrame(true, opText, exited))
	}()
	done := make(chan End, 1)
	go func() { done <- c.Drain(context.Background(), nil) }()
	op, p := readClientFrame(t, host)
	if op != opPong || string(p) != "hi" {
		t.Fatalf("got opcode %d %q, want the pong", op, p)
	}
	end := <-done
	if !end.Exited || end.Bytes != int64(4+len(big)) || end.Err != nil {
		t.Fatalf("end = %+v", end)
	}

	// Out of order, then a close frame.
	c.seen, c.last = true, 5
	go func() { _, _ = host.Write(serverFrame(true, opText, messages.DataFrame("term://a", "x", 5))) }()
	if end := c.Drain(context.Background(), nil); end.Err == nil || !strings.Contains(end.Err.Error(), "out of order") {
		t.Fatalf("end = %+v", end)
	}
	go func() { _, _ = host.Write(serverFrame(true, opClose, append([]byte{0x03, 0xf0}, "too slow"...))) }()
	go func() { _, _ = io.Copy(io.Discard, host) }() // the close's answer
	end = c.Drain(context.Background(), nil)
	if end.CloseCode != 1008 || end.CloseReason != "too slow" {
		t.Fatalf("end = %+v", end)
	}
}

// A drain waiting on a quiet connection ends with its context.
func TestCounterContext(t *testing.T) {
	host, client := net.Pipe()
	defer host.Close()
	c := &Counter{conn: client, channel: "term://a", prefix: messages.DataFramePrefix("term://a"), buf: make([]byte, 64)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	end := c.Drain(ctx, nil)
	if !errors.Is(end.Err, context.DeadlineExceeded) || end.CloseCode != -1 {
		t.Fatalf("end = %+v", end)
	}
}
