package bridgeapp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/openapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sidecar"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// serve builds the bridge from cfg and runs it until SIGINT, SIGTERM or
// the end of ctx.
func serve(ctx context.Context, cfg config, log hclog.Logger, lk lookups) error {
	log.Debug("configuration", append([]any{"version", buildVersion()}, cfg.effective()...)...)
	// The robot tools' listener first: its URL goes into the agent's
	// sessions (ACP agents only: a steerable-sidecar takes no MCP servers).
	if cfg.Agent.Protocol != protocolSteerable {
		cfg.MCP.listener = listenTools(cfg.MCP, log.Named("robottools"))
	}
	b, err := build(cfg, log, lk)
	if err != nil {
		cfg.MCP.listener.close()
		return err
	}
	// Bind before anything starts: a taken port is said once, with its
	// likely cause, and the agent is never started for nothing.
	if err := b.srv.Listen(); err != nil {
		cfg.MCP.listener.close()
		return listenError(cfg, err)
	}
	b.banner()
	if lk.opts.Ready != nil {
		b.probe.addr = b.srv.Addr()
		lk.opts.Ready(b.probe)
	}
	return b.run(ctx)
}

// listenError explains a failed listen. A taken port names bridge.py as
// its likely cause (exit status 1). A host that is no name or address of
// this machine, or a port below 1024 without the right, is a
// configuration error naming its flag or variable (exit status 2).
func listenError(cfg config, err error) error {
	var dns *net.DNSError
	switch {
	case errors.Is(err, bridge.ErrPortInUse):
		return fmt.Errorf("port %d is in use — is bridge.py still running? (%w)", cfg.HTTP.Port, err)
	case errors.As(err, &dns), errors.Is(err, syscall.EADDRNOTAVAIL):
		return &usageError{fmt.Errorf("invalid %s %q: not a name or address of this machine (%w)",
			cfg.nameOf("BRIDGE_HOST"), cfg.shown("BRIDGE_HOST", cfg.HTTP.Host), err)}
	case errors.Is(err, syscall.EACCES):
		return &usageError{fmt.Errorf("invalid %s %q: a port below 1024 needs root or CAP_NET_BIND_SERVICE (%w)",
			cfg.nameOf("PORT"), cfg.shown("PORT", strconv.Itoa(cfg.HTTP.Port)), err)}
	}
	return err
}

// docsURL is where the operator's documentation lives.
const docsURL = "https://github.com/zeroclaw-bridge/zeroclaw-bridge/tree/main/docs"

// banner is the start's few readable lines: where it listens, the
// dashboard, which agent answers, where state and logs go, the docs.
func (b *bridgeApp) banner() {
	cfg := b.cfg
	addr := b.srv.Addr()
	host, port, _ := net.SplitHostPort(addr)
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "localhost"
	}
	ui := "http://" + net.JoinHostPort(host, port) + "/ui"
	b.log.Info("zeroclaw-bridge "+buildVersion()+" listening", "addr", addr, "dashboard", ui)
	b.log.Info("agent", "command", b.agent, "protocol", cmp.Or(cfg.Agent.Protocol, protocolACP))
	b.log.Info("files", "logs", cfg.ConvoLog.Dir, "memory", cfg.Memory.Path, "kid_mode_state", cfg.Modes.KidStatePath,
		"household", cmp.Or(cfg.Perception.Consumers.HouseholdPath, "none"))
	b.log.Info("docs: " + docsURL + " (the full configuration is logged at LOG_LEVEL=debug)")
}

// bridgeApp is the bridge built and wired, not yet running.
type bridgeApp struct {
	log    hclog.Logger
	reg    *prometheus.Registry
	srv    *bridge.Server
	cfg    config // as built (the demo mode moves files)
	agent  string // the agent command as the banner shows it
	actors []actor

	// probe is the embedding program's look in (Options.Ready); wired
	// holds every completed config that has a clock, for the test that
	// none is left unset.
	probe *App
	wired []any

	stopMu sync.Mutex
	stop   context.CancelCauseFunc // ends run's context; set while run runs
}

// restartRequest is the cause of a shutdown the dashboard asked for: run
// returns it, and the process exits with exitRestart so its supervisor
// (the systemd unit, the container's restart policy) starts it again.
type restartRequest struct{ reason string }

func (r *restartRequest) Error() string { return "restart requested (" + r.reason + ")" }

// restart ends run through the normal graceful shutdown with a
// restartRequest; before run starts it does nothing.
func (b *bridgeApp) restart(reason string) {
	b.stopMu.Lock()
	stop := b.stop
	b.stopMu.Unlock()
	if stop != nil {
		stop(&restartRequest{reason})
	}
}

// actor is a component with a Run(ctx) lifecycle, named for the log.
type actor struct {
	name string
	run  func(context.Context) error
}

// build completes every component's config from the parsed settings,
// validates them all in one joined call (exit status 2 lists every
// problem), then constructs the components in dependency order. Nothing
// starts: no goroutine, no child, no socket until run.
func build(cfg config, log hclog.Logger, lk lookups) (*bridgeApp, error) {
	app := &bridgeApp{log: log}
	command, args, err := agentCommand(cfg, lk, log)
	if err != nil {
		return nil, err
	}
	if slices.Contains(args, "demo-agent") {
		cfg = cfg.withDemoState(log)
	}
	for _, n := range cfg.notes {
		log.Warn(n.text)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	acpMetrics := acp.NewMetrics(reg)
	metrics := bridge.NewMetrics(reg)

	// Settings first: what each component needs besides its own settings
	// (logger, metrics, the values several components share). conds is
	// the one health conditions set: every component that must write
	// files marks it, /health reports it, its actor re-checks it.
	c := cfg
	// One clock for every component: the real one, or the embedding
	// program's (the household simulator's fake).
	clock := lk.opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	c.ACP.Clock, c.Pool.Clock, c.Access.Clock, c.Periphery.Clock, c.Voice.Clock = clock, clock, clock, clock, clock
	c.Memory.Clock, c.Tier1.Clock, c.Perception.Clock, c.Vision.Clock = clock, clock, clock, clock
	c.UI.Clock, c.Admin.Clock, c.Social.Clock = clock, clock, clock
	c.ACP.Env = append(slices.Clone(c.ACP.Env), lk.opts.AgentEnv...)
	if t := lk.opts.Transport; t != nil {
		client := &http.Client{Transport: t}
		c.Xiaozhi.HTTPClient, c.Vision.Vision.HTTPClient, c.Vision.Audio.HTTPClient = client, client, client
		c.Narrative.HTTPClient, c.Tier1.Thinker.HTTPClient, c.Sidecar.STT.HTTPClient = client, client, client
		c.Periphery.HTTPClient = client // the weather's fetch keeps its overall bound
	}
	healthCfg := health.Config{Logger: log.Named("health"), Clock: clock}
	conds := health.NewWith(healthCfg)
	c.Modes.Metrics, c.Modes.Logger, c.Modes.Health = admin.NewMetrics(reg), log.Named("admin"), conds
	acpLog := log.Named("acp")
	c.ACP.Command, c.ACP.Args, c.ACP.DropEnv = command, args, agentDropEnv()
	c.ACPClient.ClientVersion, c.ACP.Logger, c.ACP.Metrics = buildVersion(), acpLog, acpMetrics
	c.Permissions.Logger = acpLog.Named("permission")
	c.Pool.Logger, c.Pool.Metrics = acpLog.Named("pool"), acpMetrics
	c.HTTP.Logger, c.HTTP.Gatherer, c.HTTP.TurnedAway = log.Named("bridge"), reg, metrics.ConnectionsTurnedAway
	c.HTTP.Version, c.HTTP.Health = buildVersion(), conds
	c.HTTP.UploadPaths = []string{c.Sidecar.Path}
	// One Host, Origin and credentials rule for every route: the server's
	// writes, /admin, /ui and the household's reads.
	c.Access.Logger = log.Named("access")
	access := httpapi.NewAccess(c.Access)
	c.HTTP.Access, c.Admin.Access, c.UI.Access = access, access, access
	c.Perception.Access, c.Social.Access, c.Periphery.Access = access, access, access
	c.HTTP.UploadBudgetInUse, c.HTTP.UploadBudgetWaiting = metrics.UploadBudgetInUse, metrics.UploadBudgetWaiting
	c.HTTP.UploadsRefused = metrics.UploadsRefused
	c.Periphery.Location, c.Periphery.Logger, c.Periphery.Metrics = c.TZ, log.Named("periphery"), periphery.NewMetrics(reg)
	c.Periphery.RequestDuration = metrics.RequestDuration.WithLabelValues(periphery.EndpointCalendarToday)
	c.Periphery.RequestErrors = metrics.RequestErrors.WithLabelValues(periphery.EndpointCalendarToday, voice.KindException)
	journals := convolog.NewMetrics(reg)
	c.ConvoLog.Location, c.ConvoLog.Logger, c.ConvoLog.Failures = c.TZ, log.Named("convolog"), journals.Failures("convo")
	c.ConvoLog.Health = conds
	c.Voice.Location, c.Voice.Metrics, c.Voice.Logger = c.TZ, voice.NewMetrics(reg, metrics), log.Named("voice")
	c.Memory.AgentAlias, c.Memory.Logger, c.Memory.Health = c.ACPClient.AgentAlias, log.Named("memory"), conds
	c.Memory.Metrics = memstore.NewMetrics(reg)
	c.Xiaozhi.Logger = log.Named("xiaozhi")
	c.Tier1.Metrics, c.Tier1.Logger = tier1.NewMetrics(reg), log.Named("tier1")
	c.Perception.Location, c.Perception.Logger = c.TZ, log.Named("perception")
	c.Perception.Metrics = perception.NewMetrics(reg)
	c.Perception.JournalDir, c.Perception.JournalMetrics, c.Perception.Health = c.ConvoLog.Dir, journals, conds
	c.Perception.RequestDuration = metrics.RequestDuration.WithLabelValues("perception_event")
	c.Vision.MaxDevices, c.Vision.Logger = c.Perception.MaxDevices, log.Named("vision")
	visionKey := cmp.Or(c.Keys.Vision, c.Keys.OpenRouter)
	// Dreams and dance reflections go to VISION_API_URL with the vision
	// key, as bridge.py's narrative calls did (VLM_* overrides only the
	// photo path).
	c.Narrative.URL, c.Narrative.APIKey, c.Narrative.Logger = c.Vision.Vision.URL, visionKey, log.Named("narrative")
	c.Vision.Vision.URL = cmp.Or(c.Keys.VLMURL, c.Vision.Vision.URL)
	c.Vision.Vision.Model = cmp.Or(c.Keys.VLMModel, c.Vision.Vision.Model)
	c.Vision.Vision.APIKey = cmp.Or(c.Keys.VLM, visionKey)
	c.Vision.Audio.APIKey = cmp.Or(c.Keys.Audio, visionKey)
	c.Vision.VisionDuration = metrics.RequestDuration.WithLabelValues("vision_explain")
	c.Vision.AudioDuration = metrics.RequestDuration.WithLabelValues("audio_explain")
	c.UI.Location, c.UI.Logger = c.TZ, log.Named("ui")
	c.Admin.SmartOn.APIKey = cmp.Or(c.Keys.Cloud, c.Keys.OpenRouter)
	c.Admin.Logger, c.Admin.Health = log.Named("admin"), conds
	c.Sidecar.STTDuration = metrics.RequestDuration.WithLabelValues("sidecar_stt")
	c.Sidecar.Metrics, c.Sidecar.Logger = sidecar.NewMetrics(reg), log.Named("sidecar")
	withSidecar := c.Sidecar.STT.URL != ""

	c.Social.Location, c.Social.Logger = c.TZ, log.Named("perception")
	c.Social.JournalDir, c.Social.JournalMetrics, c.Social.Health = c.ConvoLog.Dir, journals, conds
	if c.Social.Settings.GreetAgentTimeout == 0 {
		c.Social.Settings.GreetAgentTimeout = c.Voice.Timeout // a greeting is a turn like any other
	}

	errs := []error{c.ACP.Validate(), c.ACPClient.Validate(), c.Pool.Validate(), c.HTTP.Validate(), c.Periphery.Validate(),
		c.Voice.Validate(), c.Memory.Validate(), c.Tier1.Validate(), c.Perception.Validate(),
		c.Vision.Validate(), c.UI.Validate(), c.Admin.Validate(), c.Social.Validate(), c.Narrative.Validate(), c.Steerable.Validate(), c.MCP.Validate()}
	if withSidecar {
		errs = append(errs, c.Sidecar.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &usageError{err}
	}

	// Then the components, each after what it depends on. Kid mode is read
	// live from its state file by the prompt, the permission policy and
	// the vision prompt.
	modes := admin.NewModes(c.Modes)
	safety, err := admin.NewSafety(c.ToolAllowList)
	if err != nil {
		log.Warn("tool allow list unreadable; using the default list", "error", err)
	}
	policy := c.Permissions
	policy.AllowLive, policy.KidMode = safety.List, modes.KidMode
	// The robot's tools, for every ACP agent session: their server is
	// made below, once its dependencies are (they need the HTTP server,
	// which needs the agent's supervisor), before anything runs.
	var tokens *toolTokens
	if c.MCP.listener != nil && c.Agent.Protocol != protocolSteerable {
		tokens = &toolTokens{}
		c.ACPClient.Tools, c.ACPClient.ToolsURL = tokens, c.MCP.listener.url
		if self, err := lk.executable(); err == nil {
			c.ACPClient.ToolsRelay = []string{self, "mcp"}
		} else {
			log.Warn("agents without MCP over HTTP get no robot tools: the bridge's own path is unknown", "error", err)
		}
	}
	if c.Agent.Protocol == protocolSteerable {
		c.ACP.Protocol = steerable.New(c.Steerable) // the same supervisor and pool, another wire
	} else {
		c.ACPClient.Permissions = &policy
		c.ACP.Protocol = acpclient.New(c.ACPClient)
	}
	sup := acp.NewSupervisor(c.ACP)
	pool := acp.NewPool(c.Pool, sup)

	c.HTTP.Agent, c.HTTP.Sessions = sup, pool
	srv := bridge.New(c.HTTP)
	xz := xiaozhi.New(c.Xiaozhi)
	peri := periphery.New(c.Periphery)
	mem := memstore.New(c.Memory)
	cacheCfg := vision.CacheConfig{MaxDevices: c.Vision.MaxDevices, Clock: clock}
	sight := vision.NewCache(cacheCfg)

	c.Perception.Robot, c.Perception.Senses, c.Perception.Camera, c.Perception.Stopping = xz, sight, sight, srv.Stopping()
	c.Perception.Calendar = peri
	percep := perception.New(c.Perception)

	c.Vision.Cache, c.Vision.KidMode = sight, modes.KidMode
	c.Vision.Household, c.Vision.Perception = percep.Household(), percep
	eyes := vision.New(c.Vision)

	c.Tier1.Memory, c.Tier1.Xiaozhi, c.Tier1.Vision, c.Tier1.People = mem, xz, sight, percep.Household()
	calls := tier1.New(c.Tier1)

	var toolsRun, tokenRun func(context.Context) error
	var tools *robottools.Server
	if tokens != nil {
		t := c.MCP.withDefaults().Tools
		t.Robot, t.Voice, t.Vision, t.Room = xz, calls, sight, roomPeople{percep}
		if len(c.Periphery.CalendarIDs) > 0 {
			t.Calendar = calendarToday{peri}
		}
		t.Permissions, t.KidMode, t.Access, t.Registry = &policy, modes.KidMode, access, reg
		t.Logger, t.Clock = c.MCP.listener.log, clock
		c.MCP.Tools = t
		tools, err = robottools.New(t)
		if err != nil {
			return nil, &usageError{err}
		}
		tokens.Server = tools
		c.Voice.Robot = poolRobot{pool: pool, tools: tools}
		toolsRun = c.MCP.listener.serveFunc(tools.Handler())
		// ZeroClaw reads no mcpServers: its standing token in the file its
		// config's `zeroclaw-bridge mcp` reads (/admin/mcp-server).
		tokenRun = mcpTokenFileActor(tools, c.MCP.listener.url, c.Memory.Path, conds, c.MCP.listener.log)
		if len(c.ACPClient.ToolsRelay) > 0 {
			c.Admin.ZeroClawMCP = zeroclawMCPEntry(c.ACPClient.ToolsRelay[0], c.Memory.Path, c.ACPClient.AgentAlias)
		}
	}

	turns := turnbus.New(log.Named("turns"))
	c.Voice.Agent, c.Voice.KidMode, c.Voice.Turns = pool, modes, turns
	c.Voice.Perception, c.Voice.Context, c.Voice.Stopping = percep, peri, srv.Stopping()
	c.Voice.Speaker, c.Voice.PersonMemory = percep, mem
	c.Voice.ConvoLog = convolog.New(c.ConvoLog)
	voiceRoutes := voice.New(c.Voice)

	c.Social.Perception, c.Social.Robot, c.Social.Agent, c.Social.Calendar = percep, xz, agentPrompter{pool}, peri
	c.Social.KidMode, c.Social.Narrator, c.Social.ConvoLog = modes.KidMode, llm.NewNarrative(c.Narrative), c.Voice.ConvoLog
	household := social.New(c.Social)

	c.Admin.Modes, c.Admin.Robot, c.Admin.Safety = modes, xz, safety
	c.Admin.Agent, c.Admin.Sessions = sup, pool
	adminRoutes := admin.NewHandler(c.Admin)

	c.UI.Turns, c.UI.Stopping = turns, srv.Stopping()
	c.UI.Controls, c.UI.Modes, c.UI.Robot = adminRoutes, modes, xz
	c.UI.SongAssetBase, c.UI.XiaozhiHost, c.UI.Version = c.Tier1.SongAssetBase, c.Xiaozhi.Host, buildVersion()
	c.UI.DemoAgent = func() bool { return sup.Health().AgentName == demoagent.Name }
	c.UI.DemoAdvice = "For real answers, " + demoAdvice(c.Agent.Protocol) + "."
	c.UI.RecentEvents = percep.Bus().RecentJSON
	c.UI.XiaozhiHTTPPort, c.UI.StateDir, c.UI.ConvoLogPath = c.Xiaozhi.Port, c.ConvoLog.Dir, c.Voice.ConvoLog.Path
	c.UI.RobotsSeen = percep.States().Len
	c.UI.LatestPhoto = func(device string) (ui.Photo, bool) {
		d, p, ok := sight.LatestPhoto(device)
		return ui.Photo{Device: d, Description: p.Description, At: p.At, Size: len(p.JPEG), JPEG: p.JPEG}, ok
	}
	c.UI.PhotoList = func() []ui.Photo {
		var out []ui.Photo
		for _, p := range sight.Photos() {
			out = append(out, ui.Photo{Device: p.Device, Description: p.Description, At: p.At, Size: p.Bytes})
		}
		return out
	}
	c.UI.MemoryRecords = func(ctx context.Context) ([]ui.MemoryRecord, bool, error) {
		recs, more, err := mem.PersonRecords(ctx)
		out := make([]ui.MemoryRecord, len(recs))
		for i, r := range recs {
			out[i] = ui.MemoryRecord{ID: r.ID, PersonID: r.PersonID, Content: r.Content, Pending: r.Pending,
				Importance: r.Importance, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		}
		return out, more, err
	}
	c.UI.ApproveMemory, c.UI.RedactMemory = mem.Approve, mem.Redact
	// Operator controls: the restart ends run (exit status 75); the
	// daemon cards default to bridge.py's one, the Discord agent's unit.
	daemons := units.New(nil, log.Named("units"))
	c.UI.Operator.Restart, c.UI.Operator.Systemd = app.restart, daemons
	// The xiaozhi restart command (ssh, mostly) needs none of the
	// bridge's settings; its tokens and keys stay with the bridge.
	c.UI.Operator.XiaozhiRestartEnv = acp.ChildEnv(os.Environ(), settingsEnvExcept(nil))
	if !c.set("BRIDGE_DAEMON_UNITS") && units.Check(c.Admin.DiscordUnit) == nil {
		c.UI.Operator.Units = []string{c.Admin.DiscordUnit}
	}
	dash := ui.New(c.UI)
	dashRun := func(ctx context.Context) error { defer daemons.Close(); return dash.Run(ctx) }
	if !access.Locked() {
		log.Warn("the dashboard (/ui) has no credentials: anyone on the network can control the robot; " +
			"set DOTTY_DASHBOARD_USER and DOTTY_DASHBOARD_PASS to require them")
	}

	e := srv.Echo()
	voiceRoutes.Routes(e)
	if withSidecar {
		c.Sidecar.Voice, c.Sidecar.Stopping = voiceRoutes, srv.Stopping()
		sidecar.New(c.Sidecar).Routes(e)
		log.Info("serving the Stack-chan firmware sidecar", "path", c.Sidecar.Path, "stt", c.Sidecar.STT.URL, "token", c.Sidecar.Token != "")
	}
	calls.Routes(e)
	percep.Routes(e)
	household.Routes(e)
	eyes.Routes(e)
	peri.Routes(e)
	dash.Routes(e)
	adminRoutes.Routes(e)
	// The API description: no credentials (it shows nothing of the
	// household and ships with the source), a Host naming this machine.
	openapi.New(openapi.Config{Guard: access.OwnHost}).Routes(e)

	// Once smart mode has been set, the agent's configured model follows
	// it (ZeroClaw path) before the supervisor starts the agent; a
	// never-set mode leaves the config alone.
	if smart, ok := modes.SmartModeStored(); ok {
		adminRoutes.ReconcileAgentModel(smart)
	}

	// The order is the shutdown order: the HTTP server drains first, then
	// the consumers and background admin work stop, queued memory writes
	// reach brain.db, the pool settles cancelled turns, and the supervisor
	// retires sessions and stops the agent.
	agentDesc := filepath.Base(command) + " " + strings.Join(args, " ")
	if slices.Contains(args, "demo-agent") {
		agentDesc = "the built-in demo agent (" + demoAdvice(c.Agent.Protocol) + " for real answers)"
	}
	app.reg, app.srv, app.cfg, app.agent = reg, srv, cfg, agentDesc
	app.probe = &App{parts: appParts{sup: sup, pool: pool, sight: sight, percep: percep, social: household, tools: tools}}
	app.wired = []any{c, healthCfg, cacheCfg}
	app.actors = []actor{
		// systemd readiness and watchdog (no-op without NOTIFY_SOCKET);
		// its stop sends STOPPING=1 first.
		{"systemd", newNotifier(srv.Addr, sup.Health, log.Named("systemd")).Run},
		{"http", srv.Run},            // refuse new turns, let those in flight finish (ShutdownGrace), close
		{"perception", percep.Run},   // stop the consumers, finish robot calls in flight
		{"household", household.Run}, // stop the greeter, the dreamer and the dance reflector
		{"dashboard", dashRun},       // stop following voice turns
		{"admin", adminRoutes.Run},   // start-up Tier1Slim push, delayed unit restarts
		{"memory", mem.Run},          // write every accepted memory (DrainTimeout)
		{"pool", pool.Run},           // finish background cancel settlements
		{"agent", sup.Run},           // retire sessions, stop the agent child
		{"periphery", peri.Run},      // stop refreshing weather and calendar
		{"health", conds.Run},        // stop re-checking failing conditions
	}
	if toolsRun != nil { // after the agent: its turns still running may call the tools
		i := slices.IndexFunc(app.actors, func(a actor) bool { return a.name == "agent" })
		app.actors = slices.Insert(app.actors, i+1, actor{"robottools", toolsRun}, actor{"mcp-token", tokenRun})
	}
	return app, nil
}

// withDemoState moves every file setting still at bridge.py's production
// default (under /root or ~) into the user's state directory (c.demo), so
// a quick start needs no /root and writes nothing a real deployment would
// read; a setting given explicitly is kept. A note about a moved
// default's "~" is dropped: the file has a place again. Without a home the
// directory is a temporary one, checked first (demoState.tempDir).
func (c config) withDemoState(log hclog.Logger) config {
	type move struct {
		env string
		dst *string
		to  string
	}
	moves := []move{
		{"CONVO_LOG_DIR", &c.ConvoLog.Dir, "logs"},
		{"DOTTY_KID_MODE_STATE", &c.Modes.KidStatePath, "state/kid-mode"},
		{"DOTTY_SMART_MODE_STATE", &c.Modes.SmartStatePath, "state/smart-mode"},
		{"DOTTY_TOOL_ALLOWLIST", &c.ToolAllowList, "state/tool-allowlist"},
		{"VOICE_MEMORY_DB", &c.Memory.Path, "memory/brain.db"},
		{"ZEROCLAW_WORKSPACE", &c.Admin.Workspace, "workspace"},
		{"ZEROCLAW_VOICE_CFG", &c.Admin.VoiceConfig, "config.toml"},
		{"ZEROCLAW_DISCORD_CFG", &c.Admin.DiscordConfig, "discord.toml"},
		{"GREETER_STATE_PATH", &c.Social.Settings.GreeterStatePath, "greeter_state.json"},
		{"SIDECAR_PERSONAS_DIR", &c.Sidecar.PersonasDir, "personas"},
	}
	moves = slices.DeleteFunc(moves, func(m move) bool { return c.set(m.env) })
	if len(moves) == 0 {
		return c
	}
	dir := c.demo.Dir
	if c.demo.NoHome != "" {
		if dir = c.demo.tempDir(log); dir == "" {
			return c
		}
		c.demo.Dir = dir
	}
	notes := slices.Clone(c.notes)
	for _, m := range moves {
		*m.dst = filepath.Join(dir, m.to)
		notes = slices.DeleteFunc(notes, func(n note) bool { return n.env == m.env })
	}
	c.notes = notes
	if c.demo.NoHome != "" {
		log.Warn("demo mode: no home directory ("+c.demo.NoHome+"); files kept in a temporary directory a reboot may empty "+
			"(set XDG_STATE_HOME or HOME, or the variables, to keep them elsewhere)", "dir", dir)
	} else {
		log.Info("demo mode: files kept under the user's state directory (set the variables to keep them elsewhere)", "dir", dir)
	}
	return c
}

// demoAdvice is what replaces the demo agent with a real one, for the
// start banner and the dashboard.
func demoAdvice(protocol string) string {
	if protocol == protocolSteerable {
		return "install the steerable-sidecar Python package or set STEERABLE_CMD"
	}
	return "install ZeroClaw or set ZEROCLAW_BIN"
}

// agentPrompter runs the greeter's prompts as turns under their own
// session key, so a greeting never lands in a conversation in progress,
// taking only a free session slot, so it never closes a conversation's
// session to make room (with none free the greeter uses its template).
type agentPrompter struct{ pool *acp.Pool }

func (a agentPrompter) Prompt(ctx context.Context, key, prompt string) (string, error) {
	res, err := a.pool.Turn(ctx, acp.TurnRequest{Key: key, Prompt: func(int) string { return prompt }, NoEvict: true})
	if err != nil {
		return "", fmt.Errorf("greeting turn: %w", err)
	}
	return res.Text, nil
}

// run starts every actor and waits for SIGINT, SIGTERM, the end of ctx or
// a restart request; then it stops the actors one after another in their
// order. After a restart request it returns that *restartRequest.
func (b *bridgeApp) run(ctx context.Context) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	b.stopMu.Lock()
	b.stop = stop
	b.stopMu.Unlock()
	var g oklogrun.Group
	for _, a := range b.actors {
		addActor(&g, a)
	}
	var shutdownStart time.Time // written by the signal actor before g.Run returns
	sigExec, sigInterrupt := oklogrun.SignalHandler(ctx, syscall.SIGINT, syscall.SIGTERM)
	g.Add(func() error {
		err := sigExec()
		shutdownStart = time.Now()
		reason := err
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			reason = context.Cause(ctx)
		}
		b.log.Info("shutting down", "reason", reason)
		return err
	}, sigInterrupt)

	err := g.Run()
	var sig *oklogrun.SignalError
	switch {
	case errors.As(err, &sig), err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// A signal during the restart's delay wins: the stop was asked for.
		var restart *restartRequest
		if errors.As(context.Cause(ctx), &restart) {
			b.log.Info("stopped", "shutdown", time.Since(shutdownStart), "restart", true)
			return restart
		}
	default:
		b.log.Error("stopped", "error", err)
		return err
	}
	b.log.Info("stopped", "shutdown", time.Since(shutdownStart))
	return nil
}

// addActor adds a Run(ctx) component to g. Its interrupt cancels the
// component's own ctx and waits for Run to return, so oklog/run's
// sequential interrupts stop the actors one after another in Add order.
func addActor(g *oklogrun.Group, a actor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.Add(func() error {
		defer close(done)
		if err := a.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		return nil
	}, func(error) {
		cancel()
		<-done
	})
}
