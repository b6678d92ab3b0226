package versioning

import (
	"bytes"
	"encoding/json"

	"github.com/termhost/termhost/messages"
)

// introducedIn names the actions this host sends that came after the oldest version
// it negotiates, with the version each came in (the protocol's ACTION_INTRODUCED_IN);
// every other action it sends is known to all of them. A host sends a connection only
// the actions its negotiated version knows (versioning.md, "Forward Compatibility":
// "The host only sends action types known to the negotiated version").
var introducedIn = map[string]version{
	"chat/toolCallAuthRequired":       {0, 6, 0},
	"chat/toolCallAuthResolved":       {0, 6, 0},
	"session/workingDirectorySet":     {0, 7, 0},
	"session/workingDirectoryRemoved": {0, 7, 0},
	"chat/workingDirectorySet":        {0, 7, 0},
	"chat/workingDirectoryRemoved":    {0, 7, 0},
	"chat/backgroundWorkSet":          {0, 9, 0},
	"chat/backgroundWorkRemoved":      {0, 9, 0},
}

// ActionGate holds back the action frames a connection's negotiated version does not
// know. It is made once per connection and only read after.
type ActionGate struct {
	unknown map[string]bool
	// quoted are the unknown types as they appear in a frame ("chat/x" with its
	// quotes): a frame holding none of them is admitted without being decoded.
	quoted [][]byte
}

// NewActionGate is the gate for a connection that negotiated version v, or nil when v
// knows every action the host sends (or is not a version at all: nothing to hold).
func NewActionGate(v string) *ActionGate {
	ver, err := parseVersion(v)
	if err != nil {
		return nil
	}
	var g *ActionGate
	for name, in := range introducedIn {
		if !ver.less(in) {
			continue
		}
		if g == nil {
			g = &ActionGate{unknown: map[string]bool{}}
		}
		g.unknown[name] = true
		g.quoted = append(g.quoted, []byte(`"`+name+`"`))
	}
	return g
}

// Admits reports whether frame may go to the connection: anything but an action
// envelope whose type its version does not know. A nil gate admits everything.
func (g *ActionGate) Admits(frame []byte) bool {
	if g == nil {
		return true
	}
	named := false
	for _, q := range g.quoted {
		if bytes.Contains(frame, q) {
			named = true
			break
		}
	}
	if !named {
		return true
	}
	env := messages.EnvelopeOfFrame(frame)
	if env == nil {
		return true
	}
	var e struct {
		Action struct {
			Type string `json:"type"`
		} `json:"action"`
	}
	if json.Unmarshal(env, &e) != nil {
		return true
	}
	return !g.unknown[e.Action.Type]
}
