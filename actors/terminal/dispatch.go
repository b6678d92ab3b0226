package terminal

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/internal/echotrace"
	"github.com/termhost/termhost/messages"
)

// A client's actions on a terminal: admitted in order behind a claim being decided,
// then applied (input written to the process, a resize, a claim or its release), or
// refused with the reason.

// reject refuses a client's action: the sender alone hears it, with the reason.
func (t *terminal) reject(m *channel.Dispatch, reason string) {
	t.journal.Reject(m.Sub, t.uri, m.Raw, m.Origin, reason)
}

// dispatch takes a client's action. While the claim actor decides a
// terminal/claimed, the dispatches after it wait (see claimDecided), so that the
// channel carries every client's actions in the order they reached the terminal: a
// claim followed by input from the same client is echoed claim first.
func (t *terminal) dispatch(ctx actor.Context, m *channel.Dispatch) {
	if t.deciding != nil {
		t.held = append(t.held, m)
		return
	}
	a := m.Action
	if !messages.ClientDispatchable(a.Type) {
		if messages.IsTerminalAction(a.Type) {
			t.reject(m, fmt.Sprintf("%s is sent by the host, not dispatched by a client", a.Type))
		} else {
			t.reject(m, fmt.Sprintf("%s is not an action of a terminal", a.Type))
		}
		return
	}
	raw := m.Raw
	switch a.Type {
	case messages.TerminalInput:
		if a.Data == nil {
			t.reject(m, "terminal/input needs data")
			return
		}
		if t.exit != nil {
			t.reject(m, "the terminal's process has exited; input is dropped")
			return
		}
		echotrace.Mark("term dispatch")
		t.writeInput(ctx, *a.Data)
		echotrace.Mark("pty written")
	case messages.TerminalResized:
		if a.Cols == nil || a.Rows == nil {
			t.reject(m, "terminal/resized needs cols and rows")
			return
		}
		cols, rows, clamped := boundSize(*a.Cols, *a.Rows)
		if clamped {
			a = &messages.Action{Type: a.Type, Cols: &cols, Rows: &rows, Meta: map[string]any{
				"termhost": fmt.Sprintf("size %dx%d clamped to %dx%d (columns %d to %d, rows %d to %d)", *m.Action.Cols, *m.Action.Rows, cols, rows, minCols, maxCols, minRows, maxRows),
			}}
			raw = messages.EncodeAction(a)
		}
		if t.exit == nil {
			t.input.resize(cols, rows) // in order with the input around it
		}
		t.scr.Resize(cols, rows)
	case messages.TerminalClaimed:
		if a.Claim == nil {
			t.reject(m, "terminal/claimed needs a claim")
			return
		}
		if err := a.Claim.Validate(); err != nil {
			t.reject(m, err.Error())
			return
		}
		if t.claim == nil {
			t.reject(m, "the terminal's claim cannot be changed now")
			return
		}
		t.deciding = m
		ctx.Send(t.claim, &claimAsk{clientID: m.Origin.ClientID, next: *a.Claim})
		return
	case messages.TerminalTitleChanged:
		if a.Title == nil {
			t.reject(m, "terminal/titleChanged needs a title")
			return
		}
	}
	t.accept(ctx, m, a, raw)
	echotrace.Mark("input echo broadcast")
}

// accept folds a client's action into the state and echoes it, as raw, to every
// subscriber.
func (t *terminal) accept(ctx actor.Context, m *channel.Dispatch, a *messages.Action, raw []byte) {
	t.scrollback.Apply(&t.state, a)
	origin := m.Origin
	t.broadcast(&messages.Envelope{Channel: t.uri, Action: raw, Origin: &origin})
	t.tellWatcher(a)
	if a.Type == messages.TerminalClaimed || a.Type == messages.TerminalTitleChanged {
		t.publishRow(ctx)
	}
}

// claimDecided applies the claim actor's verdict on the claim being decided, then
// the dispatches held behind it, in order, until one is another claim.
func (t *terminal) claimDecided(ctx actor.Context, v *claimVerdict) {
	m := t.deciding
	if m == nil {
		return
	}
	t.deciding = nil
	if v.refusal != "" {
		t.reject(m, v.refusal)
	} else {
		t.accept(ctx, m, m.Action, m.Raw)
	}
	held := t.held
	t.held = nil
	for _, h := range held {
		t.dispatch(ctx, h)
	}
}

// applyRelease applies a release the claim actor decided, if the claim is still the
// one released: the two actors see claims change in the same order, so it always
// is, and the check only keeps a stale release from undoing a later claim.
func (t *terminal) applyRelease(ctx actor.Context, m *claimReleased) {
	if t.state.Claim != m.from {
		return
	}
	to := m.to
	t.apply(&messages.Action{Type: messages.TerminalClaimed, Claim: &to, Meta: map[string]any{"termhost": m.why}})
	t.publishRow(ctx)
}

// writeInput sends typed input to the process. Pipes have no line discipline, so the
// host does a terminal's two jobs there: ^C becomes SIGINT to the child's process
// group, and Enter's \r becomes \n as ICRNL would (seed: "What a client sees").
func (t *terminal) writeInput(ctx actor.Context, data string) {
	if t.usePty {
		if t.tracker != nil {
			t.tracker.Input(data)
		}
		t.input.push([]byte(data))
		return
	}
	var b strings.Builder
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case 0x03:
			if b.Len() > 0 {
				t.input.push([]byte(b.String()))
				b.Reset()
			}
			t.input.interrupt() // after the input before it, before the input after it
		case '\r':
			b.WriteByte('\n')
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 0 {
		t.input.push([]byte(b.String()))
	}
}
