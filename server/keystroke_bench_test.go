package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// BenchmarkKeystrokeWrite is the last hop of a keystroke's path: the connection's
// writer putting a keystroke's terminal/data frame on a real WebSocket over loopback,
// read by a client on the other end.
func BenchmarkKeystrokeWrite(b *testing.B) {
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
