package ui

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui/uitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestOperatorControlsInBrowser clicks Reboot all and Restart bridge on
// the page against the real handlers: the robot hears the announcement,
// the configured command runs once and its output shows, the bridge's
// restarter runs after the answer, a second press is refused, and the
// daemon card shows a fake unit's state.
func TestOperatorControlsInBrowser(t *testing.T) {
	bctx, closeBrowser := uitest.Chromium(t, 90*time.Second)
	defer closeBrowser()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	since := time.Now().Add(-3 * time.Hour)
	fake := fakeUnits{states: map[string]units.State{
		"zeroclaw-discord.service": {Name: "zeroclaw-discord.service", Load: "loaded", Active: "failed", Sub: "failed", Since: since},
		"nightly.timer":            {Name: "nightly.timer", Load: "not-found", Active: "inactive", Sub: "dead"},
	}}
	p, r, _ := opPanel(t, []string{"sh", "-c", `echo run >> "$1"; echo "Restarting xiaozhi-esp32-server ... done"; echo "<b>warn</b>" >&2`, "sh", count},
		func(c *OperatorConfig) { c.Units, c.Systemd = []string{"zeroclaw-discord", "nightly.timer"}, fake })

	holds := holdsIn(t, bctx, 10*time.Second)
	click := clickIn(t, bctx)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(p.url+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	holds("daemon cards", `(u => u && u.dataset.active === "failed" && u.querySelector(".dot.bad") &&
		u.textContent.includes("zeroclaw-discord.service") && u.textContent.includes("failed (failed) · since"))(
		document.querySelector('#ops-units [data-unit="zeroclaw-discord.service"]')) &&
		document.querySelector('#ops-units [data-unit="nightly.timer"]').textContent.includes("not installed on this host")`)
	holds("xiaozhi restart configured", `(n => n.dataset.configured === "true" && n.textContent.includes("restarts xiaozhi with sh (at most 30 s)"))(
		document.getElementById("ops-xiaozhi"))`)

	// Reboot all: the first press only arms the button.
	click("#ops-reboot")
	holds("armed", `document.getElementById("ops-reboot").textContent === "Press again to reboot all"`)
	if n := len(p.xz.CallsTo("/xiaozhi/admin/inject-text")); n != 0 {
		t.Fatalf("the first press sent %d announcements", n)
	}
	click("#ops-reboot")
	holds("steps shown", `document.querySelectorAll("#ops-steps li").length === 3 &&
		document.querySelector('#ops-steps [data-step="robot"]').dataset.ok === "true" &&
		document.querySelector('#ops-steps [data-step="xiaozhi"]').dataset.ok === "true" &&
		document.querySelector('#ops-steps [data-step="bridge"]').textContent.includes("restarting in 1s")`)
	holds("the command's output, as text", `(o => !o.hidden && o.textContent.includes("Restarting xiaozhi-esp32-server ... done") &&
		o.textContent.includes("<b>warn</b>") && !o.querySelector("b"))(document.getElementById("ops-output"))`)
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); !cmp.Equal(got, map[string]any{"device_id": "", "text": rebootAnnouncement}) {
		t.Errorf("announcement %v", got)
	}
	p.fire(t)
	testkit.WaitFor(t, 5*time.Second, "the bridge's restart", func() bool { return len(r.got()) == 1 })
	if b, err := os.ReadFile(count); err != nil || string(b) != "run\n" {
		t.Errorf("the xiaozhi restart command ran %q (%v), want once", b, err)
	}
	holds("controls held while restarting", `document.getElementById("ops-restart").disabled && document.getElementById("ops-reboot").disabled`)

	// Restart bridge on a second bridge; a second press (another tab)
	// while it restarts is refused.
	p2, r2, _ := opPanel(t, nil, nil)
	if err := chromedp.Do(bctx, chromedp.Navigate(p2.url+"/ui")); err != nil {
		t.Fatal(err)
	}
	holds("not configured", `(n => n.dataset.configured === "false" && n.textContent.includes("not configured (BRIDGE_XIAOZHI_RESTART_CMD)"))(
		document.getElementById("ops-xiaozhi")) && document.getElementById("ops-units").children.length === 0 && !document.getElementById("ops-restart").disabled`)
	click("#ops-restart")
	click("#ops-restart")
	holds("restart answered", `(r => r.dataset.kind === "ok" && r.textContent.includes("Restarting the bridge"))(document.getElementById("ops-result"))`)
	p2.fire(t)
	testkit.WaitFor(t, 5*time.Second, "the bridge's restart", func() bool { return len(r2.got()) == 1 })
	if got := r2.got()[0]; got != "dashboard: Restart bridge" {
		t.Errorf("reason %q", got)
	}
	again, err := chromedp.Run(bctx, chromedp.Evaluate[string](`fetch("/ui/api/restart", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"})
		.then(r => r.json().then(j => r.status + " " + j.detail))`, chromedp.EvalAwaitPromise))
	if err != nil || again != "409 The bridge is already restarting." {
		t.Errorf("a second restart: %q %v", again, err)
	}
	if n := len(r2.got()); n != 1 {
		t.Errorf("restarter called %d times", n)
	}

	// The phone layout: the card fits.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	holds("no sideways scroll at 390 px", `document.documentElement.scrollWidth <= 390 && document.getElementById("ops-card").offsetParent !== null`)
}
