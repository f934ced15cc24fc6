package ui

// The operator controls: Restart bridge, Reboot all (announce on the
// robot, restart xiaozhi with the operator's command, restart the
// bridge) and the daemon cards (systemd units' state).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/subproc"
)

// UnitSource reads systemd units' state (*units.Reader).
type UnitSource interface {
	States(ctx context.Context, names []string) ([]units.State, error)
}

// OperatorConfig configures the operator controls.
type OperatorConfig struct {
	// Restart ends the bridge through its graceful shutdown with an exit
	// status its supervisor restarts it on; nil: the restart controls
	// answer 503.
	Restart func(reason string)
	// RestartDelay is how long after answering the restart begins (1 s),
	// so the answer reaches the page first.
	RestartDelay time.Duration
	// XiaozhiRestart is the command that restarts xiaozhi-server
	// (BRIDGE_XIAOZHI_RESTART_CMD), run without a shell; empty: Reboot
	// all skips that step and the card says it is not configured.
	XiaozhiRestart []string
	// XiaozhiRestartTimeout bounds it (BRIDGE_XIAOZHI_RESTART_TIMEOUT, 30 s).
	XiaozhiRestartTimeout time.Duration
	// XiaozhiRestartEnv is the command's environment: the bridge's own
	// without its settings (tokens, passwords, model keys); nil: the
	// bridge's whole environment.
	XiaozhiRestartEnv []string
	// Units are the systemd units whose state the page shows
	// (BRIDGE_DAEMON_UNITS); Systemd reads them (nil: not reachable).
	Units   []string
	Systemd UnitSource
}

// validate reports settings the controls cannot run with.
func (c OperatorConfig) validate() error {
	var errs fieldcheck.Errors
	errs.Check("RestartDelay", c.RestartDelay >= 0, c.RestartDelay, "0 or more")
	errs.Check("XiaozhiRestartTimeout", c.XiaozhiRestartTimeout > 0, c.XiaozhiRestartTimeout, "more than 0")
	for _, n := range c.Units {
		if err := units.Check(n); err != nil {
			errs = append(errs, fmt.Errorf("daemon unit %q: %w", n, err))
		}
	}
	return errs.Err()
}

// Texts and bounds of the operator controls.
const (
	// rebootAnnouncement is what the robot hears before Reboot all,
	// bridge.py's.
	rebootAnnouncement = "I'm rebooting now — back in a moment."
	// maxCommandOutput is how much of the xiaozhi restart command's
	// output (its end) the page shows.
	maxCommandOutput = 4 << 10
	// announceTimeout bounds the announcement.
	announceTimeout = 4 * time.Second
	// defaultRestartDelay lets the answer reach the page before the
	// bridge stops.
	defaultRestartDelay = time.Second
	// DefaultXiaozhiRestartTimeout bounds the xiaozhi restart command
	// (bridge.py's ssh timeout).
	DefaultXiaozhiRestartTimeout = 30 * time.Second
)

// Operator busy states: one operation at a time.
const (
	opIdle       = ""
	opRebooting  = "rebooting"
	opRestarting = "restarting"
)

// operator serves the operator controls.
type operator struct {
	u   *UI
	cfg OperatorConfig

	started time.Time // when this process's dashboard was built

	mu   sync.Mutex
	busy string // opIdle, opRebooting or opRestarting (until the process ends)
}

func newOperator(u *UI, cfg OperatorConfig) *operator {
	if cfg.RestartDelay <= 0 {
		cfg.RestartDelay = defaultRestartDelay
	}
	if cfg.XiaozhiRestartTimeout <= 0 {
		cfg.XiaozhiRestartTimeout = DefaultXiaozhiRestartTimeout
	}
	return &operator{u: u, cfg: cfg, started: u.cfg.Clock.Now()}
}

// routes mounts the operator actions.
func (o *operator) routes(g *echo.Group) {
	g.POST("/api/restart", o.restart, httpapi.RequireJSON)
	g.POST("/api/reboot-all", o.rebootAll, httpapi.RequireJSON)
}

// claim marks the operator busy with what; a 409 names what already runs.
func (o *operator) claim(what string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch o.busy {
	case opRestarting:
		return httpapi.NewError(http.StatusConflict, "The bridge is already restarting.")
	case opRebooting:
		return httpapi.NewError(http.StatusConflict, "Reboot all is already running.")
	}
	o.busy = what
	return nil
}

// release marks the operator idle again.
func (o *operator) release() {
	o.mu.Lock()
	o.busy = opIdle
	o.mu.Unlock()
}

// restartLater starts the bridge's restart RestartDelay from now; the
// operator stays busy until the process ends.
func (o *operator) restartLater(reason string) {
	o.mu.Lock()
	o.busy = opRestarting
	o.mu.Unlock()
	o.u.log.Info("restarting the bridge", "asked_by", reason, "in", o.cfg.RestartDelay)
	o.u.cfg.Clock.AfterFunc(o.cfg.RestartDelay, func() { o.cfg.Restart(reason) })
}

// restart is POST /ui/api/restart: answer, then restart the bridge.
func (o *operator) restart(c echo.Context) error {
	if o.cfg.Restart == nil {
		return unavailable("bridge restart")
	}
	if err := o.claim(opRestarting); err != nil {
		return err
	}
	if err := httpapi.WriteJSON(c, http.StatusOK, actionResult{OK: true,
		Response: "Restarting the bridge… the page reconnects when it is back."}); err != nil {
		o.release() // the answer did not go out: nothing was started
		return err
	}
	c.Response().Flush()
	o.restartLater("dashboard: Restart bridge")
	return nil
}

// step is one part of Reboot all.
type step struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Skipped is set when the step was not configured.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
	// Output is the end of the xiaozhi restart command's output; Cut says
	// its beginning was dropped.
	Output string `json:"output,omitempty"`
	Cut    bool   `json:"output_cut,omitempty"`
}

// rebootResult is POST /ui/api/reboot-all's answer.
type rebootResult struct {
	OK    bool   `json:"ok"`
	Steps []step `json:"steps"`
}

// rebootAll is POST /ui/api/reboot-all: announce on the robot, restart
// xiaozhi with the configured command, answer, restart the bridge.
func (o *operator) rebootAll(c echo.Context) error {
	if err := o.claim(opRebooting); err != nil {
		return err
	}
	restarting := false
	defer func() {
		if !restarting {
			o.release()
		}
	}()
	ctx := c.Request().Context()
	res := rebootResult{OK: true, Steps: []step{o.announce(ctx), o.restartXiaozhi(ctx)}}
	bridge := step{Name: "bridge"}
	if o.cfg.Restart == nil {
		bridge.Detail = "bridge restart unavailable"
	} else {
		bridge.OK, bridge.Detail = true, fmt.Sprintf("restarting in %s", o.cfg.RestartDelay)
	}
	res.Steps = append(res.Steps, bridge)
	if err := httpapi.WriteJSON(c, http.StatusOK, res); err != nil {
		return err
	}
	c.Response().Flush()
	if bridge.OK {
		restarting = true
		o.restartLater("dashboard: Reboot all")
	}
	return nil
}

// announce tells the robot it is about to reboot.
func (o *operator) announce(ctx context.Context) step {
	s := step{Name: "robot"}
	r := o.u.cfg.Robot
	if r == nil || !r.Enabled() {
		s.Skipped, s.Detail = true, "xiaozhi is not configured (XIAOZHI_HOST is empty)"
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, announceTimeout)
	defer cancel()
	if err := r.InjectText(ctx, "", rebootAnnouncement); err != nil {
		o.u.log.Warn("reboot all: the announcement failed", "error", err)
		s.Detail = reason(err)
		return s
	}
	s.OK, s.Detail = true, "announced: "+rebootAnnouncement
	return s
}

// restartXiaozhi runs the xiaozhi restart command once, within its
// timeout, whatever happens to the request; its arguments and output are
// never logged (they may hold a host, a user or a token).
func (o *operator) restartXiaozhi(ctx context.Context) step {
	s := step{Name: "xiaozhi"}
	argv := o.cfg.XiaozhiRestart
	if len(argv) == 0 {
		s.Skipped, s.Detail = true, "not configured (BRIDGE_XIAOZHI_RESTART_CMD is unset)"
		return s
	}
	// A closed tab does not stop a restart half-way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.cfg.XiaozhiRestartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) // #nosec G204 -- BRIDGE_XIAOZHI_RESTART_CMD, the operator's setting, run without a shell
	out := &subproc.Tail{Max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = o.cfg.XiaozhiRestartEnv
	cmd.WaitDelay = 2 * time.Second
	subproc.Configure(cmd)
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(10 * time.Millisecond)
	s.Output, s.Cut = out.String(), out.Cut()
	program := filepath.Base(argv[0])
	var exit *exec.ExitError
	switch {
	case err == nil:
		s.OK, s.Detail = true, fmt.Sprintf("%s finished after %s", program, took)
		o.u.log.Info("reboot all: xiaozhi restart command finished", "program", program, "took", took)
		return s
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.Detail = fmt.Sprintf("%s did not finish within %s and was stopped", program, o.cfg.XiaozhiRestartTimeout)
	case errors.As(err, &exit):
		s.Detail = fmt.Sprintf("%s failed: %s", program, exit.ProcessState)
	default:
		s.Detail = fmt.Sprintf("%s could not run: %s", program, err)
	}
	o.u.log.Warn("reboot all: the xiaozhi restart command failed", "program", program, "took", took, "reason", s.Detail)
	return s
}

// operatorStatus is the "operator" object of GET /ui/api/status.
type operatorStatus struct {
	// Restart is true when the bridge can restart itself.
	Restart bool `json:"restart"`
	// Busy is "restarting" or "rebooting" while one runs, else "".
	Busy string `json:"busy"`
	// Started is when this bridge process started: the page knows the
	// restarted bridge is back when it changes.
	Started        time.Time            `json:"started"`
	XiaozhiRestart xiaozhiRestartStatus `json:"xiaozhi_restart"`
	// Units are the daemon cards, in BRIDGE_DAEMON_UNITS order;
	// UnitsError says why they could not be read.
	Units      []units.State `json:"units"`
	UnitsError string        `json:"units_error,omitempty"`
}

// xiaozhiRestartStatus says whether Reboot all restarts xiaozhi.
type xiaozhiRestartStatus struct {
	Configured bool `json:"configured"`
	// Program is the command's program name, never its arguments.
	Program  string  `json:"program,omitempty"`
	TimeoutS float64 `json:"timeout_s"`
}

// status is the operator part of GET /ui/api/status.
func (o *operator) status(ctx context.Context) *operatorStatus {
	o.mu.Lock()
	busy := o.busy
	o.mu.Unlock()
	s := &operatorStatus{Restart: o.cfg.Restart != nil, Busy: busy, Started: o.started, Units: []units.State{},
		XiaozhiRestart: xiaozhiRestartStatus{Configured: len(o.cfg.XiaozhiRestart) > 0,
			TimeoutS: o.cfg.XiaozhiRestartTimeout.Seconds()}}
	if s.XiaozhiRestart.Configured {
		s.XiaozhiRestart.Program = filepath.Base(o.cfg.XiaozhiRestart[0])
	}
	if len(o.cfg.Units) == 0 {
		return s
	}
	states, err := []units.State(nil), units.ErrUnreachable
	if o.cfg.Systemd != nil {
		states, err = o.cfg.Systemd.States(ctx, o.cfg.Units)
	}
	if err == nil {
		s.Units = states
		return s
	}
	// A card per unit still, saying why its state is unknown.
	s.UnitsError = err.Error()
	for _, n := range o.cfg.Units {
		s.Units = append(s.Units, units.State{Name: units.Name(n)})
	}
	return s
}
