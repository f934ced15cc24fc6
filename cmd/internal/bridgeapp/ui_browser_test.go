package bridgeapp

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, installed by .ci/run.
const chromiumPath = "/usr/bin/chromium"

// headlessChromium starts Chromium (bounded by 60 s) with a phone-sized
// window and returns its tab; the test is skipped where Chromium is
// missing, except in CI.
func headlessChromium(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing in CI (.ci/run installs it): %v", chromiumPath, err)
		}
		t.Skipf("%s not installed", chromiumPath)
	}
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
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
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

	// Every request pauses in the Fetch domain; a goroutine continues it,
	// answering an auth challenge with the credentials. The listener only
	// queues (it must not run commands).
	type paused struct {
		id   fetch.RequestID
		url  string
		auth bool
	}
	queue := make(chan paused, 1024)
	var overflow atomic.Bool
	if err := chromedp.Listen(bctx, func(ev any) {
		var pz paused
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			pz = paused{id: e.RequestID, url: e.Request.URL}
		case *fetch.EventAuthRequired:
			pz = paused{id: e.RequestID, url: e.Request.URL, auth: true}
		default:
			return
		}
		select {
		case queue <- pz:
		default:
			overflow.Store(true)
		}
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var challenges []string
	handled, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(handled)
		for {
			var pz paused
			select {
			case <-stop:
				return
			case <-bctx.Done():
				return
			case pz = <-queue:
			}
			err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				if pz.auth {
					mu.Lock()
					challenges = append(challenges, pz.url)
					mu.Unlock()
					_, err := cdp.Call(ctx, tg, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: pz.id,
						AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
							Username: dashUser, Password: dashPass}})
					return err
				}
				_, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: pz.id})
				return err
			}))
			if err != nil && bctx.Err() == nil {
				t.Logf("continue %s: %v", pz.url, err)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-handled }) // before the browser's cancel, registered earlier

	base := "http://" + p.addr
	if err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)})
		return err
	}), chromedp.Navigate(base+"/ui")); err != nil {
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
	if overflow.Load() {
		t.Fatal("paused requests overflowed the test's queue")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(challenges) != 1 || !strings.HasSuffix(challenges[0], "/ui") {
		t.Errorf("auth challenges %q, want one, for /ui", challenges)
	}
}
