package wsclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/messages"
)

// Stream is a subscriber that only counts: a bare WebSocket that initializes with one
// subscription and then reads frames, measuring each terminal/data's decoded length
// with one pass over the frame instead of decoding it. Package client decodes every
// frame three times over, which on a shared 2-core machine would measure the client
// more than the host; a real viewer's cost is its own.
type Stream struct {
	ws      *websocket.Conn
	channel string
	// dataPrefix is how the host begins a terminal/data frame on this channel;
	// a frame that begins otherwise takes the decoding path.
	dataPrefix []byte
	buf        bytes.Buffer
	// answer is the initialize's answer, which holds the channel's snapshot: what
	// the terminal printed before the stream subscribed is there, not in a frame
	// after it.
	answer []byte
	// exited is set when the channel had exited before the subscription.
	exited *exitedSnapshot
}

// End is how a Stream's or a Counter's reading ended.
type End struct {
	Bytes  int64 // decoded terminal/data bytes
	Frames int
	Exited bool // terminal/exited arrived
	// CloseCode and CloseReason are the host's close frame; CloseCode is -1 when the
	// connection ended without one.
	CloseCode   int
	CloseReason string
	Err         error
	// Before says the terminal had exited before the stream subscribed: its snapshot
	// said so, and no terminal/exited will come. Exited is set with it, and Err says
	// how it ended, with the last line it printed (a shell that could not start says
	// why there).
	Before bool
}

// endedBefore is the End of a stream whose channel had exited when it subscribed.
func endedBefore(e *exitedSnapshot) End {
	return End{CloseCode: -1, Exited: true, Before: true,
		Err: fmt.Errorf("the terminal had exited (code %s) before the stream subscribed: %q", e.code, e.lastLine)}
}

// exitedSnapshot is what an initialize's answer says of a channel that had exited.
type exitedSnapshot struct {
	code     string // the exit code, or "none"
	lastLine string // the last line of what it printed
}

// exitedIn reads the initialize answer frame for channel's snapshot and says
// whether the terminal had already exited, and how.
func exitedIn(frame []byte, channel string) *exitedSnapshot {
	var r struct {
		Result struct {
			Snapshots []struct {
				Resource string                 `json:"resource"`
				State    messages.TerminalState `json:"state"`
			} `json:"snapshots"`
		} `json:"result"`
	}
	if channel == "" || json.Unmarshal(frame, &r) != nil {
		return nil
	}
	for _, s := range r.Result.Snapshots {
		if s.Resource != channel {
			continue
		}
		st := s.State
		if st.ExitCode == nil && (st.Lifecycle == nil || st.Lifecycle.Status != messages.StatusExited) {
			return nil
		}
		e := &exitedSnapshot{code: "none"}
		if code := st.ExitCode; code != nil || st.Lifecycle != nil && st.Lifecycle.ExitCode != nil {
			if code == nil {
				code = st.Lifecycle.ExitCode
			}
			e.code = strconv.Itoa(*code)
		}
		lines := strings.Split(strings.TrimRight(st.Text(), "\r\n"), "\n")
		e.lastLine = strings.TrimSpace(lines[len(lines)-1])
		return e
	}
	return nil
}

// initializeFrame is the initialize request (id 1) of a client that subscribes to
// channel at once; channel "" subscribes to nothing (a connection that subscribes
// later, or never).
func initializeFrame(clientID, channel string) []byte {
	subs := []string{channel}
	if channel == "" {
		subs = []string{}
	}
	init, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{
			"channel": messages.RootURI, "protocolVersions": []string{"1.0.0", "0.9.0"},
			"clientId": clientID, "initialSubscriptions": subs,
		},
	})
	return init
}

// initializeAnswer reads a frame while a stream waits for its initialize's answer
// (id 1): whether this is it, and the host's error if it refused.
func initializeAnswer(frame []byte) (answered bool, err error) {
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *messages.Error `json:"error"`
	}
	if json.Unmarshal(frame, &r) != nil || string(r.ID) != "1" {
		return false, nil
	}
	if r.Error != nil {
		return true, fmt.Errorf("bench: initialize: %w", r.Error)
	}
	return true, nil
}

// countOther takes a frame the fast path did not: a terminal/data of channel counts
// its decoded bytes, and a terminal/exited of it ends the stream (true). Anything
// else (another channel, a rejection, a frame that is not an action) is passed by.
func (end *End) countOther(frame []byte, channel string) (exited bool) {
	var f struct {
		Method string `json:"method"`
		Params struct {
			Channel         string          `json:"channel"`
			Action          messages.Action `json:"action"`
			RejectionReason string          `json:"rejectionReason"`
		} `json:"params"`
	}
	if json.Unmarshal(frame, &f) != nil || f.Method != "action" || f.Params.Channel != channel || f.Params.RejectionReason != "" {
		return false
	}
	switch f.Params.Action.Type {
	case messages.TerminalData:
		if f.Params.Action.Data != nil {
			end.Bytes += int64(len(*f.Params.Action.Data))
		}
	case messages.TerminalExited:
		end.Exited = true
		return true
	}
	return false
}

// DialStream connects to t, initializes as clientID with channel as its one
// subscription ("" subscribes to nothing) and waits for the answer.
func DialStream(ctx context.Context, t Target, clientID, channel string) (*Stream, error) {
	u, err := t.DialURL()
	if err != nil {
		return nil, err
	}
	ws, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", t.URL, err)
	}
	ws.SetReadLimit(64 << 20)
	s := &Stream{ws: ws, channel: channel, dataPrefix: messages.DataFramePrefix(channel)}
	if err := ws.Write(ctx, websocket.MessageText, initializeFrame(clientID, channel)); err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("bench: initialize: %w", err)
	}
	// The answer comes before any of the channel's actions (the host holds them
	// until the snapshot is queued).
	for {
		frame, err := s.read(ctx)
		if err != nil {
			_ = ws.CloseNow()
			return nil, fmt.Errorf("bench: initialize: %w", err)
		}
		answered, err := initializeAnswer(frame)
		if err != nil {
			_ = ws.CloseNow()
			return nil, err
		}
		if answered {
			s.answer = append([]byte(nil), frame...)
			s.exited = exitedIn(frame, channel)
			return s, nil
		}
	}
}

// read reads one frame into the stream's buffer; the slice is valid until the next read.
func (s *Stream) read(ctx context.Context) ([]byte, error) {
	_, r, err := s.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	s.buf.Reset()
	if _, err := s.buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return s.buf.Bytes(), nil
}

// Drain reads until terminal/exited on the channel, or until the connection ends.
// onData, if set, is told the running byte count after every terminal/data.
func (s *Stream) Drain(ctx context.Context, onData func(total int64)) End {
	if s.exited != nil {
		return endedBefore(s.exited)
	}
	var end End
	for {
		frame, err := s.read(ctx)
		if err != nil {
			end.Err = err
			end.CloseCode = int(websocket.CloseStatus(err))
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				end.CloseReason = ce.Reason
			}
			return end
		}
		end.Frames++
		if bytes.HasPrefix(frame, s.dataPrefix) {
			if n, ok := jsonStringLen(frame[len(s.dataPrefix):]); ok {
				end.Bytes += int64(n)
				if onData != nil {
					onData(end.Bytes)
				}
				continue
			}
		}
		if end.countOther(frame, s.channel) {
			return end
		}
	}
}

// Close closes the connection with a normal closure.
func (s *Stream) Close() { _ = s.ws.Close(websocket.StatusNormalClosure, "") }

// Answer is the initialize's answer, which holds the subscribed channel's snapshot.
func (s *Stream) Answer() []byte { return s.answer }

// WS is the stream's WebSocket, for a caller that writes its own frames on it and
// reads them back itself instead of calling Drain.
func (s *Stream) WS() *websocket.Conn { return s.ws }

// jsonStringLen is the decoded length in bytes of the JSON string that b starts inside
// (just after its opening quote), and whether its closing quote was found.
func jsonStringLen(b []byte) (int, bool) {
	n := 0
	for i := 0; i < len(b); {
		// The next backslash, then a quote before it: two vectorised scans of the run
		// between escapes, where IndexAny looks at each byte in turn. The subscribers
		// share the CPUs with the host, so their reading must cost little.
		seg := b[i:]
		j := bytes.IndexByte(seg, '\\')
		if j >= 0 {
			seg = seg[:j]
		}
		if q := bytes.IndexByte(seg, '"'); q >= 0 {
			return n + q, true
		}
		if j < 0 {
			return n, false
		}
		n += j
		i += j
		if i+1 >= len(b) {
			return n, false
		}
		if b[i+1] != 'u' {
			n++ // \n, \r, \t, \", \\, \/, \b, \f
			i += 2
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return n, false
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if r2, ok := hex4(b, i+2); ok && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					n += utf8.RuneLen(dec)
					i += 6
					continue
				}
			}
			r = utf8.RuneError
		}
		n += utf8.RuneLen(r)
	}
	return n, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(v), err == nil
}
