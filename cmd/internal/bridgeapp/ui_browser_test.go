package bridgeapp

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui/uitest"
)

// headlessChromium starts Chromium (bounded by 60 s) with a phone-sized
// window and returns its tab; the test is skipped where Chromium is
// missing, except in CI.
func headlessChromium(t *testing.T) context.Context {
	t.Helper()
	bctx, _ := uitest.Chromium(t, 60*time.Second, chromedp.WindowSize(390, 844)) // a phone
	return bctx
}

// present waits (bounded by d) until the CSS selector matches.
func present(ctx context.Context, sel string, d time.Duration) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector(`+strconv.Quote(sel)+`) !== null`,
		chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(20*time.Millisecond)))
	return err
}

// TestDashboardInBrowser loads /ui from the real binary in headless
// Chromium, posts a perception event and waits for it on the page.
func TestDashboardInBrowser(t *testing.T) {
	bctx := headlessChromium(t)
	p := startBridge(t)

	base := "http://" + p.addr
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

// TestDashboardInBrowserWithCredentials: with DOTTY_DASHBOARD_USER/PASS
// set, the family logs in once (one challenge, answered as the login
// dialog would be) and the page's reads of the household on /api — the
// perception feed, the devices' state — get the same credentials from
// the browser without asking again.
func TestDashboardInBrowserWithCredentials(t *testing.T) {
	bctx := headlessChromium(t)
	p := startBridge(t, "DOTTY_DASHBOARD_USER="+dashUser, "DOTTY_DASHBOARD_PASS="+dashPass)

	// Every request pauses in the Fetch domain and goes on, an auth
	// challenge answered with the credentials.
	login := uitest.AnswerLogins(t, bctx, dashUser, dashPass)

	base := "http://" + p.addr
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatalf("load /ui: %v\n%s", err, p.log())
	}
	if err := present(bctx, `#conn-feed[data-state="live"]`, 10*time.Second); err != nil {
		t.Fatalf("the perception feed (/api/perception/feed) never connected: %v", err)
	}
	if code, body := p.post("/api/perception/event", `{"device_id":"dotty-test","name":"face_detected","data":{}}`); code != http.StatusNoContent {
		t.Fatalf("post event: %d %s", code, body)
	}
	if err := present(bctx, `#devices [data-device="dotty-test"]`, 10*time.Second); err != nil {
		t.Fatalf("no device card (/api/perception/state): %v", err)
	}
	if login.Overflowed() {
		t.Fatal("paused requests overflowed the test's queue")
	}
	if challenges := login.Challenged(); len(challenges) != 1 || !strings.HasSuffix(challenges[0], "/ui") {
		t.Errorf("auth challenges %q, want one, for /ui", challenges)
	}
}
