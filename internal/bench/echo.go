package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/termhost/termhost/internal/bench/raw"
	"github.com/termhost/termhost/internal/bench/report"
	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
)

// The echo terminal runs cat with the terminal in raw mode, so each keystroke goes to
// cat at once and comes back because cat wrote it, not because the line discipline
// echoed it. On pipes there is no line discipline and cat echoes as it is.
const (
	echoCommandPty   = "stty raw -echo; echo ready; exec cat"
	echoCommandPipes = "echo ready; exec cat"
)

// echoWarmup keystrokes go first and are not timed.
const echoWarmup = 20

func echoSummary(s Sizes) string {
	return fmt.Sprintf("%d keystrokes, each sent as terminal/input to a terminal running cat and timed until it is back in terminal/data, taking turns with a WebSocket ping and a keystroke through cat on a local pty (pipes when the host uses pipes): the floor is ping + raw", s.EchoKeys)
}

func (e *env) echoCommand() string {
	if e.pty {
		return echoCommandPty
	}
	return echoCommandPipes
}

// keyFor is the i-th keystroke: letters in turn, so a late echo is never taken for
// the one awaited.
func keyFor(i int) byte { return 'a' + byte(i%26) }

// The echo scenario's figures. A keystroke through the host holds two things the host
// cannot make faster: a WebSocket round trip and the pseudoterminal's round trip through
// cat. Their sum, measured in the same rounds, is the floor (issue 13): a WebSocket
// control-frame ping (answered by the host's socket reader, with no actor in the way)
// plus the raw keystroke. The three take turns, one each per round, so a burst of other
// work on the machine lands on all of them alike.
func runEcho(ctx context.Context, e *env, r *report.Result) error {
	keys := e.sizes.EchoKeys
	r.Params["keystrokes"] = keys
	r.Params["command"] = e.echoCommand()

	raw, err := e.startRawEcho()
	if err != nil {
		return err
	}
	defer raw.close()
	h, err := e.openHostEcho(ctx)
	if err != nil {
		return err
	}
	defer h.close(ctx)

	var hostTimes, pings, rawTimes, floors []time.Duration
	var sent atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("echo: %d of %d rounds", sent.Load(), keys+echoWarmup) })
	for i := range keys + echoWarmup {
		sent.Store(int64(i))
		key := keyFor(i)
		ht, err := h.keystroke(ctx, key)
		if err != nil {
			stop()
			return fmt.Errorf("keystroke %d: %w", i, err)
		}
		pt, err := h.wsPing(ctx)
		if err != nil {
			stop()
			return fmt.Errorf("ping %d: %w", i, err)
		}
		rt, err := raw.keystroke(key)
		if err != nil {
			stop()
			return fmt.Errorf("raw: keystroke %d: %w", i, err)
		}
		if i >= echoWarmup {
			hostTimes, pings, rawTimes = append(hostTimes, ht), append(pings, pt), append(rawTimes, rt)
			floors = append(floors, pt+rt)
		}
	}
	stop()

	hm, hp := percentile(hostTimes, 0.5), percentile(hostTimes, 0.99)
	fm, fp := percentile(floors, 0.5), percentile(floors, 0.99)
	// The raw figure beside the round trip is the floor, ping + cat, from the same
	// rounds; the targets are ratios to it.
	f := r.Add(report.Figure{Name: "round trip, median", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(fm.Seconds())
	f.Judge("≤ 1.15 × floor (WebSocket ping + raw)", f.Ratio != nil && *f.Ratio <= 1.15)
	f = r.Add(report.Figure{Name: "round trip, p99", Value: hp.Seconds(), Unit: report.UnitSeconds}).WithRaw(fp.Seconds())
	f.Judge("≤ 1.5 × floor's p99", f.Ratio != nil && *f.Ratio <= 1.5)
	r.Add(report.Figure{Name: "round trip, median, against cat alone", Value: hm.Seconds(), Unit: report.UnitSeconds}).WithRaw(percentile(rawTimes, 0.5).Seconds())
	r.Add(report.Figure{Name: "round trip, max", Value: slices.Max(hostTimes).Seconds(), Unit: report.UnitSeconds}).WithRaw(slices.Max(floors).Seconds())
	r.Add(report.Figure{Name: "floor: WebSocket ping, median", Value: percentile(pings, 0.5).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "floor: WebSocket ping, p99", Value: percentile(pings, 0.99).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "floor: raw pty round trip, median", Value: percentile(rawTimes, 0.5).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "floor: raw pty round trip, p99", Value: percentile(rawTimes, 0.99).Seconds(), Unit: report.UnitSeconds})
	r.Add(report.Figure{Name: "host's own part, median (round trip − floor)", Value: (hm - fm).Seconds(), Unit: report.UnitSeconds})

	// An AHP ping request: the socket, the connection's handling and the writer, with
	// no terminal.
	var ahp []time.Duration
	for range min(keys, 200) {
		d, err := h.ahpPing(ctx)
		if err != nil {
			return fmt.Errorf("AHP ping: %w", err)
		}
		ahp = append(ahp, d)
	}
	r.Add(report.Figure{Name: "AHP ping request, median", Value: percentile(ahp, 0.5).Seconds(), Unit: report.UnitSeconds})

	// CPU per keystroke, each side metered on its own (the rounds above mix them).
	if !e.cfg.InProcess {
		n := max(keys/2, 50)
		hostCPU := meterCPU(e.pid)
		for i := range n {
			if _, err := h.keystroke(ctx, keyFor(i)); err != nil {
				return err
			}
		}
		hostCPU.stop()
		rawCPU := meterCPU(os.Getpid()) // the raw loop is this process
		for i := range n {
			if _, err := raw.keystroke(keyFor(i)); err != nil {
				return err
			}
		}
		rawCPU.stop()
		if hostCPU.ok && rawCPU.ok {
			r.Add(report.Figure{Name: "CPU per keystroke, host process (raw: the reading process)", Value: hostCPU.process / float64(n), Unit: report.UnitSeconds}).WithRaw(rawCPU.process / float64(n))
		}
	}
	e.noteShared(r)
	return nil
}

// hostEcho is the echo terminal on the host, typed into over a bare WebSocket: the
// keystroke's frame is encoded once, and the answer is found with a prefix check, so
// the client adds as little as the raw side's reader does. A second bare WebSocket
// only answers control frames, for the floor's ping.
type hostEcho struct {
	e      *env
	k      *wsclient.Control // creates and disposes
	uri    string
	ws     *websocket.Conn
	pinger *websocket.Conn
	prefix []byte // how a terminal/data frame of the channel begins
	seq    int64
	buf    bytes.Buffer
}

func (e *env) openHostEcho(ctx context.Context) (*hostEcho, error) {
	k, err := e.dialCtl(ctx, "echo")
	if err != nil {
		return nil, err
	}
	wctx, cancel := e.waitCtx(ctx)
	defer cancel()
	h := &hostEcho{e: e, k: k, uri: e.uri("echo", 0)}
	if err := k.Create(wctx, h.uri, e.echoCommand()); err != nil {
		k.Close()
		return nil, err
	}
	s, err := wsclient.DialStream(wctx, e.target, "bench-echo-keys-"+e.run, h.uri)
	if err != nil {
		h.close(ctx)
		return nil, err
	}
	h.ws, h.prefix = s.WS(), messages.DataFramePrefix(h.uri)
	// cat is running once "ready" is out: in the snapshot (the initialize's answer,
	// when the terminal printed it before the stream subscribed), or in data after it.
	seen := s.Answer()
	for !bytes.Contains(seen, []byte("ready")) {
		frame, err := h.read(wctx)
		if err != nil {
			h.close(ctx)
			return nil, fmt.Errorf("waiting for cat: %w (saw %q)", err, seen)
		}
		seen = append(seen, frame...)
	}
	u, err := e.target.DialURL()
	if err != nil {
		h.close(ctx)
		return nil, err
	}
	p, _, err := websocket.Dial(wctx, u, nil)
	if err != nil {
		h.close(ctx)
		return nil, fmt.Errorf("bench: dial %s: %w", e.target.URL, err)
	}
	// Something must read for a pong to be seen; the host sends this connection
	// nothing else.
	p.CloseRead(context.WithoutCancel(ctx))
	h.pinger = p
	return h, nil
}

func (h *hostEcho) read(ctx context.Context) ([]byte, error) {
	_, r, err := h.ws.Reader(ctx)
	if err != nil {
		return nil, err
	}
	h.buf.Reset()
	if _, err := h.buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return h.buf.Bytes(), nil
}

// keystroke sends key as terminal/input and times it until a terminal/data frame
// holding it is back.
func (h *hostEcho) keystroke(ctx context.Context, key byte) (time.Duration, error) {
	h.seq++
	frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"terminal/input","data":"%c"}}}`, h.uri, h.seq, key)
	return h.roundTrip(ctx, frame, func(f []byte) (bool, error) {
		if bytes.HasPrefix(f, h.prefix) {
			rest := f[len(h.prefix):]
			end := bytes.IndexByte(rest, '"')
			return end >= 0 && bytes.IndexByte(rest[:end], key) >= 0, nil
		}
		if bytes.Contains(f, []byte(`"rejectionReason"`)) {
			return false, fmt.Errorf("refused: %s", f)
		}
		return false, nil
	})
}

// roundTrip sends frame and times it until answered says a frame read back is the
// answer.
func (h *hostEcho) roundTrip(ctx context.Context, frame []byte, answered func([]byte) (bool, error)) (time.Duration, error) {
	wctx, cancel := h.e.waitCtx(ctx)
	defer cancel()
	start := time.Now()
	if err := h.ws.Write(wctx, websocket.MessageText, frame); err != nil {
		return 0, err
	}
	for {
		f, err := h.read(wctx)
		if err != nil {
			return 0, err
		}
		if ok, err := answered(f); ok || err != nil {
			return time.Since(start), err
		}
	}
}

// wsPing is one WebSocket ping's round trip: a control frame the host's socket reader
// answers itself.
func (h *hostEcho) wsPing(ctx context.Context) (time.Duration, error) {
	wctx, cancel := h.e.waitCtx(ctx)
	defer cancel()
	start := time.Now()
	if err := h.pinger.Ping(wctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// ahpPing is one AHP ping request's round trip on the keystroke connection.
func (h *hostEcho) ahpPing(ctx context.Context) (time.Duration, error) {
	h.seq++
	id := []byte(fmt.Sprintf(`"id":"p%d"`, h.seq))
	frame := []byte(`{"jsonrpc":"2.0",` + string(id) + `,"method":"ping"}`)
	return h.roundTrip(ctx, frame, func(f []byte) (bool, error) { return bytes.Contains(f, id), nil })
}

func (h *hostEcho) close(ctx context.Context) {
	if h.pinger != nil {
		_ = h.pinger.CloseNow()
	}
	if h.ws != nil {
		_ = h.ws.Close(websocket.StatusNormalClosure, "")
	}
	dctx, cancel := h.e.waitCtx(context.WithoutCancel(ctx))
	defer cancel()
	_ = h.k.Dispose(dctx, h.uri)
	h.k.Close()
}

// rawEcho is cat on a local pseudoterminal (or pipes), typed into by this process.
type rawEcho struct {
	p   *raw.Proc
	buf []byte
}

func (e *env) startRawEcho() (*rawEcho, error) {
	p, err := raw.Start(e.pty, e.shell, e.echoCommand())
	if err != nil {
		return nil, err
	}
	r := &rawEcho{p: p, buf: make([]byte, 4096)}
	if err := p.ReadUntil(r.buf, []byte("ready")); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *rawEcho) keystroke(key byte) (time.Duration, error) {
	k := []byte{key}
	start := time.Now()
	if _, err := r.p.Write(k); err != nil {
		return 0, err
	}
	if err := r.p.ReadUntil(r.buf, k); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func (r *rawEcho) close() { r.p.Kill(); _ = r.p.Close() }

func nextEnvelope(ctx context.Context, k *wsclient.Control, w *wsclient.Watch) (*client.Envelope, error) {
	select {
	case env := <-w.C:
		return env, nil
	case <-k.Done():
		return nil, fmt.Errorf("connection closed: %v", k.Err())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// envelopeData is a terminal/data envelope's text, "" for anything else.
func envelopeData(env *client.Envelope) string {
	if env.Type != messages.TerminalData || env.RejectionReason != "" {
		return ""
	}
	a, err := env.Decode()
	if err != nil || a.Data == nil {
		return ""
	}
	return *a.Data
}

// percentile is the value at or below which a fraction q of the samples lie.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
