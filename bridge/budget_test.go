package bridge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// budgetServer runs a server with a 1 MiB upload budget, its metrics, the
// upload route /api/upload (reads its whole body) and the JSON route
// /api/echo.
func budgetServer(t *testing.T, cfg Config) (*Server, *Metrics, func() error) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	cfg.UploadBudget = 1 << 20
	cfg.UploadBudgetInUse, cfg.UploadBudgetWaiting, cfg.UploadsRefused = m.UploadBudgetInUse, m.UploadBudgetWaiting, m.UploadsRefused
	cfg.UploadPaths = []string{"/api/upload"}
	s, _ := newTestServer(t, cfg)
	echoBody(s)
	s.Echo().POST("/api/upload", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return httpapi.BodyError(err, 1<<20)
		}
		return httpapi.WriteJSON(c, http.StatusOK, map[string]int{"bytes": len(b)})
	})
	return s, m, startRun(t, s)
}

// sendHead opens a connection and sends a POST's head with Content-Length
// declared (chunked when negative), then sent of its body.
func sendHead(t *testing.T, s *Server, path string, declared int, sent []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, r := dialServer(t, s)
	length := fmt.Sprintf("Content-Length: %d", declared)
	if declared < 0 {
		length = "Transfer-Encoding: chunked"
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n\r\n", path, length)
	if len(sent) > 0 {
		if _, err := c.Write(sent); err != nil {
			t.Fatal(err)
		}
	}
	return c, r
}

// chunk is one chunk of a chunked body.
func chunk(b []byte) []byte {
	return append(append(fmt.Appendf(nil, "%x\r\n", len(b)), b...), "\r\n"...)
}

// jsonOf is a JSON object body of exactly n bytes.
func jsonOf(n int) []byte {
	return []byte(`{"a":"` + strings.Repeat("x", n-len(`{"a":""}`)) + `"}`)
}

// readAnswer reads one response within 10 s: its status, Retry-After and body.
func readAnswer(t *testing.T, c net.Conn, r *bufio.Reader) (int, string, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(string(b))
}

func gauge(g prometheus.Collector) int64 { return int64(testutil.ToFloat64(g)) }

// A body waits for room in the budget first come first served: a smaller
// body that would fit does not overtake a larger one queued before it,
// while a small JSON body (FreeBody or less) is never held up; each is
// admitted as room frees, and nothing stays reserved afterwards.
func TestUploadBudgetQueuesFirstComeFirstServed(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, m, stop := budgetServer(t, Config{UploadTimeout: time.Minute, BodyTimeout: time.Minute})
	const kib = 1 << 10
	bodyA, bodyB, bodyC := jsonOf(600*kib), jsonOf(600*kib), jsonOf(300*kib)

	a, ra := sendHead(t, s, "/api/upload", len(bodyA), bodyA[:kib])
	testkit.WaitFor(t, 10*time.Second, "the first upload to reserve its 600 KiB", func() bool {
		return gauge(m.UploadBudgetInUse) == int64(len(bodyA))
	})
	b, rb := sendHead(t, s, "/api/upload", len(bodyB), nil)
	testkit.WaitFor(t, 10*time.Second, "the second upload to wait", func() bool { return gauge(m.UploadBudgetWaiting) == 1 })
	c, rc := sendHead(t, s, "/api/upload", len(bodyC), nil) // 600 + 300 KiB would fit
	testkit.WaitFor(t, 10*time.Second, "the third upload to wait behind the second", func() bool {
		return gauge(m.UploadBudgetWaiting) == 2
	})
	if got := gauge(m.UploadBudgetInUse); got != int64(len(bodyA)) {
		t.Errorf("in use %d while two wait, want %d: the 300 KiB body overtook the 600 KiB one", got, len(bodyA))
	}

	resp, err := noKeepAlive().Post("http://"+s.Addr()+"/api/echo", "application/json", strings.NewReader(`{"content":"hello"}`))
	if err != nil {
		t.Fatalf("a small body while uploads wait: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a small body while uploads wait: %d", resp.StatusCode)
	}

	for _, u := range []struct {
		name string
		c    net.Conn
		r    *bufio.Reader
		rest []byte
		n    int
	}{{"first", a, ra, bodyA[kib:], len(bodyA)}, {"second", b, rb, bodyB, len(bodyB)}, {"third", c, rc, bodyC, len(bodyC)}} {
		if _, err := u.c.Write(u.rest); err != nil {
			t.Fatal(err)
		}
		if code, _, body := readAnswer(t, u.c, u.r); code != http.StatusOK || body != fmt.Sprintf(`{"bytes":%d}`, u.n) {
			t.Errorf("%s upload: %d %s", u.name, code, body)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the budget to be given back", func() bool {
		return gauge(m.UploadBudgetInUse) == 0 && gauge(m.UploadBudgetWaiting) == 0
	})
	if n := gauge(m.UploadsRefused); n != 0 {
		t.Errorf("refused %d, want 0", n)
	}
	for _, conn := range []net.Conn{a, b, c} {
		conn.Close()
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A body that finds no room before its body deadline gets a 503 in the
// API's error shape with a Retry-After, and is counted; so does one
// waiting when the server stops. The upload holding the budget is
// unaffected.
func TestUploadBudgetRefusesAtTheDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, m, stop := budgetServer(t, Config{UploadTimeout: time.Minute, BodyTimeout: 300 * time.Millisecond, ShutdownGrace: time.Second})
	held := jsonOf(900 << 10)
	a, ra := sendHead(t, s, "/api/upload", len(held), held[:1024])
	testkit.WaitFor(t, 10*time.Second, "the upload to reserve its 900 KiB", func() bool {
		return gauge(m.UploadBudgetInUse) == int64(len(held))
	})

	// A JSON body of 200 KiB waits at most its 300 ms body deadline.
	b, rb := sendHead(t, s, "/api/echo", 200<<10, nil)
	code, retry, body := readAnswer(t, b, rb)
	if code != http.StatusServiceUnavailable || retry != "5" || body != `{"detail":"too many uploads in flight; try again later"}` {
		t.Errorf("waiting body: %d, Retry-After %q, %s; want 503, 5 and the reason", code, retry, body)
	}
	if n := gauge(m.UploadsRefused); n != 1 {
		t.Errorf("refused %d, want 1", n)
	}
	if _, err := a.Write(held[1024:]); err != nil {
		t.Fatal(err)
	}
	if code, _, body := readAnswer(t, a, ra); code != http.StatusOK {
		t.Errorf("the upload holding the budget: %d %s", code, body)
	}
	budgetBack(t, m, stop, a, b)
}

// budgetBack waits for the whole budget to be given back, closes conns
// and stops the server.
func budgetBack(t *testing.T, m *Metrics, stop func() error, conns ...net.Conn) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "the budget to be given back", func() bool { return gauge(m.UploadBudgetInUse) == 0 })
	for _, c := range conns {
		c.Close()
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A waiter gives up when the server stops, long before its deadline.
func TestUploadBudgetWaiterEndsAtStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, m, stop := budgetServer(t, Config{UploadTimeout: time.Minute, BodyTimeout: time.Minute, ShutdownGrace: time.Second})
	held := jsonOf(900 << 10)
	a, _ := sendHead(t, s, "/api/upload", len(held), held[:1024])
	testkit.WaitFor(t, 10*time.Second, "the upload to reserve its 900 KiB", func() bool {
		return gauge(m.UploadBudgetInUse) == int64(len(held))
	})
	b, rb := sendHead(t, s, "/api/echo", 200<<10, nil)
	testkit.WaitFor(t, 10*time.Second, "the JSON body to wait", func() bool { return gauge(m.UploadBudgetWaiting) == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The read is bounded at 10 s, the waiter's deadline is a minute away:
	// only the stop can have ended the wait.
	if code, retry, _ := readAnswer(t, b, rb); code != http.StatusServiceUnavailable || retry != "5" {
		t.Errorf("waiter at stop: %d, Retry-After %q; want 503 and 5", code, retry)
	}
	a.Close()
	b.Close()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// A body of unknown length reserves as it is read, budgetStep at a time
// past its first FreeBody bytes, not the route's whole limit; past the
// limit it gets a 413.
func TestUploadBudgetChunkedBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, m, stop := budgetServer(t, Config{UploadTimeout: time.Minute, BodyTimeout: time.Minute})
	body := jsonOf(200 << 10)
	c, r := sendHead(t, s, "/api/upload", -1, chunk(body))
	testkit.WaitFor(t, 10*time.Second, "the chunked body to be read", func() bool {
		return gauge(m.UploadBudgetInUse) >= int64(len(body)-FreeBody)
	})
	if got, most := gauge(m.UploadBudgetInUse), int64(len(body)-FreeBody+budgetStep); got > most {
		t.Errorf("a chunked body of %d bytes read reserved %d, want at most %d", len(body), got, most)
	}
	if _, err := c.Write([]byte("0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if code, _, got := readAnswer(t, c, r); code != http.StatusOK || got != fmt.Sprintf(`{"bytes":%d}`, len(body)) {
		t.Errorf("chunked upload: %d %s", code, got)
	}

	// A body of unknown length past the whole budget gets a 413.
	big, rbig := sendHead(t, s, "/api/upload", -1, nil)
	go func() { // the answer comes before the body ends; the write fails then
		for range 24 {
			if _, err := big.Write(chunk(make([]byte, 64<<10))); err != nil {
				return
			}
		}
	}()
	if code, _, got := readAnswer(t, big, rbig); code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d %s", code, got)
	}
	budgetBack(t, m, stop, c, big)
}

// A JSON body declared larger than httpapi.MaxBody is refused before it
// is read, reserving nothing; an upload declared larger than the whole
// budget waits for all of it and is read alone.
func TestUploadBudgetOversizedBodies(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, m, stop := budgetServer(t, Config{UploadTimeout: time.Minute, BodyTimeout: time.Minute})
	c, r := sendHead(t, s, "/api/echo", 1<<20+1, nil)
	code, _, body := readAnswer(t, c, r)
	if code != http.StatusRequestEntityTooLarge || body != `{"detail":"request body over 1048576 bytes"}` {
		t.Errorf("JSON body declared over 1 MiB: %d %s", code, body)
	}
	c.Close()
	if got := gauge(m.UploadBudgetInUse) + gauge(m.UploadBudgetWaiting) + gauge(m.UploadsRefused); got != 0 {
		t.Errorf("refusing an oversized JSON body touched the budget (%d)", got)
	}

	big := jsonOf(1<<20 + 300<<10)
	c, r = sendHead(t, s, "/api/upload", len(big), big[:1024])
	testkit.WaitFor(t, 10*time.Second, "the large upload to reserve the whole budget", func() bool {
		return gauge(m.UploadBudgetInUse) == 1<<20
	})
	small, rsmall := sendHead(t, s, "/api/upload", 20<<10, nil)
	testkit.WaitFor(t, 10*time.Second, "a 20 KiB upload to wait behind it", func() bool { return gauge(m.UploadBudgetWaiting) == 1 })
	if _, err := c.Write(big[1024:]); err != nil {
		t.Fatal(err)
	}
	if code, _, body := readAnswer(t, c, r); code != http.StatusOK || body != fmt.Sprintf(`{"bytes":%d}`, len(big)) {
		t.Errorf("upload larger than the budget: %d %s", code, body)
	}
	if _, err := small.Write(jsonOf(20 << 10)); err != nil {
		t.Fatal(err)
	}
	if code, _, body := readAnswer(t, small, rsmall); code != http.StatusOK {
		t.Errorf("the upload behind it: %d %s", code, body)
	}
	c.Close()
	small.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	tooSmall := DefaultConfig()
	tooSmall.UploadBudget = 1 << 19
	if err := tooSmall.Validate(); err == nil || !strings.Contains(err.Error(), "UploadBudget") {
		t.Errorf("a budget below the largest JSON body: %v", err)
	}
}
