package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// keptConn is one kept-alive HTTP/1.1 connection that a caller opens
// once and sends every request on, one after another, as xiaozhi's httpx
// client and an operator's scraper do. The hostile run's robots and its
// /health probe use one each instead of net/http's Transport, on purpose:
// the Transport silently gives up a kept-alive connection when its writer
// goroutine has not reported a request written within 50 ms of the
// response's end (maxWriteWaitBeforeConnReuse), which happens on a starved
// machine, and sends the next request on a new connection. During the
// abuse a new connection is a newcomer behind a thousand abusers at the
// connection limit, which may close it unserved after 10 s — documented
// behaviour (docs/configuration.md, BRIDGE_MAX_CONNS), not a failure to
// serve a caller. Turns then failed with EOF or a reset depending on how
// the client's goroutines were scheduled. On a keptConn the connection is
// never replaced behind the soak's back, so a turn that fails on it is
// the bridge's doing: a close, a reset or a bad answer on a connection it
// was serving.
type keptConn struct {
	host    string
	timeout time.Duration
	conn    net.Conn
	r       *bufio.Reader
}

// dialKept opens a kept-alive connection to host; timeout bounds each
// request, from its first byte out to its answer's last byte in (a bound
// against a hung bridge, far above a turn on a busy machine).
func dialKept(ctx context.Context, host string, timeout time.Duration) (*keptConn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &keptConn{host: host, timeout: timeout, conn: c, r: bufio.NewReader(c)}, nil
}

// errClosedByBridge is a response that ends the kept-alive connection
// ("Connection: close"): the bridge never sends one to these callers.
var errClosedByBridge = errors.New("the bridge answered with Connection: close")

// do sends one request and hands its response to read; the body is then
// read to its end, so the next request can follow on the connection. An
// error from the connection names it; after any error the connection is
// closed and must not be used again.
func (k *keptConn) do(method, path string, body io.Reader, read func(*http.Response) error) error {
	if k.conn == nil {
		return errors.New("kept-alive connection already failed")
	}
	req, err := http.NewRequest(method, "http://"+k.host+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := k.conn.SetDeadline(time.Now().Add(k.timeout)); err != nil {
		return k.fail(err)
	}
	if err := req.Write(k.conn); err != nil {
		return k.fail(err)
	}
	resp, err := http.ReadResponse(k.r, req)
	if err != nil {
		return k.fail(err)
	}
	rerr := read(resp)
	_, derr := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	switch {
	case derr != nil:
		return k.fail(derr)
	case resp.Close:
		return k.fail(errClosedByBridge)
	}
	return rerr
}

// fail closes the connection after err and says which connection it was.
func (k *keptConn) fail(err error) error {
	local := k.conn.LocalAddr()
	k.close()
	return fmt.Errorf("kept-alive connection %v: %w", local, err)
}

// broken reports whether the connection failed (or was closed).
func (k *keptConn) broken() bool { return k.conn == nil }

func (k *keptConn) close() {
	if k.conn != nil {
		_ = k.conn.Close()
		k.conn = nil
	}
}
