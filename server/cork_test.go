package server

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestCorkKeepsOrder: what is written while corked, small writes gathered and a large
// one sent behind them at once, reaches the peer whole and in the order written.
func TestCorkKeepsOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := &corkConn{Conn: nc, writeTimeout: 20 * time.Second}
	large := bytes.Repeat([]byte("L"), corkGather+1)
	var want []byte
	write := func(p []byte) {
		t.Helper()
		if n, err := c.Write(p); err != nil || n != len(p) {
			t.Fatalf("write of %d bytes: %d, %v", len(p), n, err)
		}
		want = append(want, p...)
	}
	write([]byte("before the batch;"))
	c.cork()
	write([]byte("first;"))
	write([]byte("second;"))
	write(large)
	write([]byte("third;"))
	write(bytes.Repeat([]byte("M"), 3*corkGather))
	write(bytes.Repeat([]byte("N"), corkGather+7))
	write([]byte("fourth;"))
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	write([]byte("after the batch"))
	_ = nc.Close()
	select {
	case b := <-got:
		if !bytes.Equal(b, want) {
			t.Fatalf("the peer read %d bytes, not the %d written in order:\n%.200q", len(b), len(want), b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the peer read nothing")
	}
}

// TestUncorkReportsAFailedWrite: a batch that cannot be sent is an error for the writer.
func TestUncorkReportsAFailedWrite(t *testing.T) {
	a, b := net.Pipe()
	_ = b.Close()
	c := &corkConn{Conn: a}
	c.cork()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatalf("a corked write failed: %v", err)
	}
	if err := c.uncork(); err == nil {
		t.Fatal("the batch's write to a closed peer reported no error")
	}
}

// recordingConn is a net.Conn that records what each Write was given.
type recordingConn struct {
	net.Conn
	writes [][]byte
}

func (r *recordingConn) Write(p []byte) (int, error) {
	r.writes = append(r.writes, append([]byte(nil), p...))
	return len(p), nil
}

// TestCorkHoldsLargeWrites: while corked, even a flood's frames are held, so a batch
// of several goes out at the uncork together (one writev on a socket), and after it the
// connection holds no reference to them.
func TestCorkHoldsLargeWrites(t *testing.T) {
	rec := &recordingConn{}
	c := &corkConn{Conn: rec, bufSize: 4096}
	c.cork()
	var want []byte
	for i, p := range [][]byte{[]byte("head"), bytes.Repeat([]byte("A"), 2*corkGather), []byte("mid"), bytes.Repeat([]byte("B"), corkGather+1), bytes.Repeat([]byte("C"), corkGather+1)} {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		if len(rec.writes) != 0 {
			t.Fatalf("write %d reached the connection before the uncork", i)
		}
		want = append(want, p...)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	if got := bytes.Join(rec.writes, nil); !bytes.Equal(got, want) {
		t.Fatalf("the uncork wrote %d bytes, not the %d held in order", len(got), len(want))
	}
	if len(c.parts) != 0 || c.cut != 0 || len(c.held) != 0 {
		t.Fatalf("after the uncork: %d parts, cut %d, %d bytes held", len(c.parts), c.cut, len(c.held))
	}
	for _, p := range c.parts[:cap(c.parts)] {
		if p != nil {
			t.Fatal("the connection still points at a written frame")
		}
	}
	// Uncorked, a large write goes straight through.
	before := len(rec.writes)
	if _, err := c.Write(bytes.Repeat([]byte("D"), 2*corkGather)); err != nil || len(rec.writes) != before+1 {
		t.Fatalf("an uncorked large write: %v", err)
	}
}
