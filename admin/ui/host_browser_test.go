package ui

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui/uitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

// TestHostInstallAndTodaysErrorsInBrowser drives a dashboard with a
// password in headless Chromium, the credentials given at the browser's
// challenge as a person types them: the Host card's numbers are this
// machine's /proc, the manifest loads through the page's credentials and
// its icons are PNGs of their stated sizes, and today's failed turns
// show from the conversation log, also after the bridge restarts.
func TestHostInstallAndTodaysErrorsInBrowser(t *testing.T) {
	uitest.NeedChromium(t)
	logDir := t.TempDir()
	clog := convolog.New(convolog.Config{Dir: logDir, Location: time.UTC})
	xzHTTP, wsPort := xiaozhiPorts(t)
	httpPort := xzHTTP.Addr().(*net.TCPAddr).Port

	// The dashboards' day is fixed, so no midnight falls within the test.
	noon := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(noon)
	// start runs a bridge's dashboard over the shared log directory; stop
	// ends it as a restart does.
	start := func() (url string, bus *turnbus.Bus, stop func()) {
		bus = turnbus.New(nil)
		u := New(Config{Turns: bus, Clock: clock, Location: time.UTC, Access: credentials("nana", "s3cret"), ConvoLogPath: clog.Path,
			StateDir: logDir, RobotsSeen: func() int { return 2 }, XiaozhiHost: "127.0.0.1", XiaozhiHTTPPort: httpPort, XiaozhiWSPort: wsPort})
		e := echo.New()
		e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
		u.Routes(e)
		feed, done := make(chan string), make(chan struct{})
		fakeBridge(e, feed, done)
		srv, stop := runUI(u, e, done)
		return srv.URL, bus, stop
	}
	// failed is a failed voice turn: logged and published, as the voice
	// routes do.
	failed := func(bus *turnbus.Bus, at time.Time, text, reason string) {
		tr := turnbus.Turn{TS: at, Channel: "dotty", RequestText: "[User] " + text, ResponseText: "😢 Sorry, I can't think right now.",
			EmojiUsed: "😢", Emotion: "sad", Latency: 30 * time.Second, Error: reason}
		clog.Write(convolog.Record{TS: tr.TS, Channel: tr.Channel, RequestText: tr.RequestText, ResponseText: tr.ResponseText,
			EmojiUsed: tr.EmojiUsed, Latency: tr.Latency, Error: tr.Error})
		if bus != nil {
			bus.Publish(tr)
		}
	}
	morning := noon.Add(-3 * time.Hour)
	failed(nil, morning, "what's the weather?", "exception") // before this bridge started
	clog.Write(convolog.Record{TS: morning.Add(time.Second), Channel: "dotty", RequestText: "hi", ResponseText: "😊 Hi!", EmojiUsed: "😊"})

	url1, bus1, stop1 := start()
	stopped := false
	defer func() {
		if !stopped {
			stop1()
		}
	}()

	bctx, closeBrowser := uitest.Chromium(t, 90*time.Second)
	defer closeBrowser()

	// The password is given when the browser is challenged, as a person
	// types it; every other request goes on untouched. The URLs
	// challenged are kept.
	login := uitest.AnswerLogins(t, bctx, "nana", "s3cret")
	holds := holdsIn(t, bctx, 10*time.Second)

	// /proc/loadavg is sampled while the page reads it: the kernel
	// changes it every 5 s, and the card shows one of its values.
	loads := map[string]bool{}
	var loadsMu sync.Mutex
	sample := func() {
		f := procFields(t, "loadavg")
		loadsMu.Lock()
		loads[strings.Join(f[:3], " · ")] = true
		loadsMu.Unlock()
	}
	sampling, samplerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(samplerDone)
		for {
			select {
			case <-sampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
			f, err := os.ReadFile("/proc/loadavg")
			if err != nil {
				continue
			}
			loadsMu.Lock()
			loads[strings.Join(strings.Fields(string(f))[:3], " · ")] = true
			loadsMu.Unlock()
		}
	}()
	sample()
	upBefore, _ := strconv.ParseFloat(procFields(t, "uptime")[0], 64)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url1+"/ui")); err != nil {
		t.Fatalf("load /ui: %v", err)
	}
	holds("host card filled", `document.getElementById("host-robots").textContent === "2" &&
		document.getElementById("host-uptime").dataset.seconds !== undefined`)
	type hostCard struct {
		Temp, Load, Mem, MemTotal, DiskTotal, Up, Ports string
	}
	card, err := chromedp.Run(bctx, chromedp.Evaluate[hostCard](`(() => { const t = (id) => document.getElementById(id); return {
		Temp: t("host-temp").textContent, Load: t("host-load").textContent, Mem: t("host-mem").textContent,
		MemTotal: t("host-mem").dataset.total, DiskTotal: t("host-disk").dataset.total, Up: t("host-uptime").dataset.seconds,
		Ports: t("host-ports").textContent}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	upAfter, _ := strconv.ParseFloat(procFields(t, "uptime")[0], 64)
	sample()
	close(sampling)
	<-samplerDone

	memKB := memTotalKB(t)
	if card.MemTotal != strconv.FormatUint(memKB*1024, 10) || !strings.Contains(card.Mem, fmt.Sprintf(" of %.1f GiB", float64(memKB*1024)/(1<<30))) {
		t.Errorf("memory %q (total %s), /proc/meminfo MemTotal %d kB", card.Mem, card.MemTotal, memKB)
	}
	shownLoad, _, _ := strings.Cut(card.Load, " (")
	loadsMu.Lock()
	if !loads[shownLoad] {
		t.Errorf("load %q, /proc/loadavg was %v meanwhile", card.Load, loads)
	}
	loadsMu.Unlock()
	if up, err := strconv.ParseFloat(card.Up, 64); err != nil || up < upBefore || up > upAfter {
		t.Errorf("uptime %s s, /proc/uptime %v then %v", card.Up, upBefore, upAfter)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(logDir, &st); err != nil {
		t.Fatal(err)
	}
	if card.DiskTotal != strconv.FormatUint(st.Blocks*uint64(st.Bsize), 10) {
		t.Errorf("disk total %s, statfs %d", card.DiskTotal, st.Blocks*uint64(st.Bsize))
	}
	if zones, _ := filepath.Glob("/sys/class/thermal/thermal_zone*/temp"); len(zones) == 0 && card.Temp != "unknown" {
		t.Errorf("no thermal zone here, the card says %q", card.Temp)
	} else if len(zones) > 0 && !strings.HasSuffix(card.Temp, " °C") {
		t.Errorf("temperature %q", card.Temp)
	}
	if want := fmt.Sprintf("HTTP :%d answers · WebSocket :%d closed", httpPort, wsPort); card.Ports != want {
		t.Errorf("ports %q, want %q", card.Ports, want)
	}
	t.Logf("host card: %+v", card)

	// The manifest, as Chromium loads it for installing.
	man, err := chromedp.Call(bctx, page.GetAppManifest, page.GetAppManifestParams{})
	if err != nil {
		t.Fatal(err)
	}
	var m webManifest
	if err := json.Unmarshal([]byte(man.Data), &m); err != nil || len(man.Errors) != 0 || m.ShortName != "Dotty" || m.Display != "standalone" {
		t.Fatalf("manifest at %s: %q, errors %v (%v)", man.URL, man.Data, man.Errors, err)
	}
	challenged := login.Challenged()
	for _, u := range challenged {
		if strings.Contains(u, "manifest") {
			t.Errorf("the manifest was fetched without the page's credentials (challenged: %v)", challenged)
		}
	}
	icons, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(async () => {
		const m = await (await fetch(document.querySelector('link[rel="manifest"]').href, {credentials: "include"})).json();
		const all = m.icons.map((i) => [i.src, i.sizes]);
		all.push([document.querySelector('link[rel="apple-touch-icon"]').getAttribute("href"), "180x180"],
			[document.querySelector('link[rel="icon"]').getAttribute("href"), "32x32"]);
		const out = [];
		for (const [src, sizes] of all) {
			const r = await fetch(src);
			const bmp = await createImageBitmap(await r.blob());
			out.push([src, r.status, r.headers.get("content-type"), bmp.width + "x" + bmp.height, sizes].join(" "));
		}
		return out;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if len(icons) != 6 {
		t.Errorf("icons %v", icons)
	}
	for _, line := range icons {
		f := strings.Fields(line)
		if len(f) != 5 || f[1] != "200" || f[2] != "image/png" || f[3] != f[4] {
			t.Errorf("icon %q: want 200 image/png of its stated size", line)
		}
	}

	// Today's errors: the one logged before this bridge started, and one
	// live; a reload shows each once.
	errorsTab := func(n int) string {
		return fmt.Sprintf(`(() => { document.querySelector('.tabs [data-tab="error"]').click();
			const rows = [...document.querySelectorAll("#feed li")].filter((li) => li.offsetParent !== null);
			return rows.length === %d && rows.every((li) => li.dataset.error === "1") &&
				document.getElementById("error-count").textContent === "%d" &&
				document.getElementById("errors-today").offsetParent !== null &&
				document.getElementById("errors-today").textContent.startsWith("%d failed turn"); })()`, n, n, n)
	}
	holds("the morning's error from the log", errorsTab(1)+` && document.querySelector("#feed li[data-error]").textContent.includes("what's the weather?")`)
	failed(bus1, noon.Add(-time.Minute), "sing a song", "timeout")
	holds("a live error", `document.getElementById("error-count").textContent === "2"`)
	if err := chromedp.Do(bctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	holds("after a reload, each error once (the ring's and the log's)", errorsTab(2))

	// The bridge restarts: a new dashboard, its turn ring empty.
	stop1()
	stopped = true
	url2, _, stop2 := start()
	defer stop2()
	if err := chromedp.Do(bctx, chromedp.Navigate(url2+"/ui")); err != nil {
		t.Fatal(err)
	}
	holds("after a restart, today's errors from the log", errorsTab(2)+` &&
		[...document.querySelectorAll("#feed li[data-error]")].map((li) => li.textContent).join("|").includes("sing a song")`)
	if login.Overflowed() {
		t.Error("the request queue overflowed: requests were left paused")
	}
}
