package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	ui     *UI
	bus    *turnbus.Bus
	url    string
	cancel context.CancelFunc // ends Run
}

// clients reports how many turn-feed streams are registered.
func (e *env) clients() int {
	return e.ui.clients.Watchers()
}

// drained reads body to its end, failing after 5 s, and returns what it read.
func drained(t *testing.T, body io.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(body)
		got <- string(b)
	}()
	return testkit.Recv(t, 5*time.Second, got, "stream did not end within 5 s")
}

func newEnv(t *testing.T, cfg Config) *env { return newEnvOn(t, cfg, nil) }

// smallBuffers shrinks the send buffer of every accepted connection, so a
// client that stops reading backs the server up after a few frames
// whatever size the kernel would otherwise grow the buffer to.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// newEnvOn is newEnv with the server's listener wrapped by wrap (nil: as is).
func newEnvOn(t *testing.T, cfg Config, wrap func(net.Listener) net.Listener) *env {
	t.Helper()
	bus := turnbus.New(nil)
	if cfg.Turns == nil {
		cfg.Turns = bus
	}
	if cfg.Location == nil {
		cfg.Location = time.FixedZone("AEST", 10*3600)
	}
	u := New(cfg)
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	u.Routes(e)
	ts := httptest.NewUnstartedServer(e)
	if wrap != nil {
		ts.Listener = wrap(ts.Listener)
	}
	ts.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = u.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; ts.Close() })
	return &env{ui: u, bus: bus, url: ts.URL, cancel: cancel}
}

func get(t *testing.T, url, user, pass string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestPageAndAssets(t *testing.T) {
	e := newEnv(t, Config{})
	for _, tt := range []struct{ path, ctype, has string }{
		{"/ui", "text/html", `<ol id="feed"`},
		{"/ui/", "text/html", `/ui/static/app.js`},
		{"/ui/static/app.js", "javascript", "EventSource"},
		{"/ui/static/app.css", "text/css", "prefers-color-scheme"},
	} {
		resp, body := get(t, e.url+tt.path, "", "")
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), tt.ctype) || !strings.Contains(body, tt.has) {
			t.Errorf("%s: %d %s, has %q: %v", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.has, strings.Contains(body, tt.has))
		}
		// Self-contained: nothing is loaded from another origin.
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "//cdn") {
			t.Errorf("%s references another origin", tt.path)
		}
	}
	if resp, _ := get(t, e.url+"/ui/static/nope.js", "", ""); resp.StatusCode != 404 {
		t.Errorf("missing asset: %d", resp.StatusCode)
	}
}

func TestBasicAuth(t *testing.T) {
	open := newEnv(t, Config{Access: credentials("admin", "")}) // only one set: no auth
	if resp, _ := get(t, open.url+"/ui", "", ""); resp.StatusCode != 200 {
		t.Errorf("one credential set: %d", resp.StatusCode)
	}
	e := newEnv(t, Config{Access: credentials("admin", "s3cret")})
	for _, tt := range []struct {
		user, pass string
		status     int
	}{{"", "", 401}, {"admin", "wrong", 401}, {"other", "s3cret", 401}, {"admin", "s3cret", 200}} {
		for _, path := range []string{"/ui", "/ui/events", "/ui/api/turns", "/ui/static/app.js"} {
			if tt.status == 200 && path == "/ui/events" {
				continue // a stream; covered below
			}
			resp, _ := get(t, e.url+path, tt.user, tt.pass)
			if resp.StatusCode != tt.status {
				t.Errorf("%s as %q/%q: %d, want %d", path, tt.user, tt.pass, resp.StatusCode, tt.status)
			}
			if tt.status == 401 && resp.Header.Get("WWW-Authenticate") != `Basic realm="dotty"` {
				t.Errorf("%s: WWW-Authenticate %q", path, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
}

// Every /ui route, pages and reads included, answers only a Host naming
// this machine: a rebinding page reads nothing, with or without
// credentials set.
func TestPagesRefuseARebindingHost(t *testing.T) {
	for _, access := range []*httpapi.Access{nil, credentials("admin", "s3cret")} {
		e := newEnv(t, Config{Access: access})
		for _, path := range []string{"/ui", "/ui/static/app.js", "/ui/api/turns", "/ui/api/status", "/ui/api/photos", "/ui/api/photo", "/ui/api/memory", "/ui/events"} {
			req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
			req.Host = "evil.example:8080"
			req.SetBasicAuth("admin", "s3cret")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 403 {
				t.Errorf("%s with a rebinding Host: %d", path, resp.StatusCode)
			}
		}
	}
}

// credentials is the bridge's access rule with a dashboard user and password.
func credentials(user, pass string) *httpapi.Access {
	return httpapi.NewAccess(httpapi.AccessConfig{User: user, Pass: pass})
}

// stream opens /ui/events and returns a frame reader.
func stream(t *testing.T, ctx context.Context, url string) (*http.Response, func() string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ui/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	frames := testkit.SSEFrames(ctx, resp.Body)
	return resp, func() string {
		return testkit.Recv(t, 5*time.Second, frames, "no frame within 5 s")
	}
}

func TestTurnFeed(t *testing.T) {
	stopping := make(chan struct{})
	e := newEnv(t, Config{Heartbeat: 50 * time.Millisecond, Stopping: stopping})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, next := stream(t, ctx, e.url)
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers %v", resp.Header)
	}
	if f := next(); f != "retry: 5000\n" {
		t.Fatalf("first frame %q", f)
	}
	ts := time.Date(2026, 5, 17, 11, 37, 17, 123456000, time.UTC)
	// Publish until the subscriber is in (the stream may attach after Run subscribed).
	e.bus.Publish(turnbus.Turn{TS: ts, Channel: "dotty", RequestText: "[Context] x\n\n[User] what is <a> comet?",
		ResponseText: "😊 An icy visitor.", EmojiUsed: "😊", Emotion: "happy", Latency: 1234567 * time.Microsecond})
	var f string
	for f = next(); f == ": heartbeat\n"; f = next() {
	}
	want := `data: {"ts":"2026-05-17T21:37:17.123456+10:00","channel":"dotty","request_text":"what is <a> comet?",` +
		`"response_text":"😊 An icy visitor.","latency_ms":1235,"error":null,"emoji_used":"😊","emotion":"happy"}` + "\n"
	if f != want {
		t.Errorf("frame\n got %q\nwant %q", f, want)
	}
	if f := next(); f != ": heartbeat\n" {
		t.Errorf("heartbeat %q", f)
	}
	e.bus.Publish(turnbus.Turn{TS: ts, RequestText: "no marker", Error: "timeout"})
	for f = next(); f == ": heartbeat\n"; f = next() {
	}
	if !strings.Contains(f, `"request_text":"no marker"`) || !strings.Contains(f, `"error":"timeout"`) {
		t.Errorf("second frame %q", f)
	}
	// Newest first on /ui/api/turns.
	_, body := get(t, e.url+"/ui/api/turns", "", "")
	if !strings.HasPrefix(body, `[{"ts":"2026-05-17T21:37:17.123456+10:00","channel":"","request_text":"no marker"`) || strings.Count(body, `"ts"`) != 2 {
		t.Errorf("turns %s", body)
	}
	close(stopping) // server shutdown ends the stream
	drained(t, resp.Body)
	testkit.WaitFor(t, 5*time.Second, "the client to leave", func() bool { return e.clients() == 0 })
}

func TestStreamEnds(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The client hanging up ends the handler.
	cctx, hangUp := context.WithCancel(ctx)
	_, next := stream(t, cctx, e.url)
	if f := next(); f != "retry: 5000\n" {
		t.Fatalf("first frame %q", f)
	}
	testkit.WaitFor(t, 5*time.Second, "the client to join", func() bool { return e.clients() == 1 })
	hangUp()
	testkit.WaitFor(t, 5*time.Second, "the client to leave", func() bool { return e.clients() == 0 })

	// Run ending ends open streams and refuses new ones.
	resp, next := stream(t, ctx, e.url)
	next()
	testkit.WaitFor(t, 5*time.Second, "the client to join", func() bool { return e.clients() == 1 })
	e.cancel()
	drained(t, resp.Body)
	testkit.WaitFor(t, 5*time.Second, "the client to leave", func() bool { return e.clients() == 0 })
	if resp, _ := get(t, e.url+"/ui/events", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Run: %d, want 503", resp.StatusCode)
	}
}

func TestNoTurnSource(t *testing.T) {
	u := New(Config{})
	e := echo.New()
	u.Routes(e)
	ts := httptest.NewServer(e)
	defer ts.Close()
	if resp, _ := get(t, ts.URL+"/ui/events", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/ui/events without turns: %d, want 503", resp.StatusCode)
	}
	if resp, body := get(t, ts.URL+"/ui/api/turns", "", ""); resp.StatusCode != 200 || body != "[]" {
		t.Errorf("/ui/api/turns without turns: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := u.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestTurnRingAndSlowClient(t *testing.T) {
	e := newEnvOn(t, Config{}, func(l net.Listener) net.Listener { return smallBuffers{l} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A client that never reads cannot hold up the bus or the ring. The
	// server's send buffer is small, so the turns fill it, the client's
	// untouched receive buffer and its queue long before the last one (the
	// bus clips each text to 4 KiB, so large texts alone would not).
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/ui/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	const n, batch = 400, 100
	big := strings.Repeat("x", 64<<10) // clipped to 4 KiB by the bus
	// ringCaughtUp waits until the ring's newest turn is turn i.
	ringCaughtUp := func(i int) {
		t.Helper()
		testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("the ring to hold turn %d", i), func() bool {
			_, body := get(t, e.url+"/ui/api/turns", "", "")
			var turns []turnFrame
			if err := json.Unmarshal([]byte(body), &turns); err != nil {
				t.Fatal(err)
			}
			return len(turns) > 0 && turns[0].LatencyMS == int64(i)
		})
	}
	// Turns come in batches smaller than the dashboard's own queue (256),
	// each once the dashboard has taken the last (a voice turn takes
	// seconds): its subscription never falls behind, however slow the
	// machine, while the slow client's falls behind for good.
	start := time.Now()
	for i := range n {
		e.bus.Publish(turnbus.Turn{ResponseText: big, Latency: time.Duration(i) * time.Millisecond})
		if (i+1)%batch == 0 {
			ringCaughtUp(i)
		}
	}
	if ctx.Err() != nil {
		t.Error("publishing waited for the slow client's request to end")
	}
	t.Logf("publishing %d turns took %v", n, time.Since(start).Round(time.Millisecond))
	_, body := get(t, e.url+"/ui/api/turns", "", "")
	var turns []turnFrame
	if err := json.Unmarshal([]byte(body), &turns); err != nil {
		t.Fatal(err)
	}
	if len(turns) != ringSize {
		t.Errorf("ring holds %d turns, want %d", len(turns), ringSize)
	}
	if e.bus.Dropped() != 0 {
		t.Errorf("the dashboard's own subscription dropped %d turns", e.bus.Dropped())
	}
	// The slow client was dropped: its stream ends short of the n turns,
	// with a named event saying why (the page's onmessage ignores it).
	stream := drained(t, resp.Body)
	if got := strings.Count(stream, "data: {\"ts\""); got >= n {
		t.Errorf("slow client got all %d turns", got)
	}
	if !strings.HasSuffix(stream, "event: fell_behind\ndata: {\"queue\":64}\n\n") {
		t.Errorf("stream ends %q, want the fell_behind event", stream[max(len(stream)-80, 0):])
	}
	if n := e.clients(); n != 0 {
		t.Errorf("%d clients still registered", n)
	}
}

func TestUserText(t *testing.T) {
	for in, want := range map[string]string{
		"[Context] a\n[User] b [User]   c": "c",
		"plain":                            "plain",
		"[User]":                           "",
	} {
		if got := userText(in); got != want {
			t.Errorf("userText(%q) = %q, want %q", in, got, want)
		}
	}
}

// At most MaxClients turn-feed clients; the next gets 503 with the reason,
// and a client that leaves frees its slot at once.
func TestTurnFeedClientCap(t *testing.T) {
	e := newEnv(t, Config{MaxClients: 2})
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	stream(t, ctx1, e.url)
	stream(t, ctx2, e.url)
	testkit.WaitFor(t, 5*time.Second, "two clients", func() bool { return e.clients() == 2 })
	resp, body := get(t, e.url+"/ui/events", "", "")
	if want := `{"detail":"too many dashboard clients (limit 2); try again later"}`; resp.StatusCode != 503 || strings.TrimSpace(body) != want {
		t.Errorf("third client: %d %s", resp.StatusCode, body)
	}
	cancel1()
	testkit.WaitFor(t, 5*time.Second, "the slot freed", func() bool { return e.clients() == 1 })
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	if resp, _ := stream(t, ctx3, e.url); resp.StatusCode != 200 {
		t.Errorf("client after one left: %d", resp.StatusCode)
	}
}
