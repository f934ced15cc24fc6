// Command zeroclaw-bridge is the brain-side bridge of the dotty-stackchan
// robot: a drop-in replacement for bridge.py that serves xiaozhi-esp32-server
// over HTTP and drives a supervised `zeroclaw acp` child over ACP.
//
// Run `zeroclaw-bridge -h` for every flag and environment variable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
)

// version is set with -ldflags "-X main.version=…"; otherwise it comes
// from the build info.
var version = ""

// fallbackZeroclaw is where bridge.py's installs put ZeroClaw.
const fallbackZeroclaw = "/root/.cargo/bin/zeroclaw"

func main() {
	os.Exit(exitCode(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// exitCode dispatches the subcommand and maps its error to a status:
// 0 clean, 2 bad usage or configuration, 1 anything else.
func exitCode(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(args) > 0 && args[0] == "demo-agent":
		err = runDemoAgent(ctx, args[1:], stderr)
	case len(args) > 0 && (args[0] == "version" || args[0] == "-version" || args[0] == "--version"):
		fmt.Fprintln(stdout, "zeroclaw-bridge", buildVersion())
		return 0
	default:
		stop() // the run group handles signals itself
		err = serve(args, getenv, stderr, lookups{lookPath: exec.LookPath, executable: os.Executable})
	}
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		usage(stdout)
		return 0
	case errors.As(err, &ue):
		for _, line := range ue.lines() {
			fmt.Fprintln(stderr, "zeroclaw-bridge:", line)
		}
		return 2
	default:
		fmt.Fprintln(stderr, "zeroclaw-bridge:", err)
		return 1
	}
}

// usageError is a configuration or usage problem (exit status 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func (e *usageError) lines() []string {
	var j interface{ Unwrap() []error }
	if errors.As(e.err, &j) {
		var out []string
		for _, err := range j.Unwrap() {
			out = append(out, err.Error())
		}
		return out
	}
	return []string{e.err.Error()}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// runDemoAgent serves the built-in demo agent on stdin/stdout; logs go to stderr.
func runDemoAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	delay := fs.Duration("chunk-delay", 40*time.Millisecond, "pause between streamed reply chunks")
	level := fs.String("log-level", "warn", "trace, debug, info, warn or error (logs go to stderr)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "demo-agent", Level: hclog.LevelFromString(*level), Output: stderr})
	return demoagent.Serve(ctx, os.Stdin, os.Stdout, demoagent.Options{ChunkDelay: *delay, Logger: log})
}

// lookups are the filesystem probes of agent selection, replaced in tests.
type lookups struct {
	lookPath   func(string) (string, error)
	executable func() (string, error)
}

// agentCommand chooses the agent: ZEROCLAW_BIN when set (missing is not
// fatal), else zeroclaw on PATH or at the cargo path, else the demo agent.
func agentCommand(c config, lk lookups, log hclog.Logger) (cmd string, args []string, err error) {
	if c.ZeroclawBin != "" {
		return c.ZeroclawBin, append([]string{"acp"}, c.ZeroclawArgs...), nil
	}
	if p := acp.LookupAgent(lk.lookPath, fallbackZeroclaw); p != "" {
		return p, append([]string{"acp"}, c.ZeroclawArgs...), nil
	}
	self, err := lk.executable()
	if err != nil {
		return "", nil, fmt.Errorf("locate own binary for the demo agent: %w", err)
	}
	log.Warn("no zeroclaw binary found (ZEROCLAW_BIN unset, none on PATH or at " + fallbackZeroclaw + "); running the built-in demo agent")
	return self, []string{"demo-agent"}, nil
}

// serve runs the bridge until SIGINT or SIGTERM.
func serve(args []string, getenv func(string) string, stderr io.Writer, lk lookups) error {
	c, err := parseConfig(args, getenv)
	if err != nil {
		if errors.Is(err, errHelp) {
			return err
		}
		return &usageError{err}
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:       "zeroclaw-bridge",
		Level:      c.LogLevel,
		Output:     stderr,
		JSONFormat: c.LogFormat == "json",
	})
	log.Info("starting", append([]any{"version", buildVersion()}, c.effective...)...)

	agentCmd, agentArgs, err := agentCommand(c, lk, log)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	acpMetrics := acp.NewMetrics(reg)
	metrics := bridge.NewMetrics(reg)
	kidMode := func() bool { return c.KidMode }
	if c.KidMode {
		metrics.KidModeActive.Set(1)
	}

	acpLog := log.Named("acp")
	acpCfg := acp.Config{
		Command:       agentCmd,
		Args:          agentArgs,
		InitTimeout:   c.InitTimeout,
		CancelGrace:   c.CancelGrace,
		AgentAlias:    c.AgentAlias,
		SessionCwd:    c.SessionCwd,
		ClientVersion: buildVersion(),
		Permissions:   &acp.Policy{Allow: c.PermAllow, Deny: c.PermDeny, KidMode: kidMode, Logger: acpLog.Named("permissions")},
		Logger:        acpLog,
		Metrics:       acpMetrics,
	}
	poolCfg := acp.PoolConfig{
		KeyMode:         c.SessionKey,
		MaxSessions:     c.MaxSessions,
		SessionIdle:     c.SessionIdle,
		SessionMaxTurns: c.SessionMaxTurns,
		SessionMaxAge:   c.SessionMaxAge,
		Logger:          acpLog.Named("pool"),
		Metrics:         acpMetrics,
	}
	if err := errors.Join(acpCfg.Validate(), poolCfg.Validate()); err != nil {
		return &usageError{err}
	}
	sup := acp.NewSupervisor(acpCfg)
	pool := acp.NewPool(poolCfg, sup)
	httpCfg := bridge.Config{Host: c.Host, Port: c.Port, Logger: log.Named("bridge"), Gatherer: reg, Agent: sup, Sessions: pool}
	if err := httpCfg.Validate(); err != nil {
		return &usageError{err}
	}
	srv := bridge.New(httpCfg)

	var g run.Group
	addActor(&g, srv.Run)  // 1: stop taking requests, drain them
	addActor(&g, pool.Run) // 2: finish cancel settlements
	addActor(&g, sup.Run)  // 3: retire sessions, stop the child
	g.Add(run.SignalHandler(context.Background(), syscall.SIGINT, syscall.SIGTERM))

	if err := g.Run(); !errors.Is(err, run.ErrSignal) {
		return err
	}
	log.Info("stopped")
	return nil
}

// addActor adds a Run(ctx) component whose interrupt cancels its ctx and
// waits for it to return, so actors stop one after another in Add order.
func addActor(g *run.Group, runFn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.Add(func() error {
		defer close(done)
		return runFn(ctx)
	}, func(error) {
		cancel()
		<-done
	})
}
