package mcphost

import (
	"fmt"
	"strings"

	"github.com/termhost/termhost/agenttools"
)

// Families are the tool sets a host offers.
type Families string

const (
	Host Families = "host" // VS Code's shell tools: bash, read_bash, write_bash, bash_shutdown, list_bash, powershell
	PTY  Families = "pty"  // the persistent PTY tools: bash, bash_output, bash_input, bash_resize, kill_bash, monitor
	Both Families = "both" // every tool of both, with one bash taking both families' parameters
)

// ParseFamilies reads a --tools or ?tools= value.
func ParseFamilies(s string) (Families, error) {
	switch f := Families(strings.ToLower(strings.TrimSpace(s))); f {
	case Host, PTY, Both:
		return f, nil
	case "":
		return Both, nil
	}
	return "", fmt.Errorf("tools must be host, pty or both, not %q", s)
}

// narrow is what a connection asking for want gets from a host offering f.
func (f Families) narrow(want Families) (Families, error) {
	if want == "" || want == f {
		return f, nil
	}
	if f == Both {
		return want, nil
	}
	return "", fmt.Errorf("this host offers the %s tools only, not %s", f, want)
}

// A tool's input schema is a flat object: several model providers rebuild schemas
// from the top-level properties, and a root anyOf arrives empty.
type props map[string]any

func schema(required []string, p props) map[string]any {
	s := map[string]any{"type": "object", "properties": map[string]any(p), "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any   { return map[string]any{"type": "string", "description": desc} }
func num(desc string) map[string]any   { return map[string]any{"type": "number", "description": desc} }
func integ(desc string) map[string]any { return map[string]any{"type": "integer", "description": desc} }
func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}
func enum(desc string, values ...string) map[string]any {
	return map[string]any{"type": "string", "description": desc, "enum": values}
}

// Parameter descriptions shared by more than one tool.
var (
	pCommand    = str("The command line to run, as you would type it at a bash prompt.")
	pShellID    = str("The shell's id (shell_id from an earlier answer). Leave it out for this chat's most recently used shell.")
	pBashID     = str("The shell's id (bash_id from an earlier answer). Leave it out for this chat's most recently used shell.")
	pCols       = integ("Width of the terminal in columns (default 120).")
	pRows       = integ("Height of the terminal in rows (default 40).")
	pHostTimout = num("Milliseconds to wait for the command before answering with what it printed so far; the command keeps running in its shell.")
	pMode       = enum("sync (default) waits for the command; async answers at once with the shell id, and you are woken when it ends.", "sync", "async")
)

var keyHelp = "Named keys, pressed in order after input: " + strings.Join(agenttools.KeyNames(), ", ") + "."

// Tool descriptions, in this host's own words.
const (
	descHostBash   = "Run a command in a persistent bash shell on the host. The shell is kept between calls: the working directory, environment variables and background processes a command leaves are there for the next one. If this chat's shell is busy, the command runs in a new shell instead of interleaving. Output has control sequences removed and is cut to its last 60,000 characters. A command still running at its timeout answers with what it printed so far and keeps running; read the rest with read_bash. A command that waits for input (a question, a password prompt, a REPL) answers as soon as it waits, with its question: answer it with write_bash."
	descReadBash   = "Read what a shell printed since it was last read, with a line saying whether its command is still running and how the last one exited. Never waits."
	descWriteBash  = "Type a line into a shell, followed by Enter: an answer to a prompt, or input for the program running there. Answers with what the shell printed in reply."
	descShutdown   = "End a shell: its processes are stopped and its terminal goes off the host's list. What it printed is kept."
	descListBash   = "List this session's shells: id, terminal, what runs in each, and how the ended ones exited."
	descPowershell = "PowerShell is not available on this host."
	descPTYBash    = "Run a command in a persistent pseudoterminal shell on the host (bash_id in the answer). The call waits up to 60 seconds (5 for a command that sleeps and polls); a command still running then is not killed: it goes on as a background session you can read with bash_output, drive with bash_input, watch with monitor and end with kill_bash, and its end wakes you. run_in_background starts it there at once. A command that waits for input (a question, a password prompt, a REPL) answers as soon as it waits, with its question, and goes on in the background the same way: answer it with bash_input; one in the background that comes to wait wakes you. Use monitor to wait for something, not sleep loops or repeated bash_output."
	descBashOutput = "Peek at a shell without waiting: what it printed since the last read (optionally only lines matching an RE2 filter), or with view=screen the rendered screen of a full-screen program. Ends with a status line."
	descBashInput  = "Send input to a shell: text, then named keys (enter, tab, escape, arrows, ctrl+c, …), then Enter if submit is true. Answers with what the shell printed in reply."
	descBashResize = "Resize a shell's terminal; the program running there is told (SIGWINCH)."
	descKillBash   = "Stop a shell's processes: SIGTERM to its process group, SIGKILL 5 seconds later if anything is left. bash_id \"all\" (or all: true) stops every shell of this session. The shell stays listed, exited, with its output."
	descMonitor    = "Watch a shell's output and be woken when it matters, instead of polling. action=create with a command runs it in a new shell and watches it; with a bash_id watches that shell from now. Lines matching filter (RE2; empty matches all) arrive in batches at most every 5 seconds, at most 50 lines each, and you always get one summary when the monitor ends (its command exits, its shell ends, or timeout_ms passes unless persistent). After 5 wakes in a row without a call from you, lines pause until action=rearm."
)

// toolSpec is one tool as offered: name, description and input schema.
type toolSpec struct {
	name, desc string
	schema     map[string]any
}

// toolsFor lists the tools of a family set.
func toolsFor(f Families) []toolSpec {
	hostBash := toolSpec{"bash", descHostBash, schema([]string{"command"}, props{"command": pCommand, "timeout": pHostTimout, "mode": pMode})}
	ptyBash := toolSpec{"bash", descPTYBash, schema([]string{"command"}, props{
		"command":           pCommand,
		"timeout":           num("Seconds after which a command still in the foreground is interrupted (default 1800). It never ends a background session: use kill_bash."),
		"description":       str("A few words on what the command does, shown to the people watching."),
		"run_in_background": boolean("Start the command as a background session and answer at once."),
		"cols":              pCols, "rows": pRows,
	})}
	bothBash := toolSpec{"bash", descPTYBash + " The timeout parameter is in milliseconds here, as in mode=sync: past it the call answers and the command keeps running.", schema([]string{"command"}, props{
		"command": pCommand, "timeout": pHostTimout, "mode": pMode,
		"description":       str("A few words on what the command does, shown to the people watching."),
		"run_in_background": boolean("Start the command as a background session and answer at once (same as mode=async)."),
		"cols":              pCols, "rows": pRows,
	})}
	host := []toolSpec{
		{"read_bash", descReadBash, schema(nil, props{"shell_id": pShellID})},
		{"write_bash", descWriteBash, schema([]string{"command"}, props{"command": str("The text to type; Enter is pressed after it."), "shell_id": pShellID})},
		{"bash_shutdown", descShutdown, schema(nil, props{"shell_id": pShellID})},
		{"list_bash", descListBash, schema(nil, props{})},
		{"powershell", descPowershell, schema([]string{"command"}, props{"command": pCommand})},
	}
	pty := []toolSpec{
		{"bash_output", descBashOutput, schema(nil, props{"bash_id": pBashID, "filter": str("RE2 pattern: only lines matching it."), "view": enum("log (default): new output since the last read; screen: the rendered screen.", "log", "screen")})},
		{"bash_input", descBashInput, schema(nil, props{"bash_id": pBashID, "input": str("Text to type."), "keys": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": keyHelp}, "submit": boolean("Press Enter after the input and keys.")})},
		{"bash_resize", descBashResize, schema([]string{"cols", "rows"}, props{"bash_id": pBashID, "cols": pCols, "rows": pRows})},
		{"kill_bash", descKillBash, schema(nil, props{"bash_id": str("The shell's id, or \"all\"."), "all": boolean("Stop every shell of this session.")})},
		{"monitor", descMonitor, schema([]string{"action"}, props{
			"action":      enum("create a monitor, or rearm one that paused.", "create", "rearm"),
			"description": str("What the monitor waits for, in a few words; it heads each wake."),
			"command":     str("A command to run in a new shell and watch (create)."),
			"filter":      str("RE2 pattern a line must match to wake you; empty matches every line."),
			"timeout_ms":  integ("How long the monitor lasts, in milliseconds (default 300000, at most 3600000)."),
			"persistent":  boolean("Keep watching until the shell ends, ignoring timeout_ms."),
			"bash_id":     str("The shell to watch (create without command), or whose monitors to rearm."),
			"monitor_id":  str("The monitor to rearm (else every monitor of bash_id)."),
		})},
	}
	switch f {
	case Host:
		return append([]toolSpec{hostBash}, host...)
	case PTY:
		return append([]toolSpec{ptyBash}, pty...)
	}
	return append(append([]toolSpec{bothBash}, host...), pty...)
}
