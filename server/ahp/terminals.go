package ahp

import (
	"encoding/json"
	"runtime"
	"sort"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/termhost/termhost/actors/channel"
	"github.com/termhost/termhost/actors/terminal"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/messages/limits"
)

// The terminal requests a connection answers itself: createTerminal, with what the
// client may set on the new terminal, and disposeTerminal.

type createTerminalParams struct {
	Channel string          `json:"channel"`
	Claim   *messages.Claim `json:"claim"`
	Name    string          `json:"name"`
	Cwd     string          `json:"cwd"`
	Cols    *int            `json:"cols"`
	Rows    *int            `json:"rows"`
	Meta    struct {
		Termhost *termhostCreateMeta `json:"x-termhost"`
		// Node names the cluster node to run the terminal on, as rows name theirs;
		// a host alone ignores it.
		Node string `json:"node"`
	} `json:"_meta"`
}

// termhostCreateMeta is termhost's own extension of createTerminal, under the x-
// prefix AHP reserves for it: a terminal that runs one command and exits, with the
// caller's environment and the two flags the seed names ("One command, or a shell to
// sit in"). A terminal given a command is one a program opens, so a folder that is not
// there fails its start (exit 127) rather than falling back to the home folder.
type termhostCreateMeta struct {
	Command             string            `json:"command"`
	Args                []string          `json:"args"`
	Env                 map[string]string `json:"env"`
	PreventShellHistory bool              `json:"preventShellHistory"`
	NonInteractive      bool              `json:"nonInteractive"`
}

func (c *connection) createTerminal(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p createTerminalParams
	if !c.admit(id, auth.GrantTerminalCreate, raw, &p) {
		return
	}
	if err := limits.CheckURI(p.Channel); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: channel must be the new terminal's URI: %v", err))
		return
	}
	// A terminal takes only a terminal's URI: under any other scheme it could stand
	// in for a session's or a chat's channel created later.
	if !limits.IsTerminalURI(p.Channel) {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %q is not a terminal URI (ahp-terminal:/… or agenthost-terminal:/…)", p.Channel))
		return
	}
	if err := limits.CheckTitle("the name", p.Name); err != nil {
		c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %v", err))
		return
	}
	claim := messages.Claim{Kind: messages.ClaimClient}
	if p.Claim != nil {
		if err := p.Claim.Validate(); err != nil {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: claim: %v", err))
			return
		}
		claim = *p.Claim
	}
	m := &terminal.Create{URI: p.Channel, Claim: claim, Name: p.Name, Cwd: p.Cwd, Node: p.Meta.Node, By: c.cfg.Principal}
	if x := p.Meta.Termhost; x != nil {
		if x.Command == "" && len(x.Args) > 0 {
			c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: _meta.x-termhost.args needs a command"))
			return
		}
		m.Spec = terminal.Spec{Command: x.Command, Args: x.Args, PreventShellHistory: x.PreventShellHistory, NonInteractive: x.NonInteractive, StrictCwd: x.Command != ""}
		for k, v := range x.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				c.fail(id, messages.Errorf(messages.CodeInvalidParams, "Invalid params: %q is not an environment variable name", k))
				return
			}
			m.Spec.Env = append(m.Spec.Env, k+"="+v)
		}
		sort.Strings(m.Spec.Env)
	}
	if p.Cols != nil {
		m.Cols = *p.Cols
	}
	if p.Rows != nil {
		m.Rows = *p.Rows
	}
	if (p.Cols == nil) != (p.Rows == nil) {
		if p.Cols == nil {
			m.Cols = terminal.DefaultCols
		} else {
			m.Rows = terminal.DefaultRows
		}
	}
	f := ctx.RequestFuture(c.cfg.Root, m, channel.RequestTimeout)
	// The root's goroutine, just made runnable, is next on this CPU; this one (the
	// socket's reader) steps aside for it rather than read on first. A client that
	// sent subscribe right behind the create would otherwise have that handled
	// first, and the shell's start (the opening's critical path) would wait for
	// another CPU to wake for the root: 0.15-0.2 ms of an opening, traced.
	runtime.Gosched()
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		r, ok := res.(*terminal.CreateResult)
		switch {
		case err != nil || !ok:
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: the terminal did not start in time"))
		case r.Err != nil:
			c.fail(id, r.Err)
		default:
			c.reply(id, nil)
		}
	})
}

func (c *connection) disposeTerminal(ctx actor.Context, id json.RawMessage, raw json.RawMessage) {
	var p subscribeParams
	if !c.admit(id, auth.GrantTerminalDispose, raw, &p) {
		return
	}
	delete(c.subscribed, p.Channel)
	f := ctx.RequestFuture(c.cfg.Root, &terminal.Dispose{URI: p.Channel, By: c.cfg.Principal}, channel.RequestTimeout)
	ctx.ReenterAfter(f, func(res interface{}, err error) {
		if err != nil {
			c.fail(id, messages.Errorf(messages.CodeInternalError, "Internal error: %v", err))
			return
		}
		c.reply(id, nil)
	})
}
