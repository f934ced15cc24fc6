package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Robot is what the admin routes push to the robot (*xiaozhi.Client).
type Robot interface {
	SetToggle(ctx context.Context, deviceID, name string, enabled bool) error
	SetState(ctx context.Context, deviceID, state string) error
	SetTier1SlimModel(ctx context.Context, model, url, apiKey string) error
}

// Agent restarts the supervised agent child (*acp.Supervisor).
type Agent interface {
	Restart(reason string) bool
}

// Sessions rotates open agent sessions (*acp.Pool).
type Sessions interface {
	RotateAll()
}

// Target is a Tier1Slim model to swap to.
type Target struct {
	Model, URL, APIKey string
}

// Config configures the /admin routes.
type Config struct {
	Modes *Modes
	Robot Robot
	// Provider is DOTTY_VOICE_PROVIDER; "tier1slim" switches smart mode to
	// xiaozhi's model hot-swap.
	Provider string
	// SmartOn and SmartOff are the Tier1Slim targets (SMART_MODEL and
	// TIER1SLIM_CLOUD_*, TIER1SLIM_LOCAL_*).
	SmartOn, SmartOff Target
	// DefaultModel is DOTTY_DEFAULT_MODEL, smart mode off on the ZeroClaw path.
	DefaultModel string

	// Workspace is ZEROCLAW_WORKSPACE, home of the persona files.
	Workspace string
	// VoiceConfig and DiscordConfig are ZeroClaw's config.toml files.
	VoiceConfig, DiscordConfig string
	// VoiceUnit and DiscordUnit are the systemd units reported (and, for
	// discord, restarted).
	VoiceUnit, DiscordUnit string
	// LocalProfileKey and CloudProfileKey select multi-profile editing.
	LocalProfileKey, CloudProfileKey string

	// ZeroClawMCP is the robot tools' entry /admin/mcp-server writes into
	// VoiceConfig; its zero value refuses the route (no tools served).
	ZeroClawMCP ZeroClawMCP

	// Safety is the /admin/safety allow list.
	Safety *Safety
	// Agent restarts the voice agent after its config changed; Sessions
	// rotates sessions after a persona change. Nil skips.
	Agent    Agent
	Sessions Sessions
	// RestartUnit restarts another daemon's unit (discord); nil queues it
	// for Run, which runs `systemctl restart <unit>` RestartDelay later.
	RestartUnit func(unit string)
	// RestartDelay lets the HTTP answer reach the caller before the unit
	// restarts (2 s).
	RestartDelay time.Duration
	// Clock times RestartDelay; nil is the real clock.
	Clock clockwork.Clock
	// Health is the conditions set the tool allow list's file marks while
	// it cannot be saved (GET /health); nil keeps a private set. The mode
	// state files are Modes'.
	Health *health.Conditions
	// Access names this machine for the Host and Origin checks; nil:
	// its own names and addresses only.
	Access *httpapi.Access

	Logger hclog.Logger
}

// DefaultConfig is the routes' settings as bridge.py had them: the voice
// provider, smart mode's models on both providers, ZeroClaw's files and
// units, the restart delay.
func DefaultConfig() Config {
	return Config{Provider: "zeroclaw",
		SmartOn:      Target{Model: "anthropic/claude-sonnet-4-6", URL: "https://openrouter.ai/api/v1"},
		SmartOff:     Target{Model: "qwen3.5:4b", URL: "http://localhost:8080/v1", APIKey: "dotty-voice"},
		DefaultModel: "mistralai/mistral-small-3.2-24b-instruct", CloudProfileKey: "custom:https://openrouter.ai/api/v1",
		Workspace: "/root/.zeroclaw/workspace", VoiceConfig: "/root/.zeroclaw/config.toml", VoiceUnit: "zeroclaw-bridge",
		DiscordConfig: "/root/.zeroclaw-discord/config.toml", DiscordUnit: "zeroclaw-discord", RestartDelay: 2 * time.Second}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("RestartDelay"); the bridge's
// command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("RestartDelay", c.RestartDelay >= 0, c.RestartDelay, "0 or more")
	return errs.Err()
}

// Handler serves /admin/* and, in Run, does the work that outlives a
// request: the start-up Tier1Slim push and delayed unit restarts.
type Handler struct {
	cfg Config
	log hclog.Logger

	modelMu sync.Mutex // serialises config.toml edits

	// restarts queues units for Run; a full queue drops the request with
	// a log line (the operator can ask again), so a handler never waits.
	restarts chan string
	// exec runs a command; tests replace it.
	exec func(ctx context.Context, name string, args ...string) (string, error)
}

// restartQueue bounds unit restarts waiting for Run.
const restartQueue = 4

// NewHandler returns the /admin routes; Run does their background work.
func NewHandler(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	fieldcheck.Fill(&cfg, DefaultConfig(), "RestartDelay")
	if cfg.Health == nil {
		cfg.Health = health.New()
	}
	if cfg.Access == nil {
		cfg.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: cfg.Logger})
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, restarts: make(chan string, restartQueue), exec: execCmd}
	if h.cfg.RestartUnit == nil {
		h.cfg.RestartUnit = h.queueRestart
	}
	if cfg.Workspace != "" {
		if n := removeStaleTemps(cfg.Workspace); n > 0 {
			cfg.Logger.Info("removed temporary persona files a crash left behind", "count", n)
		}
	}
	return h
}

// queueRestart hands a unit restart to Run without waiting.
func (h *Handler) queueRestart(unit string) {
	select {
	case h.restarts <- unit:
	default:
		h.log.Warn("unit restart not queued: too many restarts pending", "unit", unit)
	}
}

// Run pushes smart mode's model to xiaozhi when it uses Tier1Slim, then
// restarts queued units, each RestartDelay after it was asked for, until
// ctx ends; a restart still waiting then is dropped with a log line.
func (h *Handler) Run(ctx context.Context) error {
	if h.Tier1Slim() && h.cfg.Modes != nil {
		h.PushTier1Slim(ctx, h.cfg.Modes.SmartMode())
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case unit := <-h.restarts:
			t := h.cfg.Clock.NewTimer(h.cfg.RestartDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				h.log.Warn("shutting down before a unit restart", "unit", unit)
				return nil
			case <-t.Chan():
			}
			if out, err := h.exec(ctx, "systemctl", "restart", unit); err != nil {
				h.log.Error("restarting a unit failed", "unit", unit, "error", err, "output", out)
			}
		}
	}
}

// Routes mounts /admin/* behind the loopback guard.
func (h *Handler) Routes(e *echo.Echo) {
	// Route-level middleware, not a group: an echo group with middleware
	// would answer 404 instead of 405 for a wrong method.
	e.POST("/admin/kid-mode", h.kidMode, h.loopbackOnly)
	e.POST("/admin/smart-mode", h.smartMode, h.loopbackOnly)
	e.POST("/admin/state", h.state, h.loopbackOnly)
	e.POST("/admin/persona", h.persona, h.loopbackOnly)
	e.POST("/admin/model", h.model, h.loopbackOnly)
	e.POST("/admin/safety", h.safety, h.loopbackOnly)
	e.POST("/admin/mcp-server", h.mcpServer, h.loopbackOnly)
}

// Refusals of the admin guard.
var (
	errNotLocal   = httpapi.NewError(http.StatusForbidden, "admin endpoints are localhost-only")
	errForeignReq = httpapi.NewError(http.StatusForbidden, "admin requests must come from this host, not a web page or another name")
	errNotJSON    = httpapi.NewError(http.StatusUnsupportedMediaType, "admin requests must be application/json")
)

// loopbackOnly admits a request only when it comes from this machine
// (httpapi.LoopbackPeer: a loopback TCP peer, no forwarding header naming
// anything else). A loopback peer is not enough on its own: a web page
// open in a browser on the bridge's host is one too, so the Host must
// name this machine (DNS rebinding points a foreign name at 127.0.0.1)
// and an Origin, when sent, must be this machine too — the bridge's one
// Access rule — and the body must be declared application/json, even
// more strictly than other writes (a missing type is refused too). It
// answers before the body is read.
func (h *Handler) loopbackOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !httpapi.LoopbackPeer(r) {
			return errNotLocal
		}
		if !h.cfg.Access.LocalHost(r.Host) || !h.cfg.Access.LocalOrigin(r) {
			return errForeignReq
		}
		if !httpapi.IsJSON(r.Header.Get(echo.HeaderContentType)) {
			return errNotJSON
		}
		return next(c)
	}
}

// parse binds a JSON object body (FastAPI's 422 for anything else).
func parse(c echo.Context) (*httpapi.Binder, error) {
	return httpapi.Bind(c.Request().Body, 0)
}

// parseStrings binds a JSON object body with the two required string
// fields a and b.
func parseStrings(c echo.Context, a, b string) (x, y string, err error) {
	err = httpapi.BindFields(c.Request().Body, 0, func(f *httpapi.Binder) { x, y = f.String(a), f.String(b) })
	return x, y, err
}

// pushTimeout bounds an awaited robot push beyond the client's own 3 s.
const pushTimeout = 4 * time.Second

// ErrNoRobot is a push with no robot client configured.
var ErrNoRobot = errors.New("no robot client configured")

// push calls the robot within pushTimeout and returns why it did not take
// the call (nil: it did). A failure is logged; the setting is stored
// either way, and the robot catches up at its next change.
func (h *Handler) push(ctx context.Context, what string, call func(ctx context.Context, r Robot) error) error {
	if h.cfg.Robot == nil {
		return ErrNoRobot
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	if err := call(ctx, h.cfg.Robot); err != nil {
		h.log.Warn("robot push failed", "push", what, "error", err)
		return err
	}
	return nil
}

// ModeChange is the outcome of a kid- or smart-mode change.
type ModeChange struct {
	// Enabled is the mode's new value.
	Enabled bool
	// DevicePushed is whether the robot took the set-toggle; PushErr says
	// why not.
	DevicePushed bool
	PushErr      error
	// For smart mode: Model is the mode's model; on the Tier1Slim path
	// SwapOK is whether xiaozhi took it, on the ZeroClaw path Config and
	// Restart are the file edited and the unit reported, or ModelErr is
	// why the agent's config.toml was not changed (missing, as in demo
	// mode, or without a model line). The mode is stored either way.
	Model, Config, Restart string
	Tier1Slim, SwapOK      bool
	ModelErr               error
}

// ModelWarning says what a stored smart mode could not do, for the
// answer's warning ("" when nothing).
func (m ModeChange) ModelWarning() string {
	if m.ModelErr == nil {
		return ""
	}
	reason := m.ModelErr.Error()
	var apiErr *httpapi.APIError
	if errors.As(m.ModelErr, &apiErr) {
		if s, ok := apiErr.Detail.(string); ok {
			reason = s
		}
	}
	return "Saved, but the agent's model was not changed: " + reason
}

// setMode stores a mode with save and pushes set-toggle <name>.
func (h *Handler) setMode(ctx context.Context, name string, on bool, device string, save func(bool) error) (ModeChange, error) {
	label := strings.ReplaceAll(name, "_", " ")
	if err := save(on); err != nil { // Modes has logged the cause
		return ModeChange{}, httpapi.NewError(http.StatusInternalServerError, "could not save "+label+": "+err.Error())
	}
	h.log.Info(label+" set", "enabled", on)
	perr := h.push(ctx, "set-toggle "+name, func(ctx context.Context, r Robot) error {
		return r.SetToggle(ctx, device, name, on)
	})
	return ModeChange{Enabled: on, DevicePushed: perr == nil, PushErr: perr}, nil
}

// SetKidMode stores kid mode and tells the robot: the one path of
// /admin/kid-mode and the dashboard's toggle. Every feature reads the
// stored value live, so it applies from the next turn.
func (h *Handler) SetKidMode(ctx context.Context, on bool, device string) (ModeChange, error) {
	return h.setMode(ctx, "kid_mode", on, device, h.cfg.Modes.SetKidMode)
}

// SetSmartMode stores smart mode, tells the robot, and switches the voice
// model: xiaozhi's Tier1Slim hot-swap, or ZeroClaw's config.toml and an
// agent restart. The one path of /admin/smart-mode and the dashboard's
// toggle. As in bridge.py the mode is stored first; a model that could not
// be switched is m.ModelErr, not an error, so the answer never says
// "failed" about a mode that changed.
func (h *Handler) SetSmartMode(ctx context.Context, on bool, device string) (ModeChange, error) {
	m, err := h.setMode(ctx, "smart_mode", on, device, h.cfg.Modes.SetSmartMode)
	if err != nil {
		return m, err
	}
	if h.Tier1Slim() {
		t := h.SmartTarget(on)
		m.Tier1Slim, m.Model = true, t.Model
		m.SwapOK = h.push(ctx, "set-tier1slim-model", func(ctx context.Context, r Robot) error {
			return r.SetTier1SlimModel(ctx, t.Model, t.URL, t.APIKey)
		}) == nil
		return m, nil
	}
	m.Model = h.cfg.DefaultModel
	if on {
		m.Model = h.cfg.SmartOn.Model
	}
	m.Config, m.Restart, m.ModelErr = h.setModel("voice", m.Model, true)
	if m.ModelErr != nil {
		h.log.Warn("smart mode saved; the agent's model was not changed", "model", m.Model, "error", m.ModelErr)
	}
	return m, nil
}

// Toggle binds a toggle's JSON body, {enabled, device_id?}, of at most
// limit bytes (0: httpapi's default) and sets the mode with set
// (SetKidMode, SetSmartMode); /admin's toggles and the dashboard's share
// it.
func Toggle(c echo.Context, limit int64, set func(ctx context.Context, on bool, device string) (ModeChange, error)) (ModeChange, error) {
	var on bool
	var device string
	if err := httpapi.BindFields(c.Request().Body, limit, func(f *httpapi.Binder) {
		on, device = f.Bool("enabled"), f.StringOr("device_id", "")
	}); err != nil {
		return ModeChange{}, err
	}
	return set(c.Request().Context(), on, device)
}

// StateRequest binds a robot-state JSON body, {state, device_id?}, of at
// most limit bytes (0: httpapi's default), for /admin/state and the
// dashboard's state buttons.
func StateRequest(body io.Reader, limit int64) (state, device string, err error) {
	err = httpapi.BindFields(body, limit, func(f *httpapi.Binder) { state, device = f.String("state"), f.StringOr("device_id", "") })
	return state, device, err
}

// kidMode is POST /admin/kid-mode.
func (h *Handler) kidMode(c echo.Context) error {
	m, err := Toggle(c, 0, h.SetKidMode)
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK           bool `json:"ok"`
		Enabled      bool `json:"enabled"`
		DevicePushed bool `json:"device_pushed"`
		HotApplied   bool `json:"hot_applied"`
	}{true, m.Enabled, m.DevicePushed, true})
}

// Tier1Slim reports whether smart mode uses xiaozhi's model hot-swap.
func (h *Handler) Tier1Slim() bool {
	return strings.ToLower(strings.TrimSpace(h.cfg.Provider)) == "tier1slim"
}

// SmartTarget is the Tier1Slim model for a smart-mode value.
func (h *Handler) SmartTarget(on bool) Target {
	if on {
		return h.cfg.SmartOn
	}
	return h.cfg.SmartOff
}

// SmartModels are the models smart mode switches between: off, then on.
func (h *Handler) SmartModels() (off, on string) {
	if h.Tier1Slim() {
		return h.cfg.SmartOff.Model, h.cfg.SmartOn.Model
	}
	return h.cfg.DefaultModel, h.cfg.SmartOn.Model
}

// smartMode is POST /admin/smart-mode.
func (h *Handler) smartMode(c echo.Context) error {
	m, err := Toggle(c, 0, h.SetSmartMode)
	if err != nil {
		return err
	}
	if m.Tier1Slim {
		return httpapi.WriteJSON(c, http.StatusOK, struct {
			OK           bool   `json:"ok"`
			Enabled      bool   `json:"enabled"`
			DevicePushed bool   `json:"device_pushed"`
			Model        string `json:"model"`
			SwapOK       bool   `json:"swap_ok"`
			Provider     string `json:"provider"`
		}{true, m.Enabled, m.DevicePushed, m.Model, m.SwapOK, "tier1slim"})
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK           bool   `json:"ok"`
		Enabled      bool   `json:"enabled"`
		DevicePushed bool   `json:"device_pushed"`
		Model        string `json:"model"`
		Config       string `json:"config"`
		Restart      string `json:"restart"`
		Warning      string `json:"warning,omitempty"`
	}{true, m.Enabled, m.DevicePushed, m.Model, m.Config, m.Restart, m.ModelWarning()})
}

// States are the robot states /admin/state accepts: xiaozhi's.
var States = xiaozhi.States

// ErrUnknownState is a robot state not in States.
var ErrUnknownState = errors.New("state must be one of ('idle', 'talk', 'story_time', 'security', 'sleep', 'dance')")

// SetRobotState asks the robot to enter state: the one path of /admin/state
// and the dashboard's state buttons. The error is ErrUnknownState, or why
// the robot did not take it.
func (h *Handler) SetRobotState(ctx context.Context, state, device string) error {
	if !slices.Contains(States, state) {
		return ErrUnknownState
	}
	return h.push(ctx, "set-state", func(ctx context.Context, r Robot) error { return r.SetState(ctx, device, state) })
}

// state is POST /admin/state.
func (h *Handler) state(c echo.Context) error {
	st, device, err := StateRequest(c.Request().Body, 0)
	if err != nil {
		return err
	}
	err = h.SetRobotState(c.Request().Context(), st, device)
	if errors.Is(err, ErrUnknownState) {
		return httpapi.NewError(http.StatusBadRequest, err.Error())
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK           bool   `json:"ok"`
		State        string `json:"state"`
		DevicePushed bool   `json:"device_pushed"`
	}{true, st, err == nil})
}

// PersonaFiles are the workspace files /admin/persona may write.
var PersonaFiles = []string{"AGENTS.md", "BOOTSTRAP.md", "HEARTBEAT.md", "IDENTITY.md", "MEMORY.md", "SOUL.md", "TOOLS.md", "USER.md"}

// persona is POST /admin/persona.
func (h *Handler) persona(c echo.Context) error {
	file, content, err := parseStrings(c, "file", "content")
	if err != nil {
		return err
	}
	if !slices.Contains(PersonaFiles, file) {
		return httpapi.NewError(http.StatusBadRequest, "file must be one of ['AGENTS.md', 'BOOTSTRAP.md', 'HEARTBEAT.md', 'IDENTITY.md', 'MEMORY.md', 'SOUL.md', 'TOOLS.md', 'USER.md']")
	}
	path := filepath.Join(h.cfg.Workspace, file)
	written, err := h.writePersona(file, []byte(content))
	if errors.Is(err, errOutside) {
		h.log.Warn("persona write refused", "file", file, "error", err)
		return httpapi.NewError(http.StatusBadRequest, err.Error())
	}
	if err != nil {
		h.log.Error("persona write failed", "file", file, "error", err)
		return httpapi.NewError(http.StatusInternalServerError, "could not write "+file+": "+err.Error())
	}
	h.log.Info("persona file written; agent sessions rotate before their next turn", "file", written, "bytes", len(content))
	if h.cfg.Sessions != nil {
		h.cfg.Sessions.RotateAll()
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK       bool   `json:"ok"`
		File     string `json:"file"`
		Resolved string `json:"resolved"`
		Bytes    int    `json:"bytes"`
	}{true, path, written, utf8.RuneCountInString(content)})
}

// errOutside refuses a persona path that leaves the workspace.
var errOutside = errors.New("persona file resolves outside ZEROCLAW_WORKSPACE")

// writePersona writes a persona file inside the workspace and returns the
// path written. A persona file that is a symlink is followed (a workspace
// may link SOUL.md to a shared copy) as long as its target is inside the
// workspace; the write itself goes through an os.Root, so no link in any
// directory on the way can carry it outside.
func (h *Handler) writePersona(file string, data []byte) (string, error) {
	if h.cfg.Workspace == "" {
		return "", errors.New("ZEROCLAW_WORKSPACE is not set")
	}
	if err := os.MkdirAll(h.cfg.Workspace, 0o700); err != nil {
		return "", fmt.Errorf("create workspace: %w", err)
	}
	ws, err := filepath.EvalSymlinks(h.cfg.Workspace)
	if err != nil {
		return "", fmt.Errorf("resolve workspace: %w", err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	name := file
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := root.Readlink(name)
		if err != nil {
			return "", errOutside
		}
		if filepath.IsAbs(target) {
			rel, err := filepath.Rel(ws, target)
			if err != nil || !filepath.IsLocal(rel) {
				return "", errOutside
			}
			target = rel
		}
		if !filepath.IsLocal(target) {
			return "", errOutside
		}
		name = filepath.Clean(target)
	}
	if err := writeIn(root, name, data, 0o644); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
			return "", fmt.Errorf("%w (%v)", errOutside, err)
		}
		return "", err
	}
	return filepath.Join(ws, name), nil
}

// PushTier1Slim sends xiaozhi the Tier1Slim model of smart mode's current
// value (the start-up reconcile); a failure is only logged.
func (h *Handler) PushTier1Slim(ctx context.Context, smart bool) {
	if h.cfg.Robot == nil {
		return
	}
	t := h.SmartTarget(smart)
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	if err := h.cfg.Robot.SetTier1SlimModel(ctx, t.Model, t.URL, t.APIKey); err != nil {
		h.log.Warn("start-up Tier1Slim model push failed", "model", t.Model, "error", err)
		return
	}
	h.log.Info("Tier1Slim model pushed to xiaozhi", "model", t.Model, "smart_mode", smart)
}
