package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/termhost/termhost/internal/bench/wsclient"
	"github.com/termhost/termhost/messages"
)

// benchChat is a session a scenario made, with its default chat subscribed.
type benchChat struct {
	session, chat string
	w             *wsclient.Watch
}

// openChats makes a session for each client (createSession with params beside its
// channel and a working folder of its own), subscribed to its chat. refuseFirst,
// when set, turns the first createSession's error into the scenario's own (a host
// without what the scenario needs). close disposes the sessions and the folder.
func (e *env) openChats(ctx context.Context, ctls []*wsclient.Control, label string, params map[string]any, refuseFirst func(error) error) (chats []benchChat, close func(), err error) {
	work, err := os.MkdirTemp("", "termhost-bench-"+label+"-")
	if err != nil {
		return nil, func() {}, err
	}
	close = func() {
		for i, c := range chats {
			dctx, cancel := e.waitCtx(context.WithoutCancel(ctx))
			_, _ = ctls[i].Request(dctx, "disposeSession", map[string]any{"channel": c.session})
			cancel()
		}
		_ = os.RemoveAll(work)
	}
	for i, k := range ctls {
		wctx, cancel := e.waitCtx(ctx)
		uri := fmt.Sprintf("ahp-session:/bench-%s-%s-%d", e.run, label, i)
		p := map[string]any{"channel": uri, "workingDirectories": []string{messages.FileURI(work)}}
		for key, v := range params {
			p[key] = v
		}
		raw, err := k.Request(wctx, "createSession", p)
		if err != nil {
			cancel()
			if i == 0 && refuseFirst != nil {
				return chats, close, refuseFirst(err)
			}
			return chats, close, fmt.Errorf("createSession: %w", err)
		}
		var res struct{ Chat string }
		if err := json.Unmarshal(raw, &res); err != nil || res.Chat == "" {
			cancel()
			return chats, close, fmt.Errorf("createSession answered %s", raw)
		}
		chats = append(chats, benchChat{session: uri})
		w := k.Watch(res.Chat)
		_, err = k.Subscribe(wctx, res.Chat)
		cancel()
		if err != nil {
			return chats, close, fmt.Errorf("subscribe %s: %w", res.Chat, err)
		}
		chats[i].chat, chats[i].w = res.Chat, w
	}
	return chats, close, nil
}

// turnFunc runs one turn with id in a chat and waits for its end; failed says it ended
// without success (the turn still counts).
type turnFunc func(ctx context.Context, k *wsclient.Control, c benchChat, id string) (failed bool, err error)

// firstTurns runs one untimed turn in every chat at once, a session's first, and says
// how long each took. What a chat's first turn does once (the agent process started,
// the chat's folder made, the first shell started with no spare ahead of it) is then
// behind the timed run, which measures turns as a session that has lived a while
// makes them, as a Go benchmark runs its function once before it times it.
func (e *env) firstTurns(ctx context.Context, ctls []*wsclient.Control, chats []benchChat, turn turnFunc) ([]time.Duration, error) {
	took := make([]time.Duration, len(ctls))
	g, gctx := errgroup.WithContext(ctx)
	for i, k := range ctls {
		c := chats[i]
		g.Go(func() error {
			wctx, cancel := e.waitCtx(gctx)
			defer cancel()
			began := time.Now()
			if _, err := turn(wctx, k, c, fmt.Sprintf("first-%d", i)); err != nil {
				return fmt.Errorf("session %d, first turn: %w", i, err)
			}
			took[i] = time.Since(began)
			return nil
		})
	}
	return took, g.Wait()
}

// turnsBackToBack runs turns back to back in every chat at once for d, each chat's one
// after another, and measures each turn and the host's CPU over the run.
func (e *env) turnsBackToBack(ctx context.Context, ctls []*wsclient.Control, chats []benchChat, label string, d time.Duration, turn turnFunc) (turnRun, error) {
	var mu sync.Mutex // guards out
	out := turnRun{}
	var done atomic.Int64
	stop := e.prog.every(func() string { return fmt.Sprintf("%s: %d session(s), %d turns", label, len(chats), done.Load()) })
	defer stop()
	g, gctx := errgroup.WithContext(ctx)
	out.cpu = meterCPUAndChildren(e.pid)
	if !e.cfg.InProcess {
		// The clients are this process: what driving the turns costs the machine.
		out.clients = meterCPU(os.Getpid())
	}
	start := time.Now()
	deadline := start.Add(d)
	for i, k := range ctls {
		c := chats[i]
		g.Go(func() error {
			for n := 0; time.Now().Before(deadline); n++ {
				wctx, cancel := e.waitCtx(gctx)
				began := time.Now()
				failed, err := turn(wctx, k, c, fmt.Sprintf("turn-%d-%d", i, n))
				cancel()
				if err != nil {
					return fmt.Errorf("session %d, turn %d: %w", i, n, err)
				}
				took := time.Since(began)
				done.Add(1)
				mu.Lock()
				out.turns++
				out.latencies = append(out.latencies, took)
				if failed {
					out.failed++
				}
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	out.elapsed = time.Since(start)
	out.cpu.stop()
	if out.clients != nil {
		out.clients.stop()
	}
	return out, err
}
