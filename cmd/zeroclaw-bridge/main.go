// Command zeroclaw-bridge is the bridge of the dotty-stackchan desk robot: a
// single-binary, drop-in replacement for bridge.py. It serves
// xiaozhi-esp32-server over HTTP and drives one supervised `zeroclaw acp`
// child over the Agent Client Protocol.
//
// Usage:
//
//	zeroclaw-bridge [flags]            serve (configuration from flags and env)
//	zeroclaw-bridge demo-agent         run the built-in demo ACP agent on stdio
//	zeroclaw-bridge acp                the same, named like `zeroclaw acp`
//	zeroclaw-bridge version            print the version
//
// Every setting is an environment variable with a flag of the same meaning;
// `zeroclaw-bridge -h` lists them with their defaults, and
// docs/configuration.md describes each. Exit status: 0 after a clean
// shutdown (SIGINT or SIGTERM), 2 for invalid configuration or usage, 1 for
// any other failure.
package main

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
	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sidecar"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// when empty, buildVersion falls back to the module version or "dev".
var version = ""

// fallbackZeroclaw is where bridge.py deployments install ZeroClaw.
const fallbackZeroclaw = "/root/.cargo/bin/zeroclaw"

// defaultChunkDelay is the demo agent's pause between reply chunks.
const defaultChunkDelay = 40 * time.Millisecond

// defaultMemoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// is set: the collector works harder as the heap nears it, so a burst of
// connections or uploads costs CPU time rather than tens of MiB of RSS on a
// small host. It is soft: a live heap above it is never refused.
const defaultMemoryLimit = 48 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	err := run(context.Background(), os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode maps run's error to the exit status, printing it to stderr: 0 for
// nil, 2 for a usage or configuration error (one line per problem), 1 for
// anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
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

// run is the whole program: it dispatches the subcommand and, for the
// default one, parses the configuration and serves until a signal or the
// end of ctx. It reads the environment only through lookupEnv.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "demo-agent", "acp": // "acp": the binary can stand in for `zeroclaw acp` (ZEROCLAW_BIN=itself)
			return runDemoAgent(ctx, args[1:], os.Stdin, stdout, stderr)
		case "version":
			return printVersion(stdout)
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
	return serve(ctx, cfg, newLogger(cfg, stderr), systemLookups())
}

func printVersion(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "zeroclaw-bridge", buildVersion()); err != nil {
		return fmt.Errorf("print version: %w", err)
	}
	return nil
}

// buildVersion is the -ldflags version, else the module version from the
// build info, else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// newLogger builds the root logger: stderr, LOG_LEVEL, LOG_FORMAT.
func newLogger(cfg config, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "zeroclaw-bridge",
		Level:      cfg.LogLevel,
		Output:     w,
		JSONFormat: cfg.LogFormat == "json",
	})
}

// runDemoAgent serves the built-in demo agent on in/out until in closes or
// SIGINT/SIGTERM arrives. stdout is the protocol channel, so logs go to
// stderr only.
func runDemoAgent(ctx context.Context, args []string, in io.Reader, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("zeroclaw-bridge demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	delay := fs.Duration("chunk-delay", defaultChunkDelay, "pause between streamed reply chunks")
	level := fs.String("log-level", "warn", "trace, debug, info, warn or error (logs go to stderr)")
	flood := fs.Int("stderr-flood", 0, "write this many noise lines to stderr every second (fault injection for soak tests; 0 = off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Errorf("demo-agent: unexpected argument %q", fs.Arg(0))}
	}
	if *delay < 0 {
		return &usageError{fmt.Errorf("demo-agent: invalid -chunk-delay %s: want 0 or more", *delay)}
	}
	lvl := hclog.LevelFromString(*level)
	if lvl == hclog.NoLevel {
		return &usageError{fmt.Errorf("demo-agent: invalid -log-level %q: want trace, debug, info, warn or error", *level)}
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
	if err := demoagent.Serve(ctx, in, out, demoagent.Options{ChunkDelay: *delay, Logger: log}); err != nil {
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
}

func systemLookups() lookups {
	return lookups{lookPath: exec.LookPath, executable: os.Executable}
}

// agentCommand chooses the agent: ZEROCLAW_BIN when set,
// even if it does not exist (the supervisor reports that on /health); else
// zeroclaw on PATH or at the cargo install path; else this binary's
// demo-agent subcommand, announced by one WARN line.
func agentCommand(cfg config, lk lookups, log hclog.Logger) (command string, args []string, err error) {
	acpArgs := append([]string{"acp"}, cfg.ZeroclawArgs...)
	if cfg.ZeroclawBin != "" {
		return cfg.ZeroclawBin, acpArgs, nil
	}
	if p := acp.LookupAgent(lk.lookPath, fallbackZeroclaw); p != "" {
		return p, acpArgs, nil
	}
	self, err := lk.executable()
	if err != nil {
		return "", nil, fmt.Errorf("locate this binary to run the demo agent: %w", err)
	}
	log.Warn("no zeroclaw binary found (ZEROCLAW_BIN is unset, no zeroclaw on PATH, none at " +
		fallbackZeroclaw + "); running the built-in demo agent, which answers with canned emoji replies")
	return self, []string{"demo-agent"}, nil
}

// serve builds every component from cfg and runs them in one run group
// until SIGINT, SIGTERM or the end of ctx. Teardown follows the group's Add
// order: the HTTP server drains first, then queued memory writes reach
// brain.db, then the pool settles cancelled turns, then the supervisor
// retires sessions and stops the agent.
func serve(ctx context.Context, cfg config, log hclog.Logger, lk lookups) error {
	log.Info("starting", append([]any{"version", buildVersion()}, cfg.effective()...)...)

	command, args, err := agentCommand(cfg, lk, log)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	acpMetrics := acp.NewMetrics(reg)
	metrics := bridge.NewMetrics(reg)
	// Kid mode is read live from its state file (DOTTY_KID_MODE when absent)
	// by both the voice prompt and the permission policy.
	modes := admin.NewModes(admin.ModesConfig{
		KidStatePath:   cfg.KidStatePath,
		KidDefault:     cfg.KidMode,
		SmartStatePath: cfg.SmartStatePath,
		KidGauge:       metrics.KidModeActive,
		Logger:         log.Named("admin"),
	})

	safety, err := admin.NewSafety(cfg.ToolAllowList)
	if err != nil {
		log.Warn("tool allow list unreadable; using the default list", "error", err)
	}

	acpLog := log.Named("acp")
	supCfg := acp.Config{
		Command:          command,
		Args:             args,
		DropEnv:          agentDropEnv(),
		InitTimeout:      cfg.InitTimeout,
		CancelGrace:      cfg.CancelGrace,
		UnavailableGrace: cfg.UnavailableGrace,
		AgentAlias:       cfg.AgentAlias,
		SessionCwd:       cfg.SessionCwd,
		ClientVersion:    buildVersion(),
		Permissions: &acp.Policy{
			Allow:     cfg.PermAllow,
			AllowLive: safety.List,
			Deny:      cfg.PermDeny,
			KidMode:   modes.KidMode,
			Logger:    acpLog.Named("permission"),
		},
		Logger:  acpLog,
		Metrics: acpMetrics,
	}
	poolCfg := acp.PoolConfig{
		KeyMode:         cfg.SessionKey,
		MaxSessions:     cfg.MaxSessions,
		SessionQueue:    cfg.SessionQueue,
		SessionIdle:     cfg.SessionIdle,
		SessionMaxTurns: cfg.SessionMaxTurns,
		SessionMaxAge:   cfg.SessionMaxAge,
		Logger:          acpLog.Named("pool"),
		Metrics:         acpMetrics,
	}
	sup := acp.NewSupervisor(supCfg)
	pool := acp.NewPool(poolCfg, sup)
	httpCfg := bridge.Config{
		Host:     cfg.Host,
		Port:     cfg.Port,
		Logger:   log.Named("bridge"),
		Gatherer: reg,
		Agent:    sup,
		Sessions: pool,

		IdleTimeout:   cfg.IdleTimeout,
		BodyTimeout:   cfg.BodyTimeout,
		UploadTimeout: cfg.UploadTimeout,
		MaxConns:      cfg.MaxConns,
		UploadPaths:   []string{cfg.SidecarPath},
		TurnedAway:    metrics.ConnectionsTurnedAway,
	}
	if err := errors.Join(supCfg.Validate(), poolCfg.Validate(), httpCfg.Validate()); err != nil {
		return &usageError{err}
	}
	periCfg := periphery.Config{
		Location:         cfg.TZ,
		WeatherLocation:  cfg.WeatherLocation,
		WeatherURL:       cfg.WeatherURL,
		WeatherTTL:       cfg.WeatherTTL,
		CalendarIDs:      cfg.CalendarIDs,
		GWSBin:           cfg.GWSBin,
		CalendarSAPath:   cfg.CalendarSAPath,
		CalendarTTL:      cfg.CalendarTTL,
		CalendarPoll:     cfg.CalendarPoll,
		HouseholdBucket:  cfg.HouseholdBucket,
		PersonPrefix:     cfg.PersonPrefix,
		Logger:           log.Named("periphery"),
		CalendarFailures: metrics.CalendarFetchFailures,
	}
	turns := turnbus.New()
	voiceCfg := bridge.VoiceConfig{
		Agent:        pool,
		Timeout:      cfg.Timeout,
		MaxSentences: cfg.MaxSentences,
		Location:     cfg.TZ,
		KidMode:      modes,
		ConvoLog:     convolog.New(convolog.Config{Dir: cfg.ConvoLogDir, Location: cfg.TZ, Logger: log.Named("convolog")}),
		Turns:        turns,
		Metrics:      metrics,
		Logger:       log.Named("voice"),
	}
	memCfg := memstore.Config{
		Path:       cfg.MemoryDB,
		AgentAlias: cfg.AgentAlias,
		Logger:     log.Named("memory"),
	}
	xz := xiaozhi.New(xiaozhi.Config{
		Host:   cfg.XiaozhiHost,
		Port:   cfg.XiaozhiPort,
		Token:  cfg.AdminToken,
		Logger: log.Named("xiaozhi"),
	})
	mem := memstore.New(memCfg)
	tier1Cfg := tier1.Config{
		Memory:  mem,
		Xiaozhi: xz,
		Thinker: tier1.ThinkerConfig{
			URL:     cfg.ThinkerURL,
			Model:   cfg.ThinkerModel,
			Timeout: cfg.ThinkerTimeout,
		},
		SongAssetBase: cfg.SongAssetBase,
		Dropped:       metrics.MemoryWritesDropped,
		Logger:        log.Named("tier1"),
	}
	if err := errors.Join(periCfg.Validate(), voiceCfg.Validate(), memCfg.Validate(), tier1Cfg.Validate()); err != nil {
		return &usageError{err}
	}
	peri := periphery.New(periCfg)
	voiceCfg.Context = peri
	srv := bridge.New(httpCfg)
	percep := perception.New(perception.Config{
		Robot:           xz,
		Consumers:       cfg.Consumers,
		Location:        cfg.TZ,
		Stopping:        srv.Stopping(),
		Events:          metrics.PerceptionEvents,
		Dropped:         metrics.PerceptionDropped,
		Evictions:       metrics.SSEEvictions,
		RequestDuration: metrics.RequestDuration.WithLabelValues("perception_event"),
		DevicesEvicted:  metrics.PerceptionDevicesEvicted,
		MaxDevices:      cfg.MaxDevices,
		MaxFeedClients:  cfg.FeedMaxClients,
		Logger:          log.Named("perception"),
	})
	voiceCfg.Perception = percep
	visionKey := firstNonEmpty(cfg.VisionAPIKey, cfg.OpenRouterKey)
	sight := vision.New(vision.Config{
		MaxDevices: cfg.MaxDevices,
		MaxWaiters: cfg.VisionMaxWaiters,
		Vision: vision.Model{
			URL:     firstNonEmpty(cfg.VLMAPIURL, cfg.VisionAPIURL),
			Model:   firstNonEmpty(cfg.VLMModel, cfg.VisionModel),
			APIKey:  firstNonEmpty(cfg.VLMAPIKey, visionKey),
			Timeout: cfg.VisionTimeout,
		},
		Audio: vision.Model{
			URL:     cfg.AudioAPIURL,
			Model:   cfg.AudioModel,
			APIKey:  firstNonEmpty(cfg.AudioAPIKey, visionKey),
			Timeout: cfg.AudioTimeout,
		},
		KidMode:          modes.KidMode,
		Household:        percep.Household(),
		Perception:       percep,
		RoomViewCooldown: cfg.RoomViewCooldown,
		TalkKickoffGrace: cfg.TalkKickoffGrace,
		VisionDuration:   metrics.RequestDuration.WithLabelValues("vision_explain"),
		AudioDuration:    metrics.RequestDuration.WithLabelValues("audio_explain"),
		Logger:           log.Named("vision"),
	})
	percep.UseSenses(sight)
	tier1Cfg.Vision = sight
	voice := bridge.NewVoice(voiceCfg)
	voice.Routes(srv.Echo())
	if cfg.STTURL != "" {
		side := sidecar.New(sidecar.Config{
			Path: cfg.SidecarPath, Token: cfg.SidecarToken, AllowNoToken: cfg.SidecarAllowNoToken,
			PersonasDir: cfg.SidecarPersonas, DefaultPersona: cfg.SidecarPersona, Deadline: cfg.SidecarDeadline,
			STT:         sidecar.STT{URL: cfg.STTURL, Model: cfg.STTModel, APIKey: cfg.STTAPIKey, Language: cfg.STTLanguage, Timeout: cfg.STTTimeout},
			Voice:       voice,
			STTDuration: metrics.RequestDuration.WithLabelValues("sidecar_stt"),
			Failures:    metrics.SidecarFailures,
			Logger:      log.Named("sidecar"),
		})
		side.Routes(srv.Echo())
		log.Info("serving the Stack-chan firmware sidecar", "path", cfg.SidecarPath, "stt", cfg.STTURL, "token", cfg.SidecarToken != "")
	}
	tier1.New(tier1Cfg).Routes(srv.Echo())
	percep.Routes(srv.Echo())
	sight.Routes(srv.Echo())
	dash := ui.New(ui.Config{
		Turns:      turns,
		User:       cfg.DashboardUser,
		Pass:       cfg.DashboardPass,
		Stopping:   srv.Stopping(),
		Location:   cfg.TZ,
		MaxClients: cfg.DashboardClients,
		Logger:     log.Named("ui"),
	})
	dash.Routes(srv.Echo())
	cloudKey := cfg.CloudAPIKey
	if cloudKey == "" {
		cloudKey = cfg.OpenRouterKey
	}
	adminRoutes := admin.NewHandler(admin.Config{
		Modes:           modes,
		Robot:           xz,
		Provider:        cfg.VoiceProvider,
		SmartOn:         admin.Target{Model: cfg.SmartModel, URL: cfg.CloudURL, APIKey: cloudKey},
		SmartOff:        admin.Target{Model: cfg.LocalModel, URL: cfg.LocalURL, APIKey: cfg.LocalAPIKey},
		DefaultModel:    cfg.DefaultModel,
		Workspace:       cfg.Workspace,
		VoiceConfig:     cfg.VoiceCfg,
		DiscordConfig:   cfg.DiscordCfg,
		VoiceUnit:       cfg.VoiceUnit,
		DiscordUnit:     cfg.DiscordUnit,
		LocalProfileKey: cfg.LocalProfileKey,
		CloudProfileKey: cfg.CloudProfileKey,
		Safety:          safety,
		Agent:           sup,
		Sessions:        pool,
		Logger:          log.Named("admin"),
	})
	adminRoutes.Routes(srv.Echo())
	// Start-up reconcile: once smart mode has been set, the agent's
	// configured model follows it (ZeroClaw path) before the supervisor
	// starts the agent. A never-set mode leaves the config alone.
	if smart, ok := modes.SmartModeStored(); ok {
		adminRoutes.ReconcileAgentModel(smart)
	}
	if adminRoutes.Tier1Slim() {
		// Start-up reconcile (A3): xiaozhi's Tier1Slim gets the stored smart mode's model.
		go adminRoutes.PushTier1Slim(ctx, modes.SmartMode())
	}

	var g oklogrun.Group
	// 0: systemd readiness and watchdog (no-op without NOTIFY_SOCKET); its
	// interrupt sends STOPPING=1 first.
	addActor(&g, newNotifier(srv.Addr, sup.Health, log.Named("systemd")).Run)
	addActor(&g, srv.Run)    // 1: stop accepting, drain requests (ShutdownTimeout)
	addActor(&g, percep.Run) // 2: stop the consumers, finish robot calls in flight
	addActor(&g, dash.Run)   // 2b: stop following voice turns
	addActor(&g, mem.Run)    // 3: write every accepted memory (DrainTimeout)
	addActor(&g, pool.Run)   // 4: finish background cancel settlements
	addActor(&g, sup.Run)    // 5: retire sessions, stop the agent child
	addActor(&g, peri.Run)   // 6: stop refreshing weather and calendar

	var shutdownStart time.Time // written by the signal actor before g.Run returns
	sigExec, sigInterrupt := oklogrun.SignalHandler(ctx, syscall.SIGINT, syscall.SIGTERM)
	g.Add(func() error { // 7: signals, or the end of ctx
		err := sigExec()
		shutdownStart = time.Now()
		log.Info("shutting down", "reason", err)
		return err
	}, sigInterrupt)

	err = g.Run()
	var sig *oklogrun.SignalError
	switch {
	case errors.As(err, &sig), err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
	default:
		log.Error("stopped", "error", err)
		return err
	}
	log.Info("stopped", "shutdown", time.Since(shutdownStart))
	return nil
}

// addActor adds a Run(ctx) component to g. Its interrupt cancels the
// component's own ctx and waits for Run to return, so oklog/run's
// sequential interrupts stop the actors one after another in Add order.
func addActor(g *oklogrun.Group, runFn func(context.Context) error) {
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

// firstNonEmpty returns the first non-empty value (the spec's fallbacks).
func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
