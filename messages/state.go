package messages

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Claim says who holds a terminal: a client connection, or a session with the chat,
// turn and tool call using it (PROTOCOL.md 5.1). A client claim always carries its
// clientId on the wire, even an empty one.
type Claim struct {
	Kind       string `json:"kind"`
	ClientID   string `json:"clientId,omitempty"`
	Session    string `json:"session,omitempty"`
	Chat       string `json:"chat,omitempty"`
	TurnID     string `json:"turnId,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// Claim kinds.
const (
	ClaimClient  = "client"
	ClaimSession = "session"
)

// MarshalJSON writes only the fields of the claim's kind.
func (c Claim) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case ClaimClient:
		return json.Marshal(struct {
			Kind     string `json:"kind"`
			ClientID string `json:"clientId"`
		}{c.Kind, c.ClientID})
	default:
		type plain Claim
		return json.Marshal(plain(c))
	}
}

// Validate reports what is wrong with a claim a client sent.
func (c Claim) Validate() error {
	switch c.Kind {
	case ClaimClient:
		return nil
	case ClaimSession:
		if c.Session == "" {
			return fmt.Errorf("a session claim needs a session")
		}
		return nil
	case "":
		return fmt.Errorf("a claim needs a kind")
	default:
		return fmt.Errorf("unknown claim kind %q", c.Kind)
	}
}

// Lifecycle is a terminal's process state since AHP 0.9.0.
type Lifecycle struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

// Lifecycle statuses.
const (
	StatusRunning = "running"
	StatusExited  = "exited"
)

// Content part types.
const (
	PartUnclassified = "unclassified"
	PartCommand      = "command"
)

// ContentPart is one part of a terminal's content: output no command claims, or one
// command the shell marked with its output.
type ContentPart struct {
	Type string
	// Value is the text of an unclassified part.
	Value string
	// The fields of a command part.
	CommandID   string
	CommandLine string
	Output      string
	Timestamp   int64
	IsComplete  bool
	ExitCode    *int
	DurationMs  *int64
}

// Text is the part's printed text: an unclassified value or a command's output.
func (p *ContentPart) Text() string {
	if p.Type == PartCommand {
		return p.Output
	}
	return p.Value
}

type wirePart struct {
	Type        string  `json:"type"`
	Value       *string `json:"value,omitempty"`
	CommandID   string  `json:"commandId,omitempty"`
	CommandLine *string `json:"commandLine,omitempty"`
	Output      *string `json:"output,omitempty"`
	Timestamp   *int64  `json:"timestamp,omitempty"`
	IsComplete  *bool   `json:"isComplete,omitempty"`
	ExitCode    *int    `json:"exitCode,omitempty"`
	DurationMs  *int64  `json:"durationMs,omitempty"`
}

// MarshalJSON writes the fields of the part's type, the required ones always.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	w := wirePart{Type: p.Type}
	if p.Type == PartCommand {
		w.CommandID = p.CommandID
		w.CommandLine = &p.CommandLine
		w.Output = &p.Output
		w.Timestamp = &p.Timestamp
		w.IsComplete = &p.IsComplete
		w.ExitCode = p.ExitCode
		w.DurationMs = p.DurationMs
	} else {
		w.Value = &p.Value
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads either kind of part.
func (p *ContentPart) UnmarshalJSON(b []byte) error {
	var w wirePart
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = ContentPart{Type: w.Type, CommandID: w.CommandID, ExitCode: w.ExitCode, DurationMs: w.DurationMs}
	if w.Value != nil {
		p.Value = *w.Value
	}
	if w.CommandLine != nil {
		p.CommandLine = *w.CommandLine
	}
	if w.Output != nil {
		p.Output = *w.Output
	}
	if w.Timestamp != nil {
		p.Timestamp = *w.Timestamp
	}
	if w.IsComplete != nil {
		p.IsComplete = *w.IsComplete
	}
	return nil
}

// TerminalState is the state of a terminal channel (PROTOCOL.md 5.1). Lifecycle is
// the 1.x field; ExitCode the flat field clients before 0.9.0 read. The host sets both.
type TerminalState struct {
	Title                    string         `json:"title"`
	Cwd                      string         `json:"cwd,omitempty"`
	Cols                     *int           `json:"cols,omitempty"`
	Rows                     *int           `json:"rows,omitempty"`
	Content                  []ContentPart  `json:"content"`
	Claim                    Claim          `json:"claim"`
	Lifecycle                *Lifecycle     `json:"lifecycle,omitempty"`
	ExitCode                 *int           `json:"exitCode,omitempty"`
	SupportsCommandDetection *bool          `json:"supportsCommandDetection,omitempty"`
	IsPty                    *bool          `json:"isPty,omitempty"`
	Meta                     map[string]any `json:"_meta,omitempty"`
}

// Text is everything the terminal's content holds, its parts in order: what a client
// folding every terminal/data would have printed, within the scrollback cap.
func (s *TerminalState) Text() string {
	var b strings.Builder
	for _, p := range s.Content {
		b.WriteString(p.Text())
	}
	return b.String()
}

// Clone copies the state deeply enough that the copy can be encoded on another
// goroutine while the original goes on being reduced.
func (s *TerminalState) Clone() TerminalState {
	c := *s
	// Never nil: content is a required array on the wire.
	c.Content = append(make([]ContentPart, 0, len(s.Content)), s.Content...)
	if s.Lifecycle != nil {
		l := *s.Lifecycle
		c.Lifecycle = &l
	}
	if s.Meta != nil {
		c.Meta = make(map[string]any, len(s.Meta))
		for k, v := range s.Meta {
			c.Meta[k] = v
		}
	}
	return c
}

// TerminalInfo is a terminal's row in the root list.
type TerminalInfo struct {
	Resource  string         `json:"resource"`
	Title     string         `json:"title"`
	Claim     Claim          `json:"claim"`
	Lifecycle *Lifecycle     `json:"lifecycle,omitempty"`
	ExitCode  *int           `json:"exitCode,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

// RootConfig is the root channel's configuration: a JSON Schema and its values.
type RootConfig struct {
	Schema map[string]any `json:"schema"`
	Values map[string]any `json:"values"`
}

// RootState is the state of ahp-root://, one for the whole host and never filtered.
type RootState struct {
	Agents    []json.RawMessage `json:"agents"`
	Terminals *[]TerminalInfo   `json:"terminals,omitempty"`
	Config    *RootConfig       `json:"config,omitempty"`
	Meta      map[string]any    `json:"_meta,omitempty"`
}

// Snapshot is a channel's state at a point in the host's action sequence.
type Snapshot struct {
	Resource string `json:"resource"`
	State    any    `json:"state"`
	FromSeq  uint64 `json:"fromSeq"`
}
