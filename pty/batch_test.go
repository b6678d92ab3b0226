//go:build linux

package pty

import (
	"bytes"
	"os"
	"testing"
)

func pipePair(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// A keystroke's echo is handed over as it is, not held for more.
func TestBatchReaderHandsOverASmallReadAtOnce(t *testing.T) {
	r, w := pipePair(t)
	if _, err := w.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	n, err := newBatchReader(r).Read(buf)
	if err != nil || string(buf[:n]) != "a" {
		t.Fatalf("Read = %q, %v; want \"a\"", buf[:n], err)
	}
}

// Reads through the gathering path (a flood-sized first read, then the wait for
// more) never return more than the buffer holds and lose or reorder nothing. That
// the gathering merges chunks which arrive apart depends on timing, and is shown by
// the bench's bytes per frame, not here.
func TestBatchReaderKeepsEveryByteInOrder(t *testing.T) {
	r, w := pipePair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	br := newBatchReader(r)
	var got []byte
	buf := make([]byte, 20000)
	for len(got) < len(want) {
		n, err := br.Read(buf)
		if err != nil {
			t.Fatalf("Read after %d bytes: %v", len(got), err)
		}
		if n > len(buf) {
			t.Fatalf("Read returned %d for a %d-byte buffer", n, len(buf))
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the bytes written")
	}
}

// The end of the output that comes while a flood is gathered is reported by the
// next Read, after the data.
func TestBatchReaderReportsTheEndAfterTheData(t *testing.T) {
	r, w := pipePair(t)
	want := bytes.Repeat([]byte("x"), 3000)
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	br := newBatchReader(r)
	buf := make([]byte, 64<<10)
	n, err := br.Read(buf)
	if err != nil || n != len(want) {
		t.Fatalf("Read = %d, %v; want %d bytes", n, err, len(want))
	}
	if n, err := br.Read(buf); n != 0 || err == nil {
		t.Fatalf("Read after the end = %d, %v; want 0 and EOF", n, err)
	}
}
