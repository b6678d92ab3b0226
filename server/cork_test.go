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
