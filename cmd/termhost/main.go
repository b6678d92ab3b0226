// Command termhost runs shells on this machine and serves each one as a channel of
// the Agent Host Protocol over WebSocket. `termhost serve` (the default) runs the
// host; `termhost token` manages who may sign in.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termhost/termhost/actors/agents"
	"github.com/termhost/termhost/actors/root"
	"github.com/termhost/termhost/auth"
	"github.com/termhost/termhost/persistence"
	"github.com/termhost/termhost/pty"
	"github.com/termhost/termhost/server"
	"github.com/termhost/termhost/server/mcphost"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var usage usageError
		if errors.As(err, &usage) {
			fmt.Fprintln(os.Stderr, "termhost:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "termhost:", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(args []string, stdout, stderr io.Writer) error {
	verb := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	switch verb {
	case "serve":
		return serve(args, stdout, stderr)
	case "token":
		return token(args, stdout, stderr)
	case "bench":
		return benchCmd(args, stdout, stderr)
	case "bench-agent":
		return benchAgent(args, os.Stdin, stdout)
	case "bench-busy":
		return benchBusy(args, os.Stdin)
	case "mcp":
		return mcpBridge(args, os.Stdin, stdout, stderr)
	case "ls", "new", "attach", "run", "kill":
		return exitWithStatus(clientVerbs(verb, args, stdout, stderr))
	case "help":
		fmt.Fprint(stdout, usageText)
		return nil
	default:
		return usageError{fmt.Errorf("unknown verb %q\n%s", verb, usageText)}
	}
}

const usageText = `usage:
  termhost [serve] [--listen 127.0.0.1:9187] [--state-dir DIR] [--pty auto|always|never]
                   [--allow-anonymous] [--allow-origin PATTERN]... [--log-level info]
                   [--zsh-folder safe|as-found] [--cpuprofile FILE] [--tools host|pty|both]
                   [--agent NAME='command args']...   (ACP agents sessions may run; also <state-dir>/agents.json)
  termhost mcp [--url http://HOST:PORT/mcp?session=…&chat=…&tools=…] [--token TOKEN]
                   (an MCP server on stdin/stdout for agents that spawn one: the host's /mcp)
  termhost token add --state-dir DIR --user NAME --role owner|member|guest
  termhost token list --state-dir DIR
  termhost token revoke --state-dir DIR USER|TOKEN-ID
  termhost bench [--url ws://HOST:PORT/ --token TOKEN | --host process|inprocess] [--pty auto|always|never]
                 [--scenario NAME,...] [--json]
  termhost ls [--json] [--watch]
  termhost new [--name N] [--cwd DIR] [--attach] [-- CMD ARGS]
  termhost attach [--read-only] URI|NAME|#N        (ctrl-\ d detaches)
  termhost run [--cwd DIR] -- CMD ARGS             (exits with the command's code)
  termhost kill URI|NAME|#N...
  The client verbs take --url ws://HOST:PORT/ (default $TERMHOST_URL, else ws://127.0.0.1:9187/),
  --token TOKEN (default $TERMHOST_TOKEN, else <state-dir>/owner.token) and --state-dir DIR.
`

// defaultStateDir is $XDG_STATE_HOME/termhost, else ~/.local/state/termhost.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "termhost")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".termhost"
	}
	return filepath.Join(home, ".local", "state", "termhost")
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func serve(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9187", "address to listen on (port 0 picks a free port)")
	stateDir := fs.String("state-dir", defaultStateDir(), "folder for users, tokens and kept sessions")
	ptyMode := fs.String("pty", "auto", "auto|always|never: run shells under a pseudoterminal")
	allowAnon := fs.Bool("allow-anonymous", false, "on a non-loopback address, accept connections without a token (they can drive nothing)")
	var origins multiFlag
	fs.Var(&origins, "allow-origin", "an extra browser Origin host pattern to accept (repeatable)")
	logLevel := fs.String("log-level", "info", "debug|info|warn|error")
	zshFolder := fs.String("zsh-folder", "safe", "safe|as-found: take <tmp>/<user>-termhost-zsh even when it is a symlink or another user's")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the host to this file, from start to shutdown")
	toolsFlag := fs.String("tools", "both", "host|pty|both: the agent shell tool families /mcp offers")
	var agentFlags multiFlag
	fs.Var(&agentFlags, "agent", "NAME='command args': an ACP agent a session may be made with (repeatable; beside <state-dir>/agents.json, and winning over it)")
	drain := fs.Bool("drain", false, "on SIGTERM, refuse new terminals and wait for the shells to end (up to --drain-deadline) before stopping")
	drainDeadline := fs.Duration("drain-deadline", 10*time.Minute, "how long --drain waits for the shells")
	presenceGrace := fs.Duration("presence-grace", 30*time.Second, "how long a client whose connections all went stays among a session's active clients (on every node of a cluster) before it is taken off")
	var clusterFlags clusterFlags
	clusterFlags.register(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	clusterOpts, err := clusterFlags.options()
	if err != nil {
		return usageError{err}
	}
	fromFlags := map[string][]string{}
	for _, f := range agentFlags {
		name, argv, err := agents.ParseCommand(f)
		if err != nil {
			return usageError{fmt.Errorf("--agent: %v", err)}
		}
		fromFlags[name] = argv
	}
	tools, err := mcphost.ParseFamilies(*toolsFlag)
	if err != nil {
		return usageError{fmt.Errorf("--tools: %v", err)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level: %v", err)}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	if *zshFolder != "safe" && *zshFolder != "as-found" {
		return usageError{fmt.Errorf("--zsh-folder must be safe or as-found, not %q", *zshFolder)}
	}
	usePty, err := choosePty(*ptyMode)
	if err != nil {
		return usageError{err}
	}
	store, err := auth.Open(clusterFlags.usersFolder(*stateDir))
	if err != nil {
		return err
	}
	ownerTokenPath, ownerCreated, err := store.EnsureOwner()
	if err != nil {
		return err
	}
	if ownerCreated {
		logger.Info("created the owner user; its token is in "+ownerTokenPath, "token_file", ownerTokenPath)
	}

	sessions, err := persistence.Open(filepath.Join(*stateDir, "sessions"))
	if err != nil {
		return err
	}
	agentCommands, err := readAgentsFile(filepath.Join(*stateDir, agentsFile))
	if err != nil {
		return err
	}
	maps.Copy(agentCommands, fromFlags)
	if len(agentCommands) > 0 {
		logger.Info("agents sessions may run", "agents", slices.Sorted(maps.Keys(agentCommands)))
	}
	srv, err := server.New(server.Config{
		Root:           root.Options{UsePty: usePty, ZshFolderAsFound: *zshFolder == "as-found", Store: sessions, PresenceGrace: *presenceGrace},
		Auth:           store,
		AllowAnonymous: *allowAnon,
		AllowOrigins:   origins,
		Tools:          tools,
		Agents:         agentCommands,
		Version:        version,
		Logger:         logger,
		Cluster:        clusterOpts,
	})
	if err != nil {
		return err
	}
	// Signals are caught before the contract line says the host is up: a SIGTERM sent
	// the moment it appears must still shut the host down cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The contract line: exactly one line on stdout, from the listener's real address,
	// named so that a client on this machine can dial it.
	fmt.Fprintf(stdout, "termhost listening on ws://%s/\n", dialableAddr(*listen, ln.Addr()))
	// On a fresh state folder, a link the owner can open, as a notebook server prints
	// one: on stderr, once, never again in any log.
	if ownerCreated {
		if line, err := ownerBrowserLine(dialableAddr(*listen, ln.Addr()), ownerTokenPath); err == nil {
			fmt.Fprintln(stderr, line)
		}
	}
	logger.Info("serving", "addr", ln.Addr().String(), "pty", usePty, "state_dir", *stateDir)

	err = srv.Serve(drainFirst(ctx, *drain, *drainDeadline, srv, logger), ln)
	if ctx.Err() != nil {
		logger.Info("stopped")
		return nil
	}
	return err
}

// agentsFile is the state folder's list of agents: {"agents": {"NAME": "command args"}}.
const agentsFile = "agents.json"

// readAgentsFile reads the agents a state folder lists, each command line split as
// --agent splits one (agents.ParseCommand); no file lists none. A file that is not
// that shape is an error naming it, so a typo stops the host rather than losing an
// agent without a word.
func readAgentsFile(path string) (map[string][]string, error) {
	out := map[string][]string{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the agents: %w", err)
	}
	const want = `want {"agents": {"NAME": "command args", …}}`
	var f struct {
		Agents map[string]string `json:"agents"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %v; %s", path, err, want)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value; %s", path, want)
	}
	for name, line := range f.Agents {
		parsed, argv, err := agents.ParseCommand(name + "=" + line)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		out[parsed] = argv
	}
	return out, nil
}

// dialableAddr is the address a client on this machine dials to reach a listener
// asked for with listen. A listener on every interface reports an unspecified host
// (0.0.0.0, or [::] even when 0.0.0.0 was asked for), which is nothing to dial: it is
// named by the loopback of the family that was asked for, 127.0.0.1 unless an IPv6
// address was.
func dialableAddr(listen string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	host := "127.0.0.1"
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

func choosePty(mode string) (bool, error) {
	switch mode {
	case "auto":
		return pty.Available(), nil
	case "always":
		if !pty.Available() {
			return false, errors.New("--pty always: this machine cannot open a pseudoterminal")
		}
		return true, nil
	case "never":
		return false, nil
	}
	return false, fmt.Errorf("--pty must be auto, always or never, not %q", mode)
}

func token(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("token needs add, list or revoke\n" + usageText)}
	}
	sub, args := args[0], args[1:]
	if sub != "add" && sub != "list" && sub != "revoke" {
		return usageError{fmt.Errorf("unknown token verb %q", sub)}
	}
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", defaultStateDir(), "the host's state folder")
	user := fs.String("user", "", "user name")
	role := fs.String("role", "", "role: owner, member, guest, or one the users file defines")
	// Flags may come after the user or token id too: `token revoke ann --state-dir DIR`
	// must not revoke ann in the default state folder.
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			operands = append(operands, rest...) // after --, nothing is a flag
			break
		}
		operands, args = append(operands, rest[0]), rest[1:]
	}
	if allowed := map[string]int{"revoke": 1}[sub]; len(operands) > allowed {
		return usageError{fmt.Errorf("token %s: unexpected %q", sub, operands[allowed])}
	}
	store, err := auth.Open(*stateDir)
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		if *user == "" || *role == "" {
			return usageError{errors.New("token add needs --user and --role")}
		}
		tok, err := store.AddToken(*user, *role)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, tok)
	case "list":
		users, err := store.List()
		if err != nil {
			return err
		}
		for _, u := range users {
			ids := make([]string, len(u.Tokens))
			for i, t := range u.Tokens {
				ids[i] = t.ID
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", u.Name, u.Role, strings.Join(ids, ","))
		}
	case "revoke":
		target := *user
		if len(operands) > 0 {
			if target != "" {
				return usageError{errors.New("token revoke takes --user or a user name or token id, not both")}
			}
			target = operands[0]
		}
		if target == "" {
			return usageError{errors.New("token revoke needs a user name or token id")}
		}
		n, err := store.Revoke(target)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %d token(s)\n", n)
	default:
		return usageError{fmt.Errorf("unknown token verb %q", sub)}
	}
	return nil
}
