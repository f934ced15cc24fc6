package main

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, installed by .ci/run.
const chromiumPath = "/usr/bin/chromium"

// TestDashboardInBrowser loads /ui from the real binary in headless
// Chromium, posts a perception event and waits for it on the page.
func TestDashboardInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing in CI (.ci/run installs it): %v", chromiumPath, err)
		}
		t.Skipf("%s not installed", chromiumPath)
	}
	p := startBridge(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(390, 844), // a phone
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	base := "http://" + p.addr
	// present waits (bounded by d) until the CSS selector matches.
	present := func(ctx context.Context, sel string, d time.Duration) error {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(`+strconv.Quote(sel)+`) !== null`,
			chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(20*time.Millisecond)))
		return err
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatalf("load /ui: %v\n%s", err, p.log())
	}
	if err := present(bctx, `#conn-feed[data-state="live"]`, 10*time.Second); err != nil {
		t.Fatalf("the perception feed never connected: %v", err)
	}

	posted := time.Now()
	if code, body := p.post("/api/perception/event", `{"device_id":"dotty-test","name":"face_detected","data":{}}`); code != http.StatusNoContent {
		t.Fatalf("post event: %d %s", code, body)
	}
	if err := present(bctx, `#feed [data-event-name="face_detected"][data-device="dotty-test"]`, 2*time.Second); err != nil {
		t.Fatalf("event not on the page within 2 s: %v", err)
	}
	t.Logf("event on the page %v after the POST", time.Since(posted).Round(time.Millisecond))

	// The device card and the agent's health follow.
	if err := present(bctx, `#devices [data-device="dotty-test"]`, 5*time.Second); err != nil {
		t.Fatalf("no device card: %v", err)
	}
	agent, err := chromedp.Run(bctx, chromedp.Poll[string](
		`(s => s !== "…" && s)(document.getElementById("agent-state").textContent)`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || agent == "unreachable" {
		t.Errorf("agent health shows %q (%v)", agent, err)
	}
	if shot := os.Getenv("UI_SCREENSHOT"); shot != "" {
		if png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
			_ = os.WriteFile(shot, png, 0o644)
		}
	}
}
