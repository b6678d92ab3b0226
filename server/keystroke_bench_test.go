package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsPair is a server-side WebSocket over loopback, accepted through the corking
// writer as serveWebSocket does, with a client on the other end reading everything.
func wsPair(b *testing.B) (*websocket.Conn, *corkConn) {
	accepted := make(chan *corkingWriter, 1)
	conns := make(chan *websocket.Conn, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &corkingWriter{ResponseWriter: w, writeTimeout: 30 * time.Second}
		c, err := websocket.Accept(cw, r, nil)
		if err != nil {
			return
		}
		accepted <- cw
		conns <- c
		<-done
	}))
	b.Cleanup(srv.Close)
	b.Cleanup(func() { close(done) })
	ctx := context.Background()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.CloseNow() })
	go func() {
		for {
			if _, _, err := client.Read(ctx); err != nil {
				return
			}
		}
	}()
	cw := <-accepted
	c := <-conns
	b.Cleanup(func() { _ = c.CloseNow() })
	return c, cw.conn
}

// BenchmarkBatchWrite is the writer's batch of eight keystroke-sized frames (what an
// outbox holds after a burst), written corked in one socket write, and one write per
// frame as the library does alone.
func BenchmarkBatchWrite(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-terminal:/bench-t1","action":{"type":"terminal/data","data":"l"},"serverSeq":1001}}`)
	batch := make([][]byte, 8)
	for i := range batch {
		batch[i] = frame
	}
	s := &Server{cfg: Config{WriteTimeout: 30 * time.Second}}
	for _, mode := range []string{"corked", "per-frame"} {
		b.Run(mode, func(b *testing.B) {
			c, cork := wsPair(b)
			if mode == "per-frame" {
				cork = nil
			}
			b.SetBytes(int64(len(frame) * len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.writeBatch(context.Background(), c, cork, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKeystrokeSocketWrite is the last hop of a keystroke's path: the connection's
// writer putting a keystroke's terminal/data frame on a real WebSocket over loopback,
// read by a client on the other end.
func BenchmarkKeystrokeSocketWrite(b *testing.B) {
	accepted := make(chan *websocket.Conn, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
		<-done
	}))
	defer srv.Close()
	defer close(done)
	ctx := context.Background()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer client.CloseNow()
	go func() {
		for {
			if _, _, err := client.Read(ctx); err != nil {
				return
			}
		}
	}()
	c := <-accepted
	defer c.CloseNow()
	frame := []byte(`{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-terminal:/bench-t1","action":{"type":"terminal/data","data":"l"},"serverSeq":1001}}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
	}
}
