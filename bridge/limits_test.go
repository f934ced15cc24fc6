package bridge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// rawRequest writes req on a new connection and returns the connection and
// a reader over it.
func dialServer(t *testing.T, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// readStatus reads one response's status line within d ("" when the
// connection ended or nothing came).
func readStatus(c net.Conn, r *bufio.Reader, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status, nil
}

// echoBody mounts a JSON route that reads its whole body.
func echoBody(s *Server) {
	s.Echo().POST("/api/echo", func(c echo.Context) error {
		obj, _, err := httpapi.ReadObject(c.Request().Body)
		if err != nil {
			return err
		}
		return httpapi.WriteJSON(c, http.StatusOK, map[string]int{"keys": len(obj)})
	})
}

// A client that trickles its body is cut off at BodyTimeout with a 400 (or
// a closed connection), never a 500, and the server goes on serving.
func TestSlowBodyIsCutOff(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newTestServer(t, Config{BodyTimeout: 300 * time.Millisecond})
	echoBody(s)
	stop := startRun(t, s)
	c, r := dialServer(t, s)
	fmt.Fprintf(c, "POST /api/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	start := time.Now()
	done := make(chan struct{})
	go func() { // one byte every 100 ms, for far longer than the deadline
		defer close(done)
		for range 50 {
			time.Sleep(100 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	// The body never completes (51 of 100 bytes): only the body deadline
	// can end the request, with a 400 or a close, before the read below
	// gives up a minute later.
	status, err := readStatus(c, r, time.Minute)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("slow body held the connection: %v", err)
	case err == nil && !strings.HasPrefix(status, "400"):
		t.Errorf("slow body answered %q, want 400 or a closed connection", status)
	}
	t.Logf("slow body held the connection %v", time.Since(start).Round(time.Millisecond))
	c.Close()
	<-done
	// A prompt client on the same server is unaffected.
	resp, err := noKeepAlive().Post("http://"+s.Addr()+"/api/echo", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("normal request after the slow one: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// The body deadline is lifted once the body is read: a handler that
// streams for longer than BodyTimeout keeps its request context.
func TestBodyDeadlineDoesNotCutAStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newTestServer(t, Config{BodyTimeout: 200 * time.Millisecond})
	s.Echo().POST("/api/stream", func(c echo.Context) error {
		if _, _, err := httpapi.ReadObject(c.Request().Body); err != nil {
			return err
		}
		c.Response().WriteHeader(http.StatusOK)
		for i := range 8 {
			select {
			case <-c.Request().Context().Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
			fmt.Fprintf(c.Response(), "%d\n", i)
			c.Response().Flush()
		}
		return nil
	})
	stop := startRun(t, s)
	resp, err := noKeepAlive().Post("http://"+s.Addr()+"/api/stream", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Count(string(b), "\n") != 8 {
		t.Errorf("stream cut short after the body deadline: %q", b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A kept-alive connection with no further request is closed after
// IdleTimeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newTestServer(t, Config{IdleTimeout: 200 * time.Millisecond})
	stop := startRun(t, s)
	c, r := dialServer(t, s)
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, err := readStatus(c, r, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
		t.Fatalf("health: %q %v", status, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: read %v, want EOF (closed by the server)", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// Past MaxConns (and the loopback reserve) a new connection is not served
// until one closes; then it is.
func TestConnectionLimit(t *testing.T) {
	defer goleak.VerifyNone(t)
	const limit = 4
	s, _ := newTestServer(t, Config{MaxConns: limit})
	stop := startRun(t, s)
	held := make([]net.Conn, 0, limit+loopbackReserve)
	for range limit + loopbackReserve { // loopback may use the reserve too
		c, r := dialServer(t, s)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if status, err := readStatus(c, r, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
			t.Fatalf("connection %d: %q %v", len(held), status, err)
		}
		held = append(held, c)
	}
	extra, r := dialServer(t, s)
	fmt.Fprintf(extra, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, err := readStatus(extra, r, 300*time.Millisecond); err == nil {
		t.Fatalf("connection past the limit was served: %q", status)
	}
	held[0].Close()
	if status, err := readStatus(extra, r, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
		t.Fatalf("parked connection after a slot freed: %q %v", status, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// lanAddr returns one of this machine's non-loopback IPv4 addresses, so a
// test can connect as a LAN peer would (the server sees that address, not
// 127.0.0.1); the test is skipped on a machine without one.
func lanAddr(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("no non-loopback IPv4 address to connect from")
	return nil
}

// On a real server: LAN peers holding every ordinary slot park the next LAN
// connection, while an operator on loopback still gets /health through the
// reserve; the parked LAN connection is served once a LAN one closes.
func TestLoopbackHealthWhileLANHoldsEverySlot(t *testing.T) {
	defer goleak.VerifyNone(t)
	ip := lanAddr(t)
	const limit = 3
	s, _ := newTestServer(t, Config{Host: "0.0.0.0", MaxConns: limit})
	stop := startRun(t, s)
	_, port, _ := net.SplitHostPort(s.Addr())
	lan := net.JoinHostPort(ip.String(), port)
	dial := func(addr string) (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	held := make([]net.Conn, 0, limit)
	for range limit {
		c, r := dial(lan)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if status, err := readStatus(c, r, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
			t.Fatalf("LAN connection %d: %q %v", len(held), status, err)
		}
		held = append(held, c)
	}
	extra, extraR := dial(lan)
	fmt.Fprintf(extra, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	if status, err := readStatus(extra, extraR, 300*time.Millisecond); err == nil {
		t.Fatalf("LAN connection past the limit was served: %q", status)
	}
	resp, err := noKeepAlive().Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/health")
	if err != nil {
		t.Fatalf("loopback /health while LAN peers hold every slot: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("loopback /health: %d", resp.StatusCode)
	}
	held[0].Close()
	if status, err := readStatus(extra, extraR, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
		t.Fatalf("parked LAN connection after a slot freed: %q %v", status, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// On a real server: once every slot (reserve included) is held and the
// parking list is full, a new connection is closed at once unserved, and
// TurnedAway counts it.
func TestConnectionLimitCountsTurnedAway(t *testing.T) {
	defer goleak.VerifyNone(t)
	const limit = 1
	turned := prometheus.NewCounter(prometheus.CounterOpts{Name: "turned_away_total"})
	s, _ := newTestServer(t, Config{MaxConns: limit, TurnedAway: turned})
	stop := startRun(t, s)
	for i := range limit + loopbackReserve {
		c, r := dialServer(t, s)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if status, err := readStatus(c, r, 5*time.Second); err != nil || !strings.HasPrefix(status, "200") {
			t.Fatalf("connection %d: %q %v", i, status, err)
		}
	}
	// The parking list holds MaxConns. The listener accepts in the order
	// connections were established, so parked is parked before extra comes.
	parked, _ := dialServer(t, s)
	// extra sends nothing: a close with an unread request would reach it
	// as a reset instead of an end of stream.
	extra, r := dialServer(t, s)
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("connection past a full parking list: read %v, want EOF (closed unserved)", err)
	}
	if n := testutil.ToFloat64(turned); n != 1 {
		t.Errorf("turned away %v, want 1", n)
	}
	parked.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// lanConn is a connection whose peer is on the LAN.
type lanConn struct{ net.Conn }

func (lanConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 168, 1, 20), Port: 4000} }

// The reserve is for loopback peers only: a LAN peer past the ordinary
// slots is parked, and gets the first slot that frees.
func TestLoopbackReserve(t *testing.T) {
	l := &limitListener{free: 1, reserveFree: 1, maxParked: 1, conns: make(chan net.Conn, 2)}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	l.admit(lanConn{a})
	first := <-l.conns
	l.admit(lanConn{a})
	if len(l.parked) != 1 || len(l.conns) != 0 {
		t.Fatalf("second LAN connection: %d parked, %d admitted; want it parked", len(l.parked), len(l.conns))
	}
	l.admit(loopConn{a})
	if len(l.conns) != 1 {
		t.Fatal("loopback connection did not get the reserve")
	}
	<-l.conns
	first.(*limitedConn).release()
	if len(l.parked) != 0 || len(l.conns) != 1 {
		t.Fatal("the freed slot did not go to the parked connection")
	}
}

type loopConn struct{ net.Conn }

func (loopConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000} }

// A route named in UploadPaths (the sidecar moved by SIDECAR_PATH) reads its
// body under UploadTimeout: a body trickled for longer than BodyTimeout still
// arrives whole, while the same body on a JSON route is cut off.
func TestUploadPathsGetTheUploadDeadline(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, _ := newTestServer(t, Config{BodyTimeout: 200 * time.Millisecond, UploadTimeout: 10 * time.Second,
		UploadPaths: []string{"/v2/listen"}})
	echoBody(s)
	s.Echo().POST("/v2/listen", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return httpapi.NewError(http.StatusBadRequest, "could not read the request body")
		}
		return c.String(http.StatusOK, strconv.Itoa(len(b)))
	})
	stop := startRun(t, s)
	// trickle sends 8 bytes, one every 100 ms: 800 ms, four times BodyTimeout.
	trickle := func(path string) (string, error) {
		c, r := dialServer(t, s)
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n", path)
		for range 8 {
			time.Sleep(100 * time.Millisecond) // the pace under test, not a wait for another goroutine
			if _, err := c.Write([]byte("{")); err != nil {
				break
			}
		}
		return readStatus(c, r, 5*time.Second)
	}
	if status, err := trickle("/v2/listen"); err != nil || !strings.HasPrefix(status, "200") {
		t.Errorf("upload path: %q %v, want 200 after the whole body", status, err)
	}
	if status, err := trickle("/api/echo"); err == nil && !strings.HasPrefix(status, "400") {
		t.Errorf("JSON route: %q, want 400 or a closed connection", status)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A connection that arrives while the listener closes is closed at once,
// never parked or handed to an Accept no one will call again.
func TestLimitListenerClosesLateArrivals(t *testing.T) {
	defer goleak.VerifyNone(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(ln, 1, 0, time.Minute, nil, nil)
	a, b := net.Pipe()
	l.admit(lanConn{a}) // takes the only slot, never accepted
	c, d := net.Pipe()
	l.admit(lanConn{c}) // parked
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	e, f := net.Pipe()
	l.admit(lanConn{e}) // arrives after Close
	for i, peer := range []net.Conn{b, d, f} {
		_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection %d: read %v, want EOF (closed by the listener)", i, err)
		}
		peer.Close()
	}
	if n := len(l.conns); n != 0 {
		t.Errorf("%d connections left for Accept after Close", n)
	}
}
