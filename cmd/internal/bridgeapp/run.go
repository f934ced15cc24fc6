// Package bridgeapp is the zeroclaw-bridge program: its settings, the wiring
// of every component (build), the run group and the subcommands. The
// command cmd/zeroclaw-bridge is a thin main around Main, so other programs
// of this module (a simulation, say) can run the same bridge in process
// through the same path: parse the configuration, serve, build, run.
package bridgeapp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
)

// fallbackZeroclaw is where bridge.py deployments install ZeroClaw.
const fallbackZeroclaw = "/root/.cargo/bin/zeroclaw"

// defaultChunkDelay is the demo agent's pause between reply chunks.
const defaultChunkDelay = 40 * time.Millisecond

// defaultMemoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// is set: the collector works harder as the heap nears it, so a burst of
// connections or uploads costs CPU time rather than tens of MiB of RSS on a
// small host. It is soft: a live heap above it is never refused.
const defaultMemoryLimit = 48 << 20

// Stamps are the release build's -ldflags stamps, set in package main
// (see cmd/zeroclaw-bridge) and handed to Main; empty fields fall back as
// described on version.
type Stamps struct {
	Version, Commit, Date string
}

// Main is the whole program with os.Args[1:] as args: it sets the runtime's
// memory limit unless GOMEMLIMIT is set, records the build stamps, runs the
// subcommand (the bridge by default) with the process's environment and
// standard streams, and returns the exit status (see exitCode).
func Main(args []string, s Stamps) int {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	version, commit, date = s.Version, s.Commit, s.Date
	var stderr io.Writer = os.Stderr
	if len(args) < 1 || (args[0] != "demo-agent" && args[0] != "acp") {
		// The bridge's log lines are written in batches; a child's stderr
		// (the demo agent's ready marker) goes out at once.
		lw := newLogWriter(os.Stderr)
		defer lw.Close() // for a panic unwinding Main; os.Exit in main skips it
		stderr = lw
	}
	err := Run(context.Background(), args, os.LookupEnv, os.Stdout, stderr)
	if lw, ok := stderr.(*logWriter); ok {
		_ = lw.Close()
	}
	return exitCode(err, os.Stderr)
}

// exitRestart is the exit status of a restart asked from the dashboard
// (EX_TEMPFAIL): the systemd unit restarts on it (RestartForceExitStatus),
// and so does any container restart policy.
const exitRestart = 75

// exitCode maps Run's error to the exit status, printing it to stderr: 0 for
// nil, 2 for a usage or configuration error (one line per problem), 75 for
// a restart request, 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var restart *restartRequest
	if errors.As(err, &restart) {
		fmt.Fprintf(stderr, "zeroclaw-bridge: %s: exit status %d, for the service manager to start the bridge again\n", restart, exitRestart)
		return exitRestart
	}
	var ue *usageError
	if errors.As(err, &ue) {
		for _, line := range errorLines(ue.err) {
			fmt.Fprintln(stderr, "zeroclaw-bridge:", line)
		}
		return 2
	}
	fmt.Fprintln(stderr, "zeroclaw-bridge:", err)
	return 1
}

// usageError marks a configuration or usage problem (exit status 2).
type usageError struct{ err error }

// Error returns the underlying message.
func (e *usageError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *usageError) Unwrap() error { return e.err }

// errorLines splits a joined error into its parts, one line each.
func errorLines(err error) []string {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var lines []string
		for _, e := range joined.Unwrap() {
			lines = append(lines, errorLines(e)...)
		}
		return lines
	}
	return strings.Split(err.Error(), "\n")
}

// Run is the whole program: it dispatches the subcommand and, for the
// default one, parses the configuration and serves until a signal or the
// end of ctx. It reads the environment only through lookupEnv.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	return run(ctx, args, lookupEnv, stdout, stderr, Options{})
}

func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, o Options) error {
	if len(args) > 0 {
		switch args[0] {
		case "demo-agent", "acp": // "acp": the binary can stand in for `zeroclaw acp` (ZEROCLAW_BIN=itself)
			return runDemoAgent(ctx, args[1:], os.Stdin, stdout, stderr)
		case "version":
			return printVersion(stdout)
		case "mcp": // the robot's tools on stdio, relayed to the running bridge
			return runMCP(ctx, args[1:], lookupEnv, stdout, stderr)
		}
	}
	cfg, err := parseConfig(args, lookupEnv)
	switch {
	case errors.Is(err, errHelp):
		usage(stdout)
		return nil
	case err != nil:
		return &usageError{err}
	case cfg.showVersion:
		return printVersion(stdout)
	}
	lk := systemLookups()
	lk.opts = o
	return serve(ctx, cfg, newLogger(cfg, stderr), lk)
}

// newLogger builds the root logger: stderr, LOG_LEVEL, LOG_FORMAT.
func newLogger(cfg config, w io.Writer) hclog.Logger {
	l := hclog.New(&hclog.LoggerOptions{
		Name:       "zeroclaw-bridge",
		Level:      cfg.LogLevel,
		Output:     w,
		JSONFormat: cfg.LogFormat == "json",
	})
	if cfg.LogFormat == "json" {
		return withReadableDurations(l)
	}
	return l
}

// subcommandFlags returns the flag set of subcommand name, writing to
// stderr, with its -log-level flag.
func subcommandFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("zeroclaw-bridge "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs, fs.String("log-level", "warn", "trace, debug, info, warn or error (logs go to stderr)")
}

// parseSubcommand parses a subcommand's flags and its -log-level value
// level. help is true after -h (the usage printed); an unknown flag, a stray
// argument or an unknown level is a *usageError.
func parseSubcommand(fs *flag.FlagSet, args []string, level *string) (lvl hclog.Level, help bool, err error) {
	name := strings.TrimPrefix(fs.Name(), "zeroclaw-bridge ")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return hclog.NoLevel, true, nil
		}
		return hclog.NoLevel, false, &usageError{err}
	}
	if fs.NArg() > 0 {
		return hclog.NoLevel, false, &usageError{fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))}
	}
	if lvl = hclog.LevelFromString(*level); lvl == hclog.NoLevel {
		return lvl, false, &usageError{fmt.Errorf("%s: invalid -log-level %q: want trace, debug, info, warn or error", name, *level)}
	}
	return lvl, false, nil
}

// runDemoAgent serves the built-in demo agent on in/out until in closes or
// SIGINT/SIGTERM arrives. stdout is the protocol channel, so logs go to
// stderr only.
func runDemoAgent(ctx context.Context, args []string, in io.Reader, out, stderr io.Writer) error {
	fs, level := subcommandFlags("demo-agent", stderr)
	delay := fs.Duration("chunk-delay", defaultChunkDelay, "pause between streamed reply chunks")
	flood := fs.Int("stderr-flood", 0, "write this many noise lines to stderr every second (fault injection for soak tests; 0 = off)")
	protocol := fs.String("protocol", protocolACP, "acp, or steerable (a steerable-sidecar: JSON-RPC on stdio, ready marker on stderr)")
	quiet := fs.Bool("quiet-ready", false, "steerable: leave out the __SIDECAR_READY__ stderr marker, as the sidecar's --quiet-ready does")
	lvl, help, err := parseSubcommand(fs, args, level)
	if help || err != nil {
		return err
	}
	if *delay < 0 {
		return &usageError{fmt.Errorf("demo-agent: invalid -chunk-delay %s: want 0 or more", *delay)}
	}
	if *protocol != protocolACP && *protocol != protocolSteerable {
		return &usageError{fmt.Errorf("demo-agent: invalid -protocol %q: want acp or steerable", *protocol)}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := hclog.New(&hclog.LoggerOptions{Name: "demo-agent", Level: lvl, Output: stderr})
	if *flood > 0 {
		fctx, fstop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); floodStderr(fctx, stderr, *flood) }()
		defer func() { fstop(); <-done }()
	}
	opts := demoagent.Options{ChunkDelay: *delay, Logger: log, QuietReady: *quiet}
	serve := demoagent.Serve
	if *protocol == protocolSteerable {
		serve = func(ctx context.Context, in io.Reader, out io.Writer, opts demoagent.Options) error {
			return demoagent.ServeSteerable(ctx, in, out, stderr, opts)
		}
	}
	if err := serve(ctx, in, out, opts); err != nil {
		return fmt.Errorf("demo agent: %w", err)
	}
	return nil
}

// floodStderr writes n noise lines to w every second until ctx ends, as a
// misbehaving agent might; the supervisor must cap what reaches the log.
func floodStderr(ctx context.Context, w io.Writer, n int) {
	line := []byte("demo-agent: stderr flood line for fault injection\n")
	burst := bytes.Repeat(line, n)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if _, err := w.Write(burst); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lookups are the filesystem probes of agent selection, replaced in tests.
type lookups struct {
	lookPath   func(string) (string, error)
	executable func() (string, error)
	// probe runs a command briefly and reports whether it succeeded.
	probe func(name string, args ...string) bool
	// opts are the embedding program's (RunWith); zero for the binary.
	opts Options
}

func systemLookups() lookups {
	return lookups{lookPath: exec.LookPath, executable: os.Executable, probe: probeCommand}
}

// probeCommand runs name with args for at most 5 s, output discarded.
func probeCommand(name string, args ...string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).Run() == nil // #nosec G204 -- STEERABLE_CMD's interpreter, the operator's setting
}

// agentCommand chooses the agent. AGENT_PROTOCOL=acp: ZEROCLAW_BIN when
// set, even if it does not exist (the supervisor reports that on /health);
// else zeroclaw on PATH or at the cargo install path. AGENT_PROTOCOL=
// steerable: STEERABLE_CMD when set; else the default command when python3
// can import steerable_sidecar. Otherwise this binary's demo-agent
// subcommand in that protocol, announced by one WARN line.
func agentCommand(cfg config, lk lookups, log hclog.Logger) (command string, args []string, err error) {
	var demoArgs []string
	switch cfg.Agent.Protocol {
	case protocolSteerable:
		if cfg.set("STEERABLE_CMD") || lk.probe != nil && lk.probe(cfg.Agent.SteerableCmd[0], "-c", "import steerable_sidecar") {
			if cfg.Steerable.Model == "" {
				log.Warn("STEERABLE_MODEL is unset: the steerable-sidecar's provider factory refuses every chat without a model (-32602 \"model is required\")")
			}
			return cfg.Agent.SteerableCmd[0], cfg.Agent.SteerableCmd[1:], nil
		}
		log.Warn("steerable-sidecar not found (STEERABLE_CMD is unset and " + cfg.Agent.SteerableCmd[0] +
			" cannot import steerable_sidecar); running the built-in demo agent, which answers with canned emoji replies")
		demoArgs = []string{"demo-agent", "-protocol", protocolSteerable}
	default:
		acpArgs := append([]string{"acp"}, cfg.Agent.Args...)
		if cfg.Agent.Bin != "" {
			return cfg.Agent.Bin, acpArgs, nil
		}
		if p := acp.LookupAgent(lk.lookPath, fallbackZeroclaw); p != "" {
			return p, acpArgs, nil
		}
		log.Warn("no zeroclaw binary found (ZEROCLAW_BIN is unset, no zeroclaw on PATH, none at " +
			fallbackZeroclaw + "); running the built-in demo agent, which answers with canned emoji replies")
		demoArgs = []string{"demo-agent"}
	}
	self, err := lk.executable()
	if err != nil {
		return "", nil, fmt.Errorf("locate this binary to run the demo agent: %w", err)
	}
	return self, demoArgs, nil
}
