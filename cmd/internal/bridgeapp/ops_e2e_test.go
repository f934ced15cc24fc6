package bridgeapp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units/unitstest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// exitStatus is the status err (from Wait) reports, or -1.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

// TestRestartExitsForTheSupervisor: POST /ui/api/restart answers, then
// the bridge goes through its graceful shutdown (the agent stopped) and
// exits with status 75, the status the shipped unit restarts on.
func TestRestartExitsForTheSupervisor(t *testing.T) {
	p := startBridge(t, "BRIDGE_DAEMON_UNITS=-")
	pid := agentPID(p)
	own := []string{"Origin", "http://" + p.addr, "Content-Type", "application/json"}
	code, body := p.request(http.MethodPost, "/ui/api/restart", `{}`, own...)
	asked := time.Now()
	if code != http.StatusOK || !strings.Contains(body, `"response":"Restarting the bridge… the page reconnects when it is back."`) {
		t.Fatalf("restart: %d %s", code, body)
	}
	took, err := p.awaitExit(asked, 20*time.Second)
	if got := exitStatus(err); got != exitRestart {
		t.Fatalf("exit %v (status %d), want status %d", err, got, exitRestart)
	}
	t.Logf("exited %s after the answer", took.Round(time.Millisecond))
	testkit.WaitFor(t, 5*time.Second, "the agent stopped", func() bool { return testkit.ProcessGone(pid) })
	for _, want := range []string{
		`restarting the bridge: asked_by="dashboard: Restart bridge" in=1s`,
		`shutting down: reason="restart requested (dashboard: Restart bridge)"`,
		"http server stopped",
		"stopped: shutdown=",
		"zeroclaw-bridge: restart requested (dashboard: Restart bridge): exit status 75, for the service manager to start the bridge again",
	} {
		if !strings.Contains(p.log(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

// TestRebootAllInBrowser clicks Reboot all on the real binary's page with
// the test as the supervisor: the daemon card shows a fake systemd's unit
// (read over D-Bus), the robot hears the announcement, the configured
// command runs once and its output shows, the bridge exits with status 75,
// and once the test has started it again on the same port the page says
// it is back.
func TestRebootAllInBrowser(t *testing.T) {
	bctx := headlessChromium(t)
	sd := unitstest.Start(t)
	since := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	sd.Set("zeroclaw-discord.service", unitstest.Unit{Load: "loaded", Active: "active", Sub: "running", Changed: since})
	xz := xiaozhitest.New(t)
	ran := filepath.Join(t.TempDir(), "ran")
	env := append(xiaozhiEnv(xz), "DBUS_SYSTEM_BUS_ADDRESS="+sd.Addr,
		// The command sees none of the bridge's settings (its secrets).
		"DOTTY_ADMIN_TOKEN=not-for-helpers",
		"BRIDGE_XIAOZHI_RESTART_CMD=/bin/sh -c 'echo run ${DOTTY_ADMIN_TOKEN:-without-secrets} >> \"$0\"; echo xiaozhi-server restarted' "+ran)
	p := startBridge(t, env...)

	holds := func(what, js string, d time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(d),
			chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, p.log())
		}
	}
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+p.addr+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	// The default card is bridge.py's: ZEROCLAW_DISCORD_UNIT's.
	holds("the daemon card", `(u => u && u.dataset.active === "active" && u.textContent.includes("active (running) · since"))(
		document.querySelector('#ops-units [data-unit="zeroclaw-discord.service"]'))`, 10*time.Second)
	var st struct {
		Operator struct {
			Busy  string `json:"busy"`
			Units []struct {
				Name, Active string
				Since        time.Time
			} `json:"units"`
		} `json:"operator"`
	}
	if _, body := p.get("/ui/api/status"); json.Unmarshal([]byte(body), &st) != nil || len(st.Operator.Units) != 1 ||
		st.Operator.Units[0].Name != "zeroclaw-discord.service" || !st.Operator.Units[0].Since.Equal(since) {
		t.Errorf("status: the unit, active since %s: %s", since, body)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#ops-reboot")), chromedp.Click(chromedp.CSS("#ops-reboot"))); err != nil {
		t.Fatal(err)
	}
	holds("the command's output on the page", `(o => !o.hidden && o.textContent.includes("xiaozhi-server restarted"))(document.getElementById("ops-output")) &&
		document.querySelector('#ops-steps [data-step="robot"]').dataset.ok === "true"`, 10*time.Second)
	took, err := p.awaitExit(time.Now(), 20*time.Second)
	if got := exitStatus(err); got != exitRestart {
		t.Fatalf("exit %v (status %d), want status %d", err, got, exitRestart)
	}
	t.Logf("exited %s after the page showed the answer", took.Round(time.Millisecond))
	if b, err := os.ReadFile(ran); err != nil || string(b) != "run without-secrets\n" {
		t.Errorf("the xiaozhi restart command ran %q (%v), want once", b, err)
	}
	calls := xz.CallsTo("/xiaozhi/admin/inject-text")
	if len(calls) != 1 || !cmp.Equal(calls[0].Body, map[string]any{"device_id": "", "text": "I'm rebooting now — back in a moment."}) {
		t.Errorf("announcements %v", calls)
	}
	if strings.Contains(p.log(), ran) || strings.Contains(p.log(), "xiaozhi-server restarted") {
		t.Errorf("the log holds the command's arguments or output:\n%s", p.log())
	}
	if !strings.Contains(p.log(), `shutting down: reason="restart requested (dashboard: Reboot all)"`) {
		t.Errorf("no shutdown line for the restart:\n%s", p.log())
	}

	// The supervisor starts it again, on the same port.
	_, port, _ := net.SplitHostPort(p.addr)
	again := startBridge(t, append(env, "PORT="+port)...)
	if again.addr != p.addr {
		t.Fatalf("restarted on %s, want %s", again.addr, p.addr)
	}
	holds("the page says the bridge is back", `(r => r.dataset.kind === "ok" && r.textContent === "The bridge is back.")(document.getElementById("ops-result")) &&
		!document.getElementById("ops-reboot").disabled`, 30*time.Second)
	st.Operator.Busy = "?"
	if _, body := again.get("/ui/api/status"); json.Unmarshal([]byte(body), &st) != nil || st.Operator.Busy != "" {
		t.Errorf("the restarted bridge's status: %s", body)
	}
}

// TestExitCodeOfARestart: a restart request, wrapped or not, is status 75
// with one line saying why.
func TestExitCodeOfARestart(t *testing.T) {
	for _, err := range []error{&restartRequest{"dashboard: Restart bridge"}, fmt.Errorf("run: %w", &restartRequest{"dashboard: Restart bridge"})} {
		var stderr strings.Builder
		if code := exitCode(err, &stderr); code != 75 || stderr.String() !=
			"zeroclaw-bridge: restart requested (dashboard: Restart bridge): exit status 75, for the service manager to start the bridge again\n" {
			t.Errorf("exitCode(%v) = %d, stderr %q", err, code, stderr.String())
		}
	}
}
