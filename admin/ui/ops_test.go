package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// restarts records the restarter's calls.
type restarts struct {
	mu      sync.Mutex
	reasons []string
}

func (r *restarts) restart(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *restarts) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

// fakeUnits is a UnitSource with fixed states, or an error.
type fakeUnits struct {
	states map[string]units.State
	err    error
}

func (f fakeUnits) States(_ context.Context, names []string) ([]units.State, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []units.State
	for _, n := range names {
		out = append(out, f.states[units.Name(n)])
	}
	return out, nil
}

// opPanel is a panel with the operator controls wired: a recording
// restarter, the given xiaozhi restart command and a log.
func opPanel(t *testing.T, argv []string, edit func(*OperatorConfig)) (*panel, *restarts, *testkit.LogBuffer) {
	t.Helper()
	r := &restarts{}
	logs := &testkit.LogBuffer{}
	p := newPanel(t, func(c *Config, _ *admin.Config) {
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
		c.Operator = OperatorConfig{Restart: r.restart, XiaozhiRestart: argv}
		if edit != nil {
			edit(&c.Operator)
		}
	})
	return p, r, logs
}

// fire waits for the delayed restart's timer, then lets it fire.
func (p *panel) fire(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := p.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("no delayed restart scheduled: %v", err)
	}
	p.clock.Advance(defaultRestartDelay)
}

func (p *panel) operator(t *testing.T) operatorStatus {
	t.Helper()
	_, body := get(t, p.url+"/ui/api/status", "", "")
	var s statusResult
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.Operator == nil {
		t.Fatalf("status %s: %v", body, err)
	}
	return *s.Operator
}

// TestRestartAnswersThenRestarts: the answer comes first; the restarter
// runs once, after the delay; every later restart or reboot is a 409.
func TestRestartAnswersThenRestarts(t *testing.T) {
	p, r, _ := opPanel(t, nil, nil)
	code, out := p.post(t, "/ui/api/restart", `{}`)
	if code != 200 || out["ok"] != true || out["response"] != "Restarting the bridge… the page reconnects when it is back." {
		t.Fatalf("restart: %d %v", code, out)
	}
	if got := r.got(); len(got) != 0 {
		t.Fatalf("restarted %v before the delay", got)
	}
	if s := p.operator(t); s.Busy != "restarting" || !s.Restart {
		t.Errorf("operator status while restarting: %+v", s)
	}
	p.fire(t)
	testkit.WaitFor(t, 5*time.Second, "the restarter called", func() bool { return len(r.got()) == 1 })
	if got := r.got(); got[0] != "dashboard: Restart bridge" {
		t.Errorf("restart reason %q", got[0])
	}
	for path, want := range map[string]string{"/ui/api/restart": "The bridge is already restarting.",
		"/ui/api/reboot-all": "The bridge is already restarting."} {
		if code, out := p.post(t, path, `{}`); code != 409 || out["detail"] != want {
			t.Errorf("%s while restarting: %d %v", path, code, out)
		}
	}
	if n := len(p.xz.CallsTo("/xiaozhi/admin/inject-text")); n != 0 {
		t.Errorf("%d announcements from a refused reboot", n)
	}
	if got := r.got(); len(got) != 1 {
		t.Errorf("restarter called %d times, want once", len(got))
	}
}

func TestRestartRefusesCrossSiteAndUnwired(t *testing.T) {
	p, r, _ := opPanel(t, nil, nil)
	for _, path := range []string{"/ui/api/restart", "/ui/api/reboot-all"} {
		if code, out := p.post(t, path, `{}`, "Origin", "http://evil.example"); code != 403 {
			t.Errorf("%s cross-site: %d %v", path, code, out)
		}
		if code, out := p.post(t, path, `x=1`, "Content-Type", "application/x-www-form-urlencoded"); code != 415 {
			t.Errorf("%s form body: %d %v", path, code, out)
		}
		if code, out := p.post(t, path, `{}`, "Host", "evil.example:8080", "Origin", "http://evil.example:8080"); code != 403 {
			t.Errorf("%s rebinding: %d %v", path, code, out)
		}
	}
	if s := p.operator(t); s.Busy != "" || len(r.got()) != 0 || len(p.xz.CallsTo("/xiaozhi/admin/inject-text")) != 0 {
		t.Errorf("a refused request did something: busy %q restarts %v", s.Busy, r.got())
	}

	bare := newPanel(t, nil)
	if code, out := bare.post(t, "/ui/api/restart", `{}`); code != 503 || out["detail"] != "bridge restart unavailable" {
		t.Errorf("no restarter: %d %v", code, out)
	}
}

// TestRebootAll runs the configured command once, announces first, shows
// the command's output, keeps its arguments and output out of the log,
// and restarts the bridge after answering.
func TestRebootAll(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := `echo run >> "$1"; echo "xiaozhi-server restarted"; echo "token s3cr3t-out" >&2`
	p, r, logs := opPanel(t, []string{"sh", "-c", script, "sh", count, "s3cr3t-arg"}, nil)

	code, out := p.post(t, "/ui/api/reboot-all", `{}`)
	if code != 200 || out["ok"] != true {
		t.Fatalf("reboot all: %d %v", code, out)
	}
	steps, _ := out["steps"].([]any)
	if len(steps) != 3 {
		t.Fatalf("steps %v", out["steps"])
	}
	robot, xz, bridge := steps[0].(map[string]any), steps[1].(map[string]any), steps[2].(map[string]any)
	if robot["name"] != "robot" || robot["ok"] != true || robot["detail"] != "announced: I'm rebooting now — back in a moment." {
		t.Errorf("robot step %v", robot)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); !cmp.Equal(got, map[string]any{"device_id": "", "text": "I'm rebooting now — back in a moment."}) {
		t.Errorf("announcement %v", got)
	}
	output, _ := xz["output"].(string)
	if xz["name"] != "xiaozhi" || xz["ok"] != true || !strings.HasPrefix(xz["detail"].(string), "sh finished after ") ||
		!strings.Contains(output, "xiaozhi-server restarted\n") || !strings.Contains(output, "token s3cr3t-out\n") {
		t.Errorf("xiaozhi step %v", xz)
	}
	if bridge["name"] != "bridge" || bridge["ok"] != true || bridge["detail"] != "restarting in 1s" {
		t.Errorf("bridge step %v", bridge)
	}
	if b, err := os.ReadFile(count); err != nil || string(b) != "run\n" {
		t.Errorf("the command ran %q (%v), want once", b, err)
	}
	if len(r.got()) != 0 {
		t.Fatal("restarted before the delay")
	}
	p.fire(t)
	testkit.WaitFor(t, 5*time.Second, "the restarter called", func() bool { return len(r.got()) == 1 })
	if got := r.got()[0]; got != "dashboard: Reboot all" {
		t.Errorf("reason %q", got)
	}
	for _, secret := range []string{"s3cr3t-arg", "s3cr3t-out", script} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "xiaozhi restart command finished: program=sh") {
		t.Errorf("log lacks the command's outcome:\n%s", logs.String())
	}
}

// TestRebootAllOneAtATime: a second Reboot all (or Restart) while one
// runs is refused with a 409 naming it; the command runs once.
func TestRebootAllOneAtATime(t *testing.T) {
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "go")
	p, r, _ := opPanel(t, []string{"sh", "-c", `echo x >> "$1"; while [ ! -e "$2" ]; do sleep 0.02; done; echo done`, "sh", started, release},
		func(c *OperatorConfig) { c.XiaozhiRestartTimeout = time.Minute })
	first := make(chan map[string]any, 1)
	go func() {
		_, out := p.post(t, "/ui/api/reboot-all", `{}`)
		first <- out
	}()
	testkit.WaitFor(t, 10*time.Second, "the command started", func() bool { _, err := os.Stat(started); return err == nil })
	for _, path := range []string{"/ui/api/reboot-all", "/ui/api/restart"} {
		if code, out := p.post(t, path, `{}`); code != 409 || out["detail"] != "Reboot all is already running." {
			t.Errorf("%s during Reboot all: %d %v", path, code, out)
		}
	}
	if s := p.operator(t); s.Busy != "rebooting" {
		t.Errorf("busy %q, want rebooting", s.Busy)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := testkit.Recv(t, 10*time.Second, first, "the first Reboot all did not answer"); out["ok"] != true {
		t.Errorf("first reboot: %v", out)
	}
	if b, _ := os.ReadFile(started); string(b) != "x\n" {
		t.Errorf("the command ran %q, want once", b)
	}
	p.fire(t)
	testkit.WaitFor(t, 5*time.Second, "the restarter called", func() bool { return len(r.got()) == 1 })
}

// TestRebootAllWithoutCommand: nothing runs, the step says why, and with
// no restarter either the controls are free again afterwards.
func TestRebootAllWithoutCommand(t *testing.T) {
	p := newPanel(t, nil)
	for range 2 {
		code, out := p.post(t, "/ui/api/reboot-all", `{}`)
		if code != 200 {
			t.Fatalf("reboot all: %d %v", code, out)
		}
		steps := out["steps"].([]any)
		xz, bridge := steps[1].(map[string]any), steps[2].(map[string]any)
		if xz["ok"] != false || xz["skipped"] != true || xz["detail"] != "not configured (BRIDGE_XIAOZHI_RESTART_CMD is unset)" {
			t.Errorf("xiaozhi step %v", xz)
		}
		if bridge["ok"] != false || bridge["detail"] != "bridge restart unavailable" {
			t.Errorf("bridge step %v", bridge)
		}
	}
	s := p.operator(t)
	want := operatorStatus{Started: p.clock.Now(), Units: []units.State{}, XiaozhiRestart: xiaozhiRestartStatus{TimeoutS: 30}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("operator status (-want +got):\n%s", d)
	}
}

// TestXiaozhiRestartFailures: a failing, missing, slow or chatty command
// is one step's reason; the bridge restarts anyway.
func TestXiaozhiRestartFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		detail  string
		output  string
		cut     bool
		timeout time.Duration
	}{
		{"exit status", []string{"sh", "-c", "echo no route to host; exit 3"}, "sh failed: exit status 3", "no route to host\n", false, 0},
		{"missing", []string{filepath.Join(t.TempDir(), "nope")}, "nope could not run: ", "", false, 0},
		{"timeout", []string{"sh", "-c", "echo waiting; sleep 30"}, "sh did not finish within 200ms and was stopped", "waiting\n", false, 200 * time.Millisecond},
		{"long output", []string{"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"}, "sh finished after ", "line-1999\n", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r, _ := opPanel(t, tc.argv, func(c *OperatorConfig) { c.XiaozhiRestartTimeout = tc.timeout })
			code, out := p.post(t, "/ui/api/reboot-all", `{}`)
			if code != 200 {
				t.Fatalf("%d %v", code, out)
			}
			xz := out["steps"].([]any)[1].(map[string]any)
			detail, _ := xz["detail"].(string)
			output, _ := xz["output"].(string)
			cut, _ := xz["output_cut"].(bool)
			if !strings.HasPrefix(detail, tc.detail) || !strings.HasSuffix(output, tc.output) || cut != tc.cut || len(output) > maxCommandOutput {
				t.Errorf("step %v", xz)
			}
			if (xz["ok"] == true) != strings.HasSuffix(tc.detail, "finished after ") {
				t.Errorf("ok %v for %q", xz["ok"], detail)
			}
			p.fire(t)
			testkit.WaitFor(t, 5*time.Second, "the restarter called", func() bool { return len(r.got()) == 1 })
		})
	}
}

// TestDaemonUnitsInStatus: a card per configured unit; without systemd
// the cards stay, each saying why.
func TestDaemonUnitsInStatus(t *testing.T) {
	since := time.Date(2026, 5, 20, 7, 30, 0, 0, time.UTC)
	src := fakeUnits{states: map[string]units.State{
		"zeroclaw-discord.service": {Name: "zeroclaw-discord.service", Load: "loaded", Active: "failed", Sub: "failed", Since: since},
		"backup.timer":             {Name: "backup.timer", Load: "loaded", Active: "active", Sub: "waiting", Since: since},
	}}
	p, _, _ := opPanel(t, []string{"/usr/local/bin/restart-xiaozhi", "--token", "t"}, func(c *OperatorConfig) {
		c.Units, c.Systemd = []string{"zeroclaw-discord", "backup.timer"}, src
	})
	s := p.operator(t)
	want := operatorStatus{Restart: true, Started: p.clock.Now(), Units: []units.State{src.states["zeroclaw-discord.service"], src.states["backup.timer"]},
		XiaozhiRestart: xiaozhiRestartStatus{Configured: true, Program: "restart-xiaozhi", TimeoutS: 30}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("operator status (-want +got):\n%s", d)
	}

	down := fmt.Errorf("%w: dial unix /run/dbus/system_bus_socket: no such file or directory", units.ErrUnreachable)
	p2, _, _ := opPanel(t, nil, func(c *OperatorConfig) { c.Units, c.Systemd = []string{"zeroclaw-discord"}, fakeUnits{err: down} })
	s = p2.operator(t)
	if len(s.Units) != 1 || s.Units[0] != (units.State{Name: "zeroclaw-discord.service"}) || s.UnitsError != down.Error() {
		t.Errorf("without systemd: %+v", s)
	}
	p3, _, _ := opPanel(t, nil, func(c *OperatorConfig) { c.Units = []string{"zeroclaw-discord"} })
	if s := p3.operator(t); s.UnitsError != "systemd not reachable" || len(s.Units) != 1 {
		t.Errorf("no unit source: %+v", s)
	}
}

func TestOperatorConfigValidate(t *testing.T) {
	bad := DefaultConfig()
	bad.Operator.XiaozhiRestartTimeout, bad.Operator.Units = -time.Second, []string{"ok", "not ok"}
	err := bad.Validate()
	for _, want := range []string{"Operator.XiaozhiRestartTimeout -1s: want more than 0", `daemon unit "not ok"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	good := DefaultConfig()
	good.Operator.Units = []string{"zeroclaw-discord"}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
}
