// Package uitest starts the headless Chromium that the dashboard's
// browser tests drive (admin/ui's against a fake bridge, the program's
// against the real binary), and answers its logins.
package uitest

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's Chromium, installed by .ci/run.
const ChromiumPath = "/usr/bin/chromium"

// NeedChromium skips the test where Chromium is not installed; in CI,
// which installs it, that is a failure.
func NeedChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing in CI (.ci/run installs it): %v", ChromiumPath, err)
		}
		t.Skipf("%s not installed", ChromiumPath)
	}
}

// Chromium starts a headless Chromium for one test, bounded by limit,
// with opts after the usual ones (a window size); it skips as
// NeedChromium does. closeBrowser ends it; the test's cleanup does too,
// for a test that returns early.
func Chromium(t *testing.T, limit time.Duration, opts ...chromedp.ExecAllocatorOption) (bctx context.Context, closeBrowser func()) {
	t.Helper()
	NeedChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	all := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(all, opts...)...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	closeBrowser = func() { cancelBrowser(); cancelAlloc(); cancel() }
	t.Cleanup(closeBrowser)
	return bctx, closeBrowser
}

// Login is a browser whose basic-auth challenges are answered with a
// user and password, as a person types them into the login dialog.
type Login struct {
	mu         sync.Mutex
	challenged []string
	overflow   atomic.Bool
}

// paused is a request paused in the Fetch domain.
type paused struct {
	id   fetch.RequestID
	url  string
	auth bool // an auth challenge, not the request itself
}

// AnswerLogins pauses every request of the browser in the Fetch domain
// and continues it, answering an auth challenge with user and pass. The
// listener only queues (it must not run commands); a goroutine, stopped
// when the test ends, continues them.
func AnswerLogins(t *testing.T, bctx context.Context, user, pass string) *Login {
	t.Helper()
	l := &Login{}
	queue := make(chan paused, 4096)
	if err := chromedp.Listen(bctx, func(ev any) {
		var p paused
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			p = paused{id: e.RequestID, url: e.Request.URL}
		case *fetch.EventAuthRequired:
			p = paused{id: e.RequestID, url: e.Request.URL, auth: true}
			l.mu.Lock()
			l.challenged = append(l.challenged, p.url)
			l.mu.Unlock()
		default:
			return
		}
		select {
		case queue <- p:
		default:
			l.overflow.Store(true)
		}
	}); err != nil {
		t.Fatal(err)
	}
	handled, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(handled)
		for {
			var p paused
			select {
			case <-stop:
				return
			case <-bctx.Done():
				return
			case p = <-queue:
			}
			var err error
			if p.auth {
				_, err = chromedp.Call(bctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: p.id,
					AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
						Username: user, Password: pass}})
			} else {
				_, err = chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: p.id})
			}
			if err != nil && bctx.Err() == nil {
				t.Logf("continue %s: %v", p.url, err)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-handled }) // before the browser's cancel, registered earlier
	if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatal(err)
	}
	return l
}

// Challenged returns the URLs challenged so far, in order.
func (l *Login) Challenged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.challenged)
}

// Overflowed reports whether paused requests overflowed the queue (and
// were left paused).
func (l *Login) Overflowed() bool { return l.overflow.Load() }
