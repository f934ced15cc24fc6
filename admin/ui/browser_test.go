package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui/uitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// xss is an event name that must show up as text, never as markup.
const xss = `<img src=x onerror="document.title='pwned'">`

// bridgeStub is the fake bridge's data; tests change it while the page
// runs, and count the page's requests for scenes and security records.
type bridgeStub struct {
	mu      sync.Mutex
	states  map[string]map[string]any
	scenes  map[string]any // device → scene
	records []any          // security records, newest first
	journal map[string]any // GET /api/journal/today; nil: a day with nothing in it
	missing bool           // the scene, security and journal routes answer 404, as an older bridge's do
	// sceneCalls, securityCalls and journalCalls count the page's requests.
	sceneCalls, securityCalls, journalCalls int
}

// set changes the stub's data.
func (b *bridgeStub) set(f func(b *bridgeStub)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

// calls reports how often the page asked for scenes and security records.
func (b *bridgeStub) calls() (scene, security int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sceneCalls, b.securityCalls
}

// journalCount reports how often the page asked for today's journal.
func (b *bridgeStub) journalCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.journalCalls
}

// dreamText is a dream longer than the card's preview, with markup that
// must show up as text.
const dreamText = "The dunes sang under two moons, and Dotty walked them barefoot with <b>spice</b> in the air. " +
	"Every footstep left a little song behind, and the songs followed like ducklings all the way to the edge of the sea, " +
	"where a sandworm as long as a street asked politely whether robots dream of water. Dotty said yes."

// journalDay is a GET /api/journal/today answer with a dream (summary
// given or not), a dance reflection and two greetings, one of them not
// spoken.
func journalDay(now time.Time, summary string) map[string]any {
	ts := func(ago time.Duration) string { return now.Add(-ago).Format(time.RFC3339) }
	return map[string]any{"date": now.Format(time.DateOnly),
		"dreams": []any{map[string]any{"ts": ts(3 * time.Hour), "type": "dream", "dream_id": "5f0c2a9e41d84b7c9a6e3d2f1b0c8a7e",
			"seed": "Dune", "summary": summary, "full_text": dreamText}},
		"dances": []any{map[string]any{"ts": ts(40 * time.Minute), "type": "dance", "device": "dotty-kitchen", "dance": "robot",
			"reflection": "I kept time with the kettle. Hudson laughed at the wobbly bit, so I kept the wobbly bit."}},
		"greetings": []any{
			map[string]any{"ts": ts(5 * time.Minute), "device": "dotty-kitchen", "identity": "hudson",
				"text": "Good morning, Hudson! Ready to fly the red kite?", "error": nil},
			map[string]any{"ts": ts(90 * time.Minute), "device": "dotty-hall", "identity": "brett",
				"text": "Hello there <i>Brett</i>!", "error": "xiaozhi unreachable: connection refused"},
		},
	}
}

// securityRecord is one record of GET /api/security/recent, as the
// security watch writes it.
func securityRecord(at time.Time, device, desc string, transcript, class any, errs ...string) map[string]any {
	if errs == nil {
		errs = []string{}
	}
	return map[string]any{"ts": at.Format("2006-01-02T15:04:05.000000-07:00"), "device": device, "photo_desc": desc,
		"audio_transcript": transcript, "audio_classification": class, "errors": errs}
}

// xssDesc is a photo description that must show up as text.
const xssDesc = `A note on the mat: <img src=x onerror=alert(1)>`

// scene is one device's entry of GET /api/perception/scene.
func scene(at time.Time, text, face, state string) map[string]any {
	var faceID any
	if face != "" {
		faceID = face
	}
	return map[string]any{"text": text, "ts_wall": float64(at.UnixNano()) / 1e9, "face_id": faceID, "state": state}
}

// counted wraps one of the routes an older bridge lacks: under the lock,
// it counts the request in n and answers 404 while b.missing is set.
func (b *bridgeStub) counted(n *int, h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		(*n)++
		if b.missing {
			return c.JSON(http.StatusNotFound, map[string]string{"detail": "Not Found"})
		}
		return h(c)
	}
}

// fakeBridge serves the bridge routes the page reads besides its own:
// /health, /api/perception/{state,recent,feed,scene} and
// /api/security/recent.
func fakeBridge(e *echo.Echo, feed <-chan string, done <-chan struct{}) *bridgeStub {
	t0 := time.Now()
	now := float64(t0.UnixNano()) / 1e9
	b := &bridgeStub{
		states: map[string]map[string]any{
			"dotty-kitchen": {"current_state": "talk", "face_present": true, "last_face_id": "hudson",
				"listening": true, "last_sound_dir": "left", "last_event_name": "chat_status", "last_event_t": now - 2,
				"sensor_age_s": 2.4, "sensor_stale": false},
			"dotty-hall": {"sensor_age_s": nil, "sensor_stale": true},
		},
		scenes: map[string]any{"dotty-kitchen": scene(t0.Add(-2*time.Minute), t0.Add(-2*time.Minute).Format("2006-01-02 15:04")+
			" — hudson is in the room. Dotty sees a child holding a red kite. Heard: birdsong. State: talk.", "hudson", "talk")},
		records: []any{
			securityRecord(t0.Add(-20*time.Second), "dotty-hall", "A dim hallway; a coat on a chair.", nil, nil, "audio_capture_pending"),
			securityRecord(t0.Add(-40*time.Second), "dotty-hall", "", nil, nil, "photo_poll_miss", "audio_capture_pending"),
			securityRecord(t0.Add(-60*time.Second), "dotty-hall", xssDesc, nil, "door knock", "audio_poll_endpoint_pending"),
			securityRecord(t0.Add(-80*time.Second), "dotty-hall", "", nil, nil, "photo_dispatch_failed", "audio_capture_pending"),
			securityRecord(t0.Add(-100*time.Second), "dotty-hall", "The front door, closed; a long scarf on the hook labelled "+
				"https://example.org/a-very-long-unbroken-address-that-must-wrap-on-a-phone", "is anyone home?", nil),
		},
	}
	e.GET("/health", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]any{"status": "ok", "acp_running": true, "sessions": 2, "session_turns": 7,
			"agent": map[string]any{"state": "ready", "dialect": "v1", "pid": 4242, "restarts": 1}})
	})
	e.GET("/api/perception/state", func(c echo.Context) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if id := c.QueryParam("device_id"); id != "" {
			return c.JSON(http.StatusOK, map[string]any{id: b.states[id]})
		}
		return c.JSON(http.StatusOK, b.states)
	})
	e.GET("/api/perception/recent", func(c echo.Context) error {
		if c.QueryParam("device_id") != "dotty-kitchen" {
			return c.JSON(http.StatusOK, []any{})
		}
		return c.JSON(http.StatusOK, []any{
			map[string]any{"ts": now - 2, "name": "chat_status", "data": map[string]any{"listening": true}},
			map[string]any{"ts": now - 9, "name": "sound_event", "data": map[string]any{"direction": "left", "energy": 0.61}},
		})
	})
	e.GET("/api/perception/scene", b.counted(&b.sceneCalls, func(c echo.Context) error {
		out := map[string]any{}
		for id, sc := range b.scenes {
			if want := c.QueryParam("device_id"); want == "" || want == id {
				out[id] = sc
			}
		}
		return c.JSON(http.StatusOK, out)
	}))
	e.GET("/api/security/recent", b.counted(&b.securityCalls, func(c echo.Context) error {
		out := []any{}
		for _, r := range b.records {
			if want := c.QueryParam("device_id"); want == "" || r.(map[string]any)["device"] == want {
				out = append(out, r)
			}
		}
		if n, err := strconv.Atoi(c.QueryParam("limit")); err == nil && n >= 0 && n < len(out) {
			out = out[:n]
		}
		return c.JSON(http.StatusOK, out)
	}))
	e.GET("/api/journal/today", b.counted(&b.journalCalls, func(c echo.Context) error {
		if b.journal == nil {
			return c.JSON(http.StatusOK, map[string]any{"date": time.Now().Format(time.DateOnly),
				"dreams": []any{}, "dances": []any{}, "greetings": []any{}})
		}
		return c.JSON(http.StatusOK, b.journal)
	}))
	e.GET("/api/perception/feed", func(c echo.Context) error {
		w := c.Response()
		w.Header().Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		w.Flush()
		for {
			select {
			case <-c.Request().Context().Done():
				return nil
			case <-done:
				return nil
			case ev := <-feed:
				if _, err := fmt.Fprintf(w, "data: %s\n\n", ev); err != nil {
					return nil
				}
				w.Flush()
			}
		}
	})
	return b
}

// holdsIn returns holds: it fails the test unless the script js on the
// page becomes true within wait (what names the check).
func holdsIn(t *testing.T, bctx context.Context, wait time.Duration) func(what, js string) {
	return holdsWatched(t, bctx, wait, nil)
}

// holdsWatched is holdsIn for a page watched by watchDialogs: a check
// that fails after a dialog opened says that a script from the data ran.
func holdsWatched(t *testing.T, bctx context.Context, wait time.Duration, dialog *atomic.Pointer[string]) func(what, js string) {
	return func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(wait),
			chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
			if dialog != nil {
				if m := dialog.Load(); m != nil {
					t.Fatalf("%s: a script from the data ran (dialog %q)", what, *m)
				}
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// watchDialogs keeps the message of the first dialog the page opens and
// closes the tab at once: a dialog means markup from the data ran, and
// it would block the page until the deadline.
func watchDialogs(t *testing.T, bctx context.Context, closeBrowser func()) *atomic.Pointer[string] {
	t.Helper()
	var dialog atomic.Pointer[string]
	if err := chromedp.Listen(bctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialog.Store(&d.Message)
			go closeBrowser()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return &dialog
}

// runUI serves e and runs u's loop; stop closes done (when not nil, so
// the fake bridge's feed handler returns), ends the loop and the server.
func runUI(u *UI, e *echo.Echo, done chan struct{}) (srv *httptest.Server, stop func()) {
	srv = httptest.NewServer(e)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = u.Run(ctx) }()
	return srv, func() {
		if done != nil {
			close(done)
		}
		cancel()
		<-ran
		srv.Close()
	}
}

// serveUI is runUI until the test ends.
func serveUI(t *testing.T, u *UI, e *echo.Echo, done chan struct{}) *httptest.Server {
	srv, stop := runUI(u, e, done)
	t.Cleanup(stop)
	return srv
}

// fakePage is a UI with its turns from bus, at UTC, served with the fake
// bridge's routes (fakeBridge) until the test ends.
type fakePage struct {
	u    *UI
	bus  *turnbus.Bus
	stub *bridgeStub
	feed chan string // the fake bridge's event feed
	srv  *httptest.Server
}

func newFakePage(t *testing.T) fakePage {
	p := fakePage{bus: turnbus.New(nil), feed: make(chan string)}
	p.u = New(Config{Turns: p.bus, Location: time.UTC})
	e := echo.New()
	p.u.Routes(e)
	done := make(chan struct{})
	p.stub = fakeBridge(e, p.feed, done)
	p.srv = serveUI(t, p.u, e, done)
	return p
}

// feedSender returns send: it writes evs to the fake bridge's event feed
// as frames of one write, failing the test when the page does not read it.
func feedSender(t *testing.T, feed chan<- string) func(evs ...string) {
	return func(evs ...string) {
		t.Helper()
		select {
		case feed <- strings.Join(evs, "\n\ndata: "): // several frames, one write
		case <-time.After(5 * time.Second):
			t.Fatal("the page is not reading the feed")
		}
	}
}

// burst is n copies of an event, a millisecond apart, for one write.
func burst(n int, name, device, data string) []string {
	ts := float64(time.Now().UnixNano()) / 1e9
	var evs []string
	for i := range n {
		evs = append(evs, fmt.Sprintf(`{"name":%q,"data":%s,"device_id":%q,"ts":%.3f}`, name, data, device, ts+float64(i)/1000))
	}
	return evs
}

// clickIn returns click: it clicks the element sel selects, failing the
// test when it cannot.
func clickIn(t *testing.T, bctx context.Context) func(sel string) {
	return func(sel string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}
}

// TestPageInBrowser drives the page against a fake bridge in headless
// Chromium: every section fills, markup in data stays text, and the
// turn feed is live.
func TestPageInBrowser(t *testing.T) {
	uitest.NeedChromium(t)
	p := newFakePage(t)
	bus, u, feed, srv := p.bus, p.u, p.feed, p.srv

	ts := time.Now()
	bus.Publish(turnbus.Turn{TS: ts.Add(-time.Minute), Channel: "dotty", RequestText: "[User] what's a comet?",
		ResponseText: "🤔 A dusty snowball.", EmojiUsed: "🤔", Emotion: "thinking", Latency: 900 * time.Millisecond})
	testkit.WaitFor(t, 5*time.Second, "the first turn in the ring", func() bool { u.mu.Lock(); defer u.mu.Unlock(); return len(u.recent) == 1 })

	bctx, closeBrowser := uitest.Chromium(t, 60*time.Second)
	defer closeBrowser()

	holds := holdsIn(t, bctx, 5*time.Second)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	holds("agent ready", `document.getElementById("agent-state").textContent === "ready"`)
	holds("kitchen card", `(c => c && c.textContent.includes("hudson"))(document.querySelector('#devices [data-device="dotty-kitchen"]'))`)
	holds("hall card stale", `!!document.querySelector('#devices [data-device="dotty-hall"] .badge.stale')`)
	holds("history", `document.querySelectorAll('#feed [data-kind="event"][data-device="dotty-kitchen"]').length === 2`)
	holds("both feeds live", `document.querySelectorAll('.conn[data-state="live"]').length === 2`)
	holds("ring turn", `document.querySelector('#feed [data-kind="turn"] .lat.fast')?.textContent === "900 ms"`)

	send := feedSender(t, feed)
	send(fmt.Sprintf(`{"name":%s,"data":{"html":"<b>bold</b>"},"device_id":"dotty-kitchen","ts":%d}`, strconv.Quote(xss), ts.Unix()))
	send(fmt.Sprintf(`{"name":"face_detected","data":{},"device_id":"dotty-hall","ts":%d}`, ts.Unix()))
	holds("live event", `!!document.querySelector('#feed [data-event-name="face_detected"][data-device="dotty-hall"]')`)
	holds("markup kept as text", `[...document.querySelectorAll("#feed li")].some(li => li.dataset.eventName === `+
		strconv.Quote(xss)+` && li.textContent.includes("<b>bold</b>")) && !document.querySelector("#feed img, #feed b")`)
	send(`{"name":"fell_behind","data":{},"device_id":"","ts":0}`)
	holds("fell-behind notice", `!document.getElementById("feed-note").hidden`)

	bus.Publish(turnbus.Turn{TS: ts, Channel: "dotty", RequestText: "[User] <i>tell</i> me a story",
		ResponseText: "😊 Once upon a time…", EmojiUsed: "😊", Emotion: "happy", Latency: 4200 * time.Millisecond, Error: "timeout"})
	holds("live turn, newest first", `(li => li && li.querySelector(".lat.slow") && li.querySelector(".err") &&
		li.textContent.includes("<i>tell</i> me a story"))(document.querySelector("#feed li"))`)
	holds("two turns", `document.querySelectorAll('#feed [data-kind="turn"]').length === 2`)
	holds("error badge", `document.getElementById("error-count").textContent === "1"`)
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`.tabs [data-tab="error"]`))); err != nil {
		t.Fatal(err)
	}
	holds("errors tab shows only the failed turn", `[...document.querySelectorAll("#feed li")].filter(li => li.offsetParent !== null).length === 1 &&
		document.querySelector('.tabs [data-tab="error"]').getAttribute("aria-selected") === "true"`)
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`.tabs [data-tab="event"]`))); err != nil {
		t.Fatal(err)
	}
	holds("events tab hides turns", `[...document.querySelectorAll('#feed [data-kind="turn"]')].every(li => li.offsetParent === null) &&
		[...document.querySelectorAll('#feed [data-kind="event"]')].some(li => li.offsetParent !== null)`)
	if title, _ := chromedp.Run(bctx, chromedp.Title()); title == "pwned" {
		t.Error("an event name ran as markup")
	}

}

// TestControlPanelInBrowser clicks every control of the page against the
// real admin handler and a recording fake xiaozhi: each sends the exact
// admin call and shows its result, failures show their reason, and the
// phone layout has no sideways scroll.
func TestControlPanelInBrowser(t *testing.T) {
	uitest.NeedChromium(t)
	xz := xiaozhitest.New(t)
	xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["Lullaby.opus","Waltz.mp3"]}`})
	xz.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 200, Body: `{"devices":["dotty-kitchen"]}`})
	host, port := xz.HostPort()
	robot := xiaozhi.New(xiaozhi.Config{Host: host, Port: port})
	dir := t.TempDir()
	modes := admin.NewModes(admin.ModesConfig{KidStatePath: filepath.Join(dir, "kid"), KidDefault: true, SmartStatePath: filepath.Join(dir, "smart")})
	controls := admin.NewHandler(admin.Config{Modes: modes, Robot: robot, Provider: "tier1slim",
		SmartOn: admin.Target{Model: "big-cloud"}, SmartOff: admin.Target{Model: "small-local"}, Logger: hclog.NewNullLogger()})
	bus := turnbus.New(nil)
	var photoMu sync.Mutex
	var photo *Photo // arrives after "Take a photo now"
	latest := func(string) (Photo, bool) {
		photoMu.Lock()
		defer photoMu.Unlock()
		if photo == nil {
			return Photo{}, false
		}
		return *photo, true
	}
	// Facts for the Memory review card in the screenshots.
	learned := time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04:05.000000+00:00")
	mem := newFakeMemory(
		MemoryRecord{ID: "m-1", PersonID: "hudson", Content: "is learning to ride his bike without training wheels", Pending: true,
			Importance: 0.7, CreatedAt: learned, UpdatedAt: learned},
		MemoryRecord{ID: "m-2", PersonID: "unknown-1", Content: "has a dog called Biscuit", Pending: true,
			Importance: 0.7, CreatedAt: learned, UpdatedAt: learned},
		MemoryRecord{ID: "m-3", PersonID: "brett", Content: "drinks his coffee black", Importance: 0.7,
			CreatedAt: "2026-05-16T08:00:00.000000+00:00", UpdatedAt: "2026-05-16T08:00:00.000000+00:00"})
	cfg := Config{Turns: bus, Location: time.UTC, Controls: controls, Modes: modes, Robot: robot,
		SongAssetBase: "/srv/songs", Version: "v9.9.9", DemoAgent: func() bool { return true }, DemoAdvice: "For real answers, set STEERABLE_CMD.",
		Operator: OperatorConfig{Units: []string{"zeroclaw-discord"}, Systemd: fakeUnits{states: map[string]units.State{"zeroclaw-discord.service": {
			Name: "zeroclaw-discord.service", Load: "loaded", Active: "active", Sub: "running", Since: time.Now().Add(-26 * time.Hour)}}}},
		LatestPhoto: latest, PhotoList: func() []Photo {
			if p, ok := latest(""); ok {
				return []Photo{p}
			}
			return nil
		}}
	mem.wire(&cfg)
	// The Host card of the screenshots: a Raspberry Pi's figures, and a
	// failed turn earlier today in the conversation log.
	hostRoot := t.TempDir()
	writeTree(t, hostRoot, map[string]string{
		"proc/loadavg":                         "0.42 0.35 0.30 1/210 4242\n",
		"proc/meminfo":                         "MemTotal:        3884328 kB\nMemAvailable:    2516784 kB\n",
		"proc/uptime":                          "360720.50 1400000.00\n",
		"sys/class/thermal/thermal_zone0/type": "cpu-thermal\n",
		"sys/class/thermal/thermal_zone0/temp": "52089\n",
	})
	clog := convolog.New(convolog.Config{Dir: filepath.Join(dir, "logs"), Location: time.UTC})
	clog.Write(convolog.Record{TS: time.Now().Add(-time.Minute), Channel: "dotty", RequestText: "what's the weather tomorrow?",
		ResponseText: "😐 My AI brain is offline.", EmojiUsed: "😐", Latency: 30 * time.Second, Error: "timeout"})
	cfg.ProcDir, cfg.SysDir, cfg.StateDir, cfg.ConvoLogPath = filepath.Join(hostRoot, "proc"), filepath.Join(hostRoot, "sys"), dir, clog.Path
	cfg.XiaozhiHost, cfg.XiaozhiHTTPPort, cfg.XiaozhiWSPort, cfg.RobotsSeen = host, port, port, func() int { return 3 }
	u := New(cfg)
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	u.Routes(e)
	feed, done := make(chan string), make(chan struct{})
	stub := fakeBridge(e, feed, done)
	// A third robot is on security watch: the screenshots show its card.
	stub.set(func(b *bridgeStub) {
		b.states["dotty-porch"] = map[string]any{"current_state": "security", "face_present": false, "listening": false,
			"last_event_name": "security_capture", "sensor_age_s": 6.0, "sensor_stale": false}
		for _, r := range b.records {
			r.(map[string]any)["device"] = "dotty-porch"
		}
		b.journal = journalDay(time.Now(), "Dotty walked singing dunes under two moons, and the songs followed it to the sea.")
		b.journal["greetings"].([]any)[1].(map[string]any)["text"] = "Hello there, Brett!"
	})
	srv := serveUI(t, u, e, done)
	runCtx := t.Context()
	// The robot answers every utterance, as a voice turn.
	go func() {
		seen := 0
		for {
			select {
			case <-runCtx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			calls := xz.CallsTo("/xiaozhi/admin/inject-text")
			for ; seen < len(calls); seen++ {
				bus.Publish(turnbus.Turn{TS: time.Now(), ResponseText: "😊 heard: " + fmt.Sprint(calls[seen].Body["text"])})
			}
		}
	}()

	bctx, closeBrowser := uitest.Chromium(t, 90*time.Second)
	defer closeBrowser()
	holds := holdsIn(t, bctx, 10*time.Second)
	click := clickIn(t, bctx)
	result := func(what, kind, text string) {
		t.Helper()
		holds(what, fmt.Sprintf(`(r => r.dataset.kind === %q && r.textContent.includes(%q))(document.getElementById("result"))`, kind, text))
	}
	called := func(path string, want map[string]any) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "a call to "+path, func() bool {
			calls := xz.CallsTo(path)
			return len(calls) > 0 && cmp.Equal(calls[len(calls)-1].Body, want)
		})
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	holds("status strip", `document.getElementById("st-version").textContent === "v9.9.9" &&
		document.getElementById("st-robot").dataset.state === "live" && document.getElementById("st-xiaozhi").dataset.state === "live"`)
	holds("demo and open banners", `!document.getElementById("banner-demo").hidden && !document.getElementById("banner-open").hidden &&
		document.getElementById("demo-advice").textContent === "For real answers, set STEERABLE_CMD."`)
	holds("kid mode shown on, models named", `document.getElementById("kid-mode").checked &&
		document.getElementById("smart-models").textContent === "off: small-local · on: big-cloud"`)
	holds("state buttons, current one pressed", `document.querySelectorAll("#states button").length === 6 &&
		document.querySelector('#states [data-state="talk"]').getAttribute("aria-pressed") === "true"`)
	holds("mood buttons named", `document.querySelectorAll("#moods button[aria-label]").length === 9`)

	click("#kid-mode")
	called("/xiaozhi/admin/set-toggle", map[string]any{"device_id": "", "name": "kid_mode", "enabled": false})
	result("kid mode off", "ok", "Kid mode off")
	click("#smart-mode")
	called("/xiaozhi/admin/set-tier1slim-model", map[string]any{"model": "big-cloud"})
	result("smart mode on", "ok", "Smart mode on — big-cloud")

	click(`#states [data-state="sleep"]`)
	called("/xiaozhi/admin/set-state", map[string]any{"device_id": "", "state": "sleep"})
	holds("sleep pressed", `document.querySelector('#states [data-state="sleep"]').getAttribute("aria-pressed") === "true"`)

	click(`#moods [data-emoji="😴"]`)
	called("/xiaozhi/admin/inject-text", map[string]any{"device_id": "", "text": "Make the 😴 face. Reply with exactly: '😴 This is my sleepy face.' — nothing else."})
	result("mood reply", "ok", "😊 heard: Make the 😴 face")

	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#say-text"), "Hello <b>Nana</b>")); err != nil {
		t.Fatal(err)
	}
	click("#say-send")
	called("/xiaozhi/admin/inject-text", map[string]any{"device_id": "", "text": "Hello <b>Nana</b>"})
	result("say reply as text", "ok", "Hello <b>Nana</b> → 😊 heard: Hello <b>Nana</b>")
	holds("no markup from the reply", `!document.querySelector("#result b")`)

	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#story-text"), "a brave snail")); err != nil {
		t.Fatal(err)
	}
	click("#story-send")
	called("/xiaozhi/admin/inject-text", map[string]any{"device_id": "", "text": "Tell a new story about: a brave snail"})
	result("story reply", "ok", "heard: Tell a new story about: a brave snail")

	click("#dance")
	called("/xiaozhi/admin/inject-text", map[string]any{"device_id": "", "text": "do a dance and sing a song"})
	result("dance reply", "ok", "dance & sing → 😊 heard: do a dance")

	holds("no photo yet", `!document.getElementById("photo-empty").hidden`)
	click("#take-photo")
	called("/xiaozhi/admin/take-photo", map[string]any{"device_id": "", "question": "What do you see?"})
	result("photo asked", "ok", "The photo will show here")
	var jpg bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	if err := jpeg.Encode(&jpg, img, nil); err != nil {
		t.Fatal(err)
	}
	photoMu.Lock()
	photo = &Photo{Device: "dotty-kitchen", Description: "A <b>teddy</b> on the sofa.", At: time.Now(), Size: jpg.Len(), JPEG: jpg.Bytes()}
	photoMu.Unlock()
	holds("one robot: no chooser", `document.getElementById("photo-devices").offsetParent === null`)
	holds("the photo shows with its description as text", `(i => i.complete && i.naturalWidth === 64)(document.getElementById("photo-img")) &&
		document.getElementById("photo-desc").textContent === "A <b>teddy</b> on the sofa." && !document.querySelector("#photo-card b") &&
		document.getElementById("photo-download").href.includes("download=1")`)
	click("#photo-open")
	holds("large view", `document.getElementById("photo-large").open`)
	click("#photo-large button")
	holds("large view closed", `!document.getElementById("photo-large").open`)

	click("#load-songs")
	holds("songs listed", `document.querySelectorAll("#songs button[data-song]").length === 2`)
	click(`#songs [data-song="Waltz.mp3"]`)
	called("/xiaozhi/admin/play-asset", map[string]any{"asset": "/srv/songs/Waltz.mp3"})
	result("song playing", "ok", "playing Waltz.mp3")

	// Live events of both kinds, so the screenshots show their summaries.
	for _, ev := range []string{
		fmt.Sprintf(`{"name":"security_capture","data":{"photo_desc":"A dim hallway; a coat on a chair.","errors":["audio_capture_pending"]},"device_id":"dotty-porch","ts":%d}`, time.Now().Unix()),
		fmt.Sprintf(`{"name":"scene_synthesised","data":{"reason":"face_recognized","preview":"hudson is in the room. Dotty sees a child holding a red kite."},"device_id":"dotty-kitchen","ts":%d}`, time.Now().Unix()),
	} {
		select {
		case feed <- ev:
		case <-time.After(5 * time.Second):
			t.Fatal("the page is not reading the feed")
		}
	}
	holds("security watch with its records", `!document.getElementById("security-card").hidden &&
		!document.getElementById("sec-watching").hidden && document.querySelectorAll("#sec-list li").length === 5`)
	holds("kitchen scene", `!!document.querySelector('#devices [data-device="dotty-kitchen"] .scene') &&
		document.querySelectorAll("#feed .summary").length === 2`)
	holds("memory review and today's journal", `document.getElementById("mem-count").textContent === "2 to review" &&
		!document.getElementById("today-card").hidden && document.querySelectorAll("#today-greetings li").length === 2`)
	holds("host card and today's error", `document.getElementById("host-temp").textContent === "52.1 °C" &&
		document.getElementById("host-robots").textContent === "3" && document.getElementById("error-count").textContent === "1"`)
	screenshots(t, bctx)

	// A page on another site cannot drive the robot: its request (the
	// kind a browser sends without asking first) is refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>evil</title>")
	}))
	defer evil.Close()
	injects := len(xz.CallsTo("/xiaozhi/admin/inject-text"))
	if err := chromedp.Do(bctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	sent, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`fetch(`+strconv.Quote(srv.URL+"/ui/api/dance")+`, {method: "POST", mode: "no-cors",
		headers: {"Content-Type": "text/plain"}, body: "{}"}).then(() => true, () => false)`, chromedp.EvalAwaitPromise))
	if err != nil || !sent {
		t.Fatalf("the forged request was not sent (%v): the test proves nothing", err)
	}
	if n := len(xz.CallsTo("/xiaozhi/admin/inject-text")); n != injects {
		t.Error("a cross-site POST reached the robot")
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	holds("back on the page", `document.querySelectorAll("#states button").length === 6`)
	click("#load-songs")
	holds("songs listed again", `document.querySelectorAll("#songs button[data-song]").length === 2`)

	// Failures show their reason.
	xz.Set("/xiaozhi/admin/inject-text", xiaozhitest.Reply{Status: 503, Body: `{"error":"no device connected"}`})
	click("#dance")
	result("robot away", "bad", "Dotty isn't connected right now")
	holds("button usable again", `!document.getElementById("dance").disabled`)
	xz.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 404, Body: `{"error":"asset not found"}`})
	click(`#songs [data-song="Lullaby.opus"]`)
	result("missing song", "bad", "xiaozhi answered HTTP 404")
	xz.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 500, Body: "down"})
	holds("xiaozhi light down", `document.getElementById("st-xiaozhi").dataset.state === "down"`)

	// The phone layout: one column, nothing wider than the screen.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	holds("no sideways scroll at 390 px", `document.documentElement.scrollWidth <= 390 &&
		document.getElementById("security-card").offsetParent !== null &&
		document.getElementById("memory-card").offsetParent !== null && document.getElementById("today-card").offsetParent !== null`)
}

// TestSceneAndSecurityInBrowser drives the Scene line and the Security
// watch card against a fake bridge in headless Chromium: both fill from
// their routes, follow scene_synthesised and security_capture events with
// one request per burst, show markup as text, follow a robot into and
// out of the security state, say so quietly when the routes are missing,
// and fit a phone.
func TestSceneAndSecurityInBrowser(t *testing.T) {
	uitest.NeedChromium(t)
	p := newFakePage(t)
	stub, feed, srv := p.stub, p.feed, p.srv
	records := stub.records
	stub.set(func(b *bridgeStub) { b.records = nil }) // nothing recorded, nobody watching yet

	bctx, closeBrowser := uitest.Chromium(t, 60*time.Second)
	defer closeBrowser()
	holds := holdsWatched(t, bctx, 5*time.Second, watchDialogs(t, bctx, closeBrowser))
	send := feedSender(t, feed)
	// oneRequest waits until a burst's request has come and the page has
	// had time to send any more, then checks it sent one or two at most.
	oneRequest := func(what string, before int, count func() int) {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, what+" fetched again", func() bool { return count() > before })
		time.Sleep(800 * time.Millisecond) // past the page's 300 ms debounce
		if n := count() - before; n > 2 {
			t.Errorf("%s: %d requests for one burst of events", what, n)
		}
	}
	sceneCalls := func() int { n, _ := stub.calls(); return n }
	securityCalls := func() int { _, n := stub.calls(); return n }
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}

	// The Scene line: the kitchen's, with its age; none for the hall.
	holds("kitchen scene with its age", `(d => d && d.textContent.includes("holding a red kite") && d.querySelector(".time").textContent === "2 min ago")(
		document.querySelector('#devices [data-device="dotty-kitchen"] dd.scene'))`)
	holds("no scene line without a scene", `!!document.querySelector('#devices [data-device="dotty-hall"]') &&
		!document.querySelector('#devices [data-device="dotty-hall"] .scene') && document.getElementById("scene-note").hidden`)
	// No records and nobody in security: no card.
	testkit.WaitFor(t, 5*time.Second, "the first security request", func() bool { return securityCalls() > 0 })
	holds("no security card", `document.getElementById("security-card").hidden`)

	// A burst of new scenes: one request, the new text.
	stub.set(func(b *bridgeStub) {
		b.scenes["dotty-kitchen"] = scene(time.Now(), "hudson is in the room. Dotty sees a <b>paper boat</b>. State: talk.", "hudson", "talk")
	})
	before := sceneCalls()
	send(burst(10, "scene_synthesised", "dotty-kitchen", `{"reason":"face_recognized","preview":"hudson is in the room. Dotty sees a <b>paper boat</b>."}`)...)
	holds("the new scene, as text", `(d => d && d.textContent.includes("Dotty sees a <b>paper boat</b>.") && d.querySelector(".time").textContent === "just now")(
		document.querySelector('#devices [data-device="dotty-kitchen"] dd.scene')) && !document.querySelector("#devices b")`)
	oneRequest("scene", before, sceneCalls)
	holds("scene event summarised in the feed", `(li => li && li.querySelector(".summary")?.textContent === "face recognised: hudson is in the room. Dotty sees a <b>paper boat</b>." &&
		!li.querySelector(".data"))(document.querySelector('#feed [data-event-name="scene_synthesised"]'))`)

	// Security captures: one request per burst; the records, newest first,
	// descriptions and missing photos in words, markup as text.
	stub.set(func(b *bridgeStub) { b.records = records })
	before = securityCalls()
	send(burst(10, "security_capture", "dotty-hall", `{"photo_desc":"A dim hallway; a coat on a chair.","errors":["audio_capture_pending"]}`)...)
	holds("security card with its records", `!document.getElementById("security-card").hidden &&
		document.querySelectorAll("#sec-list li").length === 5 && document.getElementById("sec-watching").hidden`)
	oneRequest("security records", before, securityCalls)
	for _, c := range []struct{ what, js string }{
		{"newest first", `document.querySelector("#sec-list li .desc").textContent === "A dim hallway; a coat on a chair."`},
		{"device named", `document.querySelector("#sec-list li .name").textContent === "dotty-hall"`},
		{"no description in time", `[...document.querySelectorAll("#sec-list .desc.miss")].map(d => d.textContent).join("|") ===
			"no photo — no description in time|no photo — camera route missing on xiaozhi"`},
		{"markup as text", `[...document.querySelectorAll("#sec-list .desc")].some(d => d.textContent === ` + strconv.Quote(xssDesc) + `) &&
			!document.querySelector("#security-card img, #feed img")`},
		{"audio errors as a note", `[...document.querySelectorAll("#sec-list li")].map(li => li.querySelector(".note")?.textContent || "").join("|") ===
			"audio not available|audio not available|audio not available|audio not available|"`},
		{"heard and sound", `document.querySelector("#sec-list li:nth-child(5)").textContent.includes("Heard: is anyone home?") &&
			document.querySelector("#sec-list li:nth-child(3)").textContent.includes("Sound: door knock")`},
		{"capture summarised in the feed", `document.querySelector('#feed [data-event-name="security_capture"] .summary')?.textContent ===
			"A dim hallway; a coat on a chair. · audio not available"`},
		{"list labelled", `document.getElementById("sec-list").getAttribute("aria-label") !== null &&
			document.getElementById("security-card").getAttribute("aria-labelledby") === "security-title"`},
	} {
		holds(c.what, c.js)
	}
	send(burst(1, "security_capture", "dotty-hall", `{"photo_desc":"","errors":["photo_dispatch_failed","audio_poll_endpoint_pending"]}`)...)
	holds("a capture without a photo, in words", `document.querySelector('#feed [data-event-name="security_capture"] .summary')?.textContent ===
		"no photo — camera route missing on xiaozhi · audio not available"`)

	// The Watching badge follows the kitchen into and out of security,
	// and each change fetches the records again.
	stub.set(func(b *bridgeStub) { b.states["dotty-kitchen"]["current_state"] = "security" })
	time.Sleep(500 * time.Millisecond) // the capture's request is done
	before = securityCalls()
	send(burst(1, "state_changed", "dotty-kitchen", `{"state":"security"}`)...)
	holds("watching", `!document.getElementById("sec-watching").hidden &&
		document.getElementById("sec-who").textContent === "On watch: dotty-kitchen"`)
	testkit.WaitFor(t, 5*time.Second, "records fetched on entering security", func() bool { return securityCalls() > before })
	stub.set(func(b *bridgeStub) { b.states["dotty-kitchen"]["current_state"] = "idle" })
	before = securityCalls()
	send(burst(1, "state_changed", "dotty-kitchen", `{"state":"idle"}`)...)
	holds("not watching", `document.getElementById("sec-watching").hidden && document.getElementById("sec-who").hidden &&
		!document.getElementById("security-card").hidden`)
	testkit.WaitFor(t, 5*time.Second, "records fetched on leaving security", func() bool { return securityCalls() > before })

	// The phone layout with the new card: nothing wider than the screen.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	holds("no sideways scroll at 390 px", `document.documentElement.scrollWidth <= 390 &&
		document.getElementById("security-card").offsetParent !== null && !!document.querySelector("#devices .scene")`)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	// An older bridge without the routes: quiet notices, the rest works.
	stub.set(func(b *bridgeStub) { b.missing = true })
	send(append(burst(1, "scene_synthesised", "dotty-kitchen", `{"reason":"tick","preview":"…"}`),
		burst(1, "security_capture", "dotty-hall", `{"photo_desc":"","errors":[]}`)...)...)
	holds("quiet notices", `document.getElementById("scene-note").textContent === "Scene summaries unavailable (HTTP 404)." &&
		document.getElementById("sec-note").textContent === "Security records unavailable (HTTP 404)." &&
		!document.getElementById("scene-note").hidden && !document.getElementById("sec-note").hidden`)
	send(burst(1, "face_detected", "dotty-hall", `{}`)...)
	holds("the feed goes on", `!!document.querySelector('#feed [data-event-name="face_detected"][data-device="dotty-hall"]') &&
		document.getElementById("conn-feed").dataset.state === "live"`)
	stub.set(func(b *bridgeStub) { b.missing = false })
	send(burst(1, "security_capture", "dotty-hall", `{"photo_desc":"","errors":[]}`)...)
	holds("notice gone once the route answers", `document.getElementById("sec-note").hidden`)
}

// TestMemoryAndJournalInBrowser drives the Memory review and Today cards
// against a recording fake memory store and a fake journal in headless
// Chromium: facts show as text, Approve and Redact (with its second
// press, by mouse and by keyboard) make the exact store call and show
// their result, a busy store shows why, a forged cross-site redact is
// refused before the store; the journal card fills, refreshes on the
// events that can change it (one request per burst), hides when the day
// is empty, says so quietly on an older bridge, and both cards fit a
// phone.
func TestMemoryAndJournalInBrowser(t *testing.T) {
	uitest.NeedChromium(t)
	mem := newFakeMemory(memoryFacts()...)
	cfg := Config{Location: time.UTC}
	mem.wire(&cfg)
	u := New(cfg)
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	// Every answer to a memory action, with the Origin it came from.
	type answer struct {
		path, origin string
		status       int
	}
	var answersMu sync.Mutex
	var answers []answer
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := next(c); err != nil {
				c.Error(err)
			}
			if r := c.Request(); strings.HasPrefix(r.URL.Path, "/ui/api/memory/") {
				answersMu.Lock()
				answers = append(answers, answer{r.URL.Path, r.Header.Get("Origin"), c.Response().Status})
				answersMu.Unlock()
			}
			return nil
		}
	})
	u.Routes(e)
	feed, done := make(chan string), make(chan struct{})
	stub := fakeBridge(e, feed, done)
	t0 := time.Now()
	stub.set(func(b *bridgeStub) { b.journal = journalDay(t0, "") })
	srv := serveUI(t, u, e, done)

	bctx, closeBrowser := uitest.Chromium(t, 90*time.Second)
	defer closeBrowser()
	// The page never opens a dialog (Redact confirms with a second press).
	dialog := watchDialogs(t, bctx, closeBrowser)
	holds := holdsWatched(t, bctx, 10*time.Second, dialog)
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	click := func(sel string) { t.Helper(); do("click "+sel, chromedp.Click(chromedp.CSS(sel))) }
	calls := func(want ...string) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("the store calls %q", want), func() bool { return cmp.Equal(mem.received(), want) })
	}
	// still checks that the store got no further call.
	still := func(want ...string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		if got := mem.received(); !cmp.Equal(got, want) {
			t.Fatalf("store calls %q, want %q", got, want)
		}
	}
	result := func(what, kind, text string) {
		t.Helper()
		holds(what, fmt.Sprintf(`(r => r.dataset.kind === %q && r.textContent === %q)(document.getElementById("mem-result"))`, kind, text))
	}
	send := feedSender(t, feed)
	// sendUntil sends evs until js holds: after a navigation the first
	// frames can go to the previous page's stream before the server
	// notices it is gone.
	sendUntil := func(what, js string, evs ...string) {
		t.Helper()
		for range 5 {
			send(evs...)
			if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(2*time.Second),
				chromedp.WithPollingInterval(20*time.Millisecond))); err == nil {
				return
			}
		}
		t.Fatalf("%s: not after 5 tries", what)
	}
	pending := func(id, action string) string {
		return fmt.Sprintf(`#mem-pending li[data-id=%q] button[data-action=%q]`, id, action)
	}
	do("load /ui", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/ui"))

	// The card: held facts first, markup as text, each button named.
	holds("memory card with two held facts", `!document.getElementById("memory-card").hidden &&
		document.querySelectorAll("#mem-pending li").length === 2 && document.getElementById("mem-count").textContent === "2 to review" &&
		!document.getElementById("mem-count").hidden`)
	for _, c := range []struct{ what, js string }{
		{"held facts in order", `[...document.querySelectorAll("#mem-pending li")].map(li => li.dataset.id).join() === "m-held-1,m-held-2"`},
		{"the fact as text", `(li => li.querySelector(".name").textContent === "hudson" &&
			li.querySelector(".fact").textContent === "likes <img src=x onerror=alert(1)> dinosaurs")(document.querySelector("#mem-pending li"))`},
		{"no markup from the facts", `!document.querySelector("#memory-card img")`},
		{"buttons named for screen readers", `document.querySelector(` + strconv.Quote(pending("m-held-1", "approve")) + `).getAttribute("aria-label") ===
			"Approve fact about hudson: likes <img src=x onerror=alert(1)> dinosaurs" &&
			document.querySelector(` + strconv.Quote(pending("m-held-2", "redact")) + `).getAttribute("aria-label") ===
			"Redact fact about unknown-1: has a dog called Biscuit"`},
		{"approved facts collapsed below", `(d => !d.hidden && !d.open && document.getElementById("mem-approved-count").textContent === "1" &&
			!document.querySelector('#mem-approved li[data-id="m-approved"]').checkVisibility() &&
			!document.querySelector('#mem-approved [data-action="approve"]') && !!document.querySelector('#mem-approved [data-action="redact"]'))(
			document.getElementById("mem-approved-box"))`},
		{"the time it was learned", `document.querySelector('#mem-pending li[data-id="m-held-2"] .time').title === "2026-05-17T02:00:00.000000+00:00"`},
	} {
		holds(c.what, c.js)
	}

	// Approve: both buttons of the fact wait for the answer, then the
	// result, the fact moves to the approved list and the badge counts one.
	gate := make(chan struct{})
	mem.set(func(m *fakeMemory) { m.gate = gate })
	click(pending("m-held-1", "approve"))
	calls("approve m-held-1")
	holds("buttons disabled while the request runs", `[...document.querySelectorAll('#mem-pending li[data-id="m-held-1"] button')].every(b => b.disabled) &&
		document.getElementById("mem-result").dataset.kind === "busy"`)
	close(gate)
	mem.set(func(m *fakeMemory) { m.gate = nil })
	result("approved", "ok", "Approved: Dotty may now use the fact about hudson.")
	holds("list read again", `document.getElementById("mem-count").textContent === "1 to review" &&
		document.querySelectorAll("#mem-pending li").length === 1 && !!document.querySelector('#mem-approved li[data-id="m-held-1"]') &&
		document.getElementById("mem-approved-count").textContent === "2"`)
	holds("focus on the next fact", `document.activeElement === document.querySelector(`+strconv.Quote(pending("m-held-2", "approve"))+`)`)

	// A busy store: the reason, and the buttons usable again.
	mem.set(func(m *fakeMemory) { m.busy = errMemoryBusy })
	click(pending("m-held-2", "approve"))
	calls("approve m-held-1", "approve m-held-2")
	result("busy store", "bad", "Could not approve the fact ("+errMemoryBusy.Error()+"). Try again in a moment.")
	holds("buttons usable again, the fact still held", `[...document.querySelectorAll('#mem-pending li[data-id="m-held-2"] button')].every(b => !b.disabled) &&
		document.getElementById("mem-count").textContent === "1 to review"`)
	holds("the listing's failure in a quiet line", `(n => !n.hidden && n.textContent.startsWith("Could not read the memory store ("))(document.getElementById("mem-note"))`)
	mem.set(func(m *fakeMemory) { m.busy = nil })

	// Redact asks for a second press: the first one only arms the button.
	click(pending("m-held-2", "redact"))
	holds("armed", `(b => b.textContent === "Confirm redact" && b.getAttribute("aria-label") === "Confirm: redact fact about unknown-1: has a dog called Biscuit")(
		document.querySelector(`+strconv.Quote(pending("m-held-2", "redact"))+`))`)
	result("asks for the second press", "warn", "Press “Confirm redact” to delete the fact about unknown-1 for good.")
	still("approve m-held-1", "approve m-held-2")
	click(pending("m-held-2", "redact"))
	calls("approve m-held-1", "approve m-held-2", "redact m-held-2")
	result("redacted", "ok", "Redacted: the fact about unknown-1 is deleted.")
	holds("nothing held: no badge, the empty line", `document.getElementById("mem-count").hidden &&
		document.querySelectorAll("#mem-pending li").length === 0 && document.getElementById("mem-note").hidden`)

	// By keyboard, in the approved list: Escape disarms, Enter twice redacts.
	click("#mem-approved-box summary")
	holds("approved facts shown", `document.getElementById("mem-approved-box").open &&
		document.querySelector('#mem-approved li[data-id="m-approved"]').checkVisibility()`)
	brett := `#mem-approved li[data-id="m-approved"] button[data-action="redact"]`
	do("arm by keyboard", chromedp.Focus(chromedp.CSS(brett)), chromedp.KeyEvent(kb.Enter))
	holds("armed by keyboard", `document.querySelector(`+strconv.Quote(brett)+`).textContent === "Confirm redact"`)
	do("Escape", chromedp.KeyEvent(kb.Escape))
	holds("disarmed", `document.querySelector(`+strconv.Quote(brett)+`).textContent === "Redact" && document.getElementById("mem-result").textContent === ""`)
	still("approve m-held-1", "approve m-held-2", "redact m-held-2")
	do("redact by keyboard", chromedp.Focus(chromedp.CSS(brett)), chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.Enter))
	calls("approve m-held-1", "approve m-held-2", "redact m-held-2", "redact m-approved")
	result("redacted by keyboard", "ok", "Redacted: the fact about brett is deleted.")
	holds("approved list read again, still open", `document.getElementById("mem-approved-count").textContent === "1" &&
		!document.querySelector('#mem-approved li[data-id="m-approved"]') && document.getElementById("mem-approved-box").open`)

	// Today: the dream's first words (no summary) with the full text
	// behind a disclosure, the dance reflection, the greetings.
	holds("today card", `!document.getElementById("today-card").hidden && !document.getElementById("today-dream").hidden &&
		!document.getElementById("today-dance").hidden && document.querySelectorAll("#today-greetings li").length === 2`)
	for _, c := range []struct{ what, js string }{
		{"dream preview", `(p => p.length <= 201 && p.endsWith("…") && ` + strconv.Quote(dreamText) + `.startsWith(p.slice(0, -1)))(
			document.getElementById("today-dream-text").textContent)`},
		{"dream seed", `document.getElementById("today-dream-meta").textContent.startsWith("seed: Dune · ")`},
		{"full text behind the disclosure", `(d => !d.hidden && !d.open && document.getElementById("today-dream-full").textContent === ` +
			strconv.Quote(dreamText) + ` && !document.getElementById("today-dream-full").checkVisibility())(document.getElementById("today-dream-more"))`},
		{"dance reflection", `document.getElementById("today-dance-text").textContent === "I kept time with the kettle. Hudson laughed at the wobbly bit, so I kept the wobbly bit." &&
			document.getElementById("today-dance-meta").textContent.startsWith("robot · dotty-kitchen · ")`},
		{"greetings, newest first", `(li => li[0].querySelector(".name").textContent === "hudson dotty-kitchen" &&
			li[0].querySelector(".said").textContent === "Good morning, Hudson! Ready to fly the red kite?" && !li[0].querySelector(".note") &&
			li[1].querySelector(".said").textContent === "Hello there <i>Brett</i>!" &&
			li[1].querySelector(".note").textContent === "not spoken: xiaozhi unreachable: connection refused")(document.querySelectorAll("#today-greetings li"))`},
		{"markup as text", `!document.querySelector("#today-card b, #today-card i")`},
	} {
		holds(c.what, c.js)
	}
	click("#today-dream-more summary")
	holds("the whole dream", `document.getElementById("today-dream-more").open && document.getElementById("today-dream-full").checkVisibility() &&
		document.getElementById("today-dream-full").textContent.includes("<b>spice</b>")`)

	// Events that cannot change the journal fetch nothing; the ones that
	// can fetch it once per burst.
	testkit.WaitFor(t, 5*time.Second, "the first journal request", func() bool { return stub.journalCount() > 0 })
	before := stub.journalCount()
	send(burst(3, "face_detected", "dotty-kitchen", `{}`)...)
	send(burst(1, "state_changed", "dotty-kitchen", `{"state":"talk"}`)...)
	time.Sleep(800 * time.Millisecond) // past the page's 300 ms debounce
	if n := stub.journalCount() - before; n != 0 {
		t.Errorf("%d journal requests for events that cannot change it", n)
	}
	later := journalDay(time.Now(), "")
	later["dances"] = append([]any{map[string]any{"ts": time.Now().Format(time.RFC3339), "type": "dance", "device": "dotty-hall",
		"dance": "wiggle", "reflection": "The hall is an <em>echo</em>; I liked dancing with myself."}}, later["dances"].([]any)...)
	stub.set(func(b *bridgeStub) { b.journal = later })
	before = stub.journalCount()
	send(burst(10, "dance_ended", "dotty-hall", `{"dance":"wiggle"}`)...)
	holds("the new reflection, as text", `document.getElementById("today-dance-text").textContent === "The hall is an <em>echo</em>; I liked dancing with myself." &&
		document.getElementById("today-dance-meta").textContent.startsWith("wiggle · dotty-hall · ") && !document.querySelector("#today-card em")`)
	testkit.WaitFor(t, 5*time.Second, "the journal fetched again", func() bool { return stub.journalCount() > before })
	time.Sleep(800 * time.Millisecond)
	if n := stub.journalCount() - before; n > 2 {
		t.Errorf("%d journal requests for one burst of dance_ended", n)
	}
	// Waking from sleep: the night's dream, now with a summary.
	stub.set(func(b *bridgeStub) { b.journal = journalDay(time.Now(), "Dotty walked singing dunes under two moons.") })
	send(burst(1, "state_changed", "dotty-kitchen", `{"state":"sleep"}`)...)
	holds("dream summary", `document.getElementById("today-dream-text").textContent === "Dotty walked singing dunes under two moons." &&
		!document.getElementById("today-dream-more").hidden`)
	// A day with nothing in it: no card.
	stub.set(func(b *bridgeStub) { b.journal = nil })
	send(burst(1, "face_recognized", "dotty-kitchen", `{"identity":"hudson"}`)...)
	holds("no card for an empty day", `document.getElementById("today-card").hidden`)

	// A page on another site cannot redact: its request reaches the
	// bridge, which refuses it (403) before the store is asked.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>evil</title>")
	}))
	defer evil.Close()
	do("open the other site", chromedp.Navigate(evil.URL))
	sent, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`fetch(`+strconv.Quote(srv.URL+"/ui/api/memory/redact")+`, {method: "POST", mode: "no-cors",
		headers: {"Content-Type": "text/plain"}, body: '{"id":"m-held-1"}'}).then(() => true, () => false)`, chromedp.EvalAwaitPromise))
	if err != nil || !sent {
		t.Fatalf("the forged request was not sent (%v): the test proves nothing", err)
	}
	testkit.WaitFor(t, 5*time.Second, "the forged request answered 403", func() bool {
		answersMu.Lock()
		defer answersMu.Unlock()
		for _, a := range answers {
			if a.origin == evil.URL && a.path == "/ui/api/memory/redact" && a.status == http.StatusForbidden {
				return true
			}
		}
		return false
	})
	still("approve m-held-1", "approve m-held-2", "redact m-held-2", "redact m-approved")

	// Back on the page, an older bridge without the journal and without
	// memory: quiet lines, the rest works.
	mem.set(func(m *fakeMemory) {
		m.records = append(m.records, MemoryRecord{ID: "m-held-3", PersonID: "nana", Content: "is visiting on Sunday with " +
			"https://example.org/a-very-long-unbroken-address-that-must-wrap-on-a-phone", Pending: true, CreatedAt: time.Now().UTC().Format(time.RFC3339)})
	})
	stub.set(func(b *bridgeStub) { b.missing = true })
	do("back to /ui", chromedp.Navigate(srv.URL+"/ui"))
	holds("journal unavailable, quietly", `(n => !n.hidden && n.textContent === "Today's journal unavailable (HTTP 404).")(document.getElementById("today-note")) &&
		!document.getElementById("today-card").hidden && document.getElementById("today-dream").hidden`)
	holds("memory still works", `document.getElementById("mem-count").textContent === "1 to review"`)
	holds("the feed connected", `document.getElementById("conn-feed").dataset.state === "live"`)
	sendUntil("the feed goes on", `!!document.querySelector('#feed [data-event-name="face_detected"][data-device="dotty-hall"]')`,
		burst(1, "face_detected", "dotty-hall", `{}`)...)
	stub.set(func(b *bridgeStub) { b.missing, b.journal = false, journalDay(time.Now(), "") })
	sendUntil("notice gone once the route answers", `document.getElementById("today-note").hidden && !document.getElementById("today-dream").hidden`,
		burst(1, "dance_ended", "dotty-kitchen", `{}`)...)

	// The phone layout with both cards, the disclosures open: nothing
	// wider than the screen.
	click("#mem-approved-box summary")
	click("#today-dream-more summary")
	do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	holds("no sideways scroll at 390 px", `document.documentElement.scrollWidth <= 390 &&
		document.getElementById("memory-card").offsetParent !== null && document.getElementById("today-card").offsetParent !== null &&
		document.getElementById("mem-approved-box").open && document.getElementById("today-dream-more").open`)
	if m := dialog.Load(); m != nil {
		t.Errorf("a script from the data ran (dialog %q)", *m)
	}
}

// screenshots writes the page at desktop and phone widths, light and dark,
// to UI_SCREENSHOT_DIR when it is set (docs/ keeps the current ones).
func screenshots(t *testing.T, bctx context.Context) {
	t.Helper()
	dir := os.Getenv("UI_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	for _, shot := range []struct {
		name   string
		w, h   int64
		scheme string
	}{{"desktop", 1280, 900, "light"}, {"desktop-dark", 1280, 900, "dark"}, {"phone", 390, 844, "light"}, {"phone-dark", 390, 844, "dark"}} {
		media := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: shot.scheme}}})
			return err
		})
		png, err := chromedp.Run(bctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
			var opts []chromedp.EmulateViewportOption
			if shot.w < 600 {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(3))
			}
			if _, err := chromedp.Steps(chromedp.EmulateViewport(shot.w, shot.h, opts...), media)(ctx, tg); err != nil {
				return nil, err
			}
			return chromedp.FullScreenshot(100)(ctx, tg) // 100: PNG
		})
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot.name, err)
		}
		path := filepath.Join(dir, "ui-"+shot.name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}

// TestFeedRenderTime loads the page with 500 feed entries (25 robots with
// 20 recent events each from /ui/api/events, plus the turn ring) and prints how long the first
// full render took in the browser. It is a measurement, not an assertion:
// shared CI machines are too noisy for a time limit.
func TestFeedRenderTime(t *testing.T) {
	uitest.NeedChromium(t)
	const robots, perRobot = 25, 20
	now := float64(time.Now().Unix())
	var events []map[string]any
	for r := range robots {
		for i := range perRobot {
			events = append(events, map[string]any{"device_id": fmt.Sprintf("dotty-%02d", r), "ts": now - float64(i),
				"name": "sound_event", "data": map[string]any{"energy": i}})
		}
	}
	recent, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	bus := turnbus.New(nil)
	u := New(Config{Turns: bus, Location: time.UTC, RecentEvents: func() []byte { return recent }})
	e := echo.New()
	u.Routes(e)
	states := map[string]any{}
	for i := range robots {
		states[fmt.Sprintf("dotty-%02d", i)] = map[string]any{"current_state": "idle", "sensor_age_s": 1.0}
	}
	e.GET("/health", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"status": "ok"}) })
	e.GET("/api/perception/state", func(c echo.Context) error { return c.JSON(http.StatusOK, states) })
	srv := serveUI(t, u, e, nil)
	for i := range 50 {
		bus.Publish(turnbus.Turn{TS: time.Now().Add(-time.Duration(i) * time.Second), ResponseText: "😊 ok", Latency: time.Second})
	}
	testkit.WaitFor(t, 5*time.Second, "the turn ring", func() bool { u.mu.Lock(); defer u.mu.Unlock(); return len(u.recent) == 50 })

	bctx, closeBrowser := uitest.Chromium(t, 60*time.Second)
	defer closeBrowser()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	ms, err := chromedp.Run(bctx, chromedp.Poll[float64](`window.feedReady`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the feed never finished loading: %v", err)
	}
	n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#feed li").length`))
	if err != nil || n != FeedMax {
		t.Fatalf("%d feed entries rendered (%v), want %d", n, err, FeedMax)
	}
	build, _ := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.feedBuild`))
	// Layout of the whole list: the first frame that shows it.
	frame, _ := chromedp.Run(bctx, chromedp.Evaluate[float64](`new Promise(r => { const t = performance.now(); requestAnimationFrame(() => r(performance.now() - t)); })`,
		chromedp.EvalAwaitPromise))
	fmt.Printf("ui: %d feed entries ready %.1f ms after the script started (rows built in %.1f ms, next frame %.1f ms; target under 200 ms)\n",
		n, ms, build, frame)
}
