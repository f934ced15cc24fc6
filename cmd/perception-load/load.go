package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const eventPath = "/api/perception/event"

// loadSpec is one load phase.
type loadSpec struct {
	base     string // http://host:port
	pool     *eventPool
	n        int     // events to post
	conns    int     // workers, one keep-alive connection each
	rate     float64 // events/s over all workers, open loop; 0: as fast as answered
	raw      bool    // raw HTTP/1.1 on the socket instead of net/http
	pipeline int     // raw only: requests in flight per connection
}

// loadResult is what a phase measured.
type loadResult struct {
	sent    int // requests written (events [0, sent) of the pool order)
	ok      int // answered 204
	status  int // answered with another status
	failed  int // no answer: transport error
	elapsed time.Duration
	// lat is the latency of every answered request, sorted. With -rate it
	// counts from the request's scheduled start, so a bridge that falls
	// behind the schedule shows it (no coordinated omission).
	lat []time.Duration
	// statuses counts the answers other than 204 by status code.
	statuses map[int]int
}

func (r loadResult) errors() int { return r.status + r.failed }

// percentile is the q-quantile (0 ≤ q ≤ 1) of the sorted latencies,
// nearest rank.
func (r loadResult) percentile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(q*float64(len(r.lat))+0.5) - 1
	return r.lat[min(max(i, 0), len(r.lat)-1)]
}

// runLoad posts spec.n events and waits for every answer (or ctx).
func runLoad(ctx context.Context, spec loadSpec) (loadResult, error) {
	if spec.n <= 0 {
		return loadResult{}, nil
	}
	u, err := url.Parse(spec.base)
	if err != nil || u.Host == "" || u.Scheme != "http" {
		return loadResult{}, fmt.Errorf("bad bridge URL %q (want http://host:port)", spec.base)
	}
	spec.conns = max(spec.conns, 1)
	spec.pipeline = max(spec.pipeline, 1)
	if spec.pipeline > 1 {
		spec.raw = true
	}
	if spec.pipeline > 1 && spec.rate > 0 {
		return loadResult{}, errors.New("-rate needs -pipeline 1")
	}

	// One slot per event: the worker that claims event i writes lat[i], so
	// the slice needs no lock and is allocated once, before the clock runs.
	lat := make([]time.Duration, spec.n)
	for i := range lat {
		lat[i] = -1 // not answered
	}
	ld := &loader{spec: spec, lat: lat, start: time.Now(), statuses: map[int]int{}}
	var wg sync.WaitGroup
	errc := make(chan error, spec.conns)
	var client *http.Client
	if !spec.raw {
		client = newLoadClient(spec.conns)
		defer client.CloseIdleConnections()
	}
	ld.start = time.Now()
	for range spec.conns {
		wg.Go(func() {
			var err error
			if spec.raw {
				err = ld.rawWorker(ctx, u.Host)
			} else {
				err = ld.httpWorker(ctx, client, spec.base+eventPath)
			}
			if err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(ld.start)
	close(errc)

	res := loadResult{sent: int(min(ld.next.Load(), int64(spec.n))), elapsed: elapsed,
		ok: int(ld.ok.Load()), status: int(ld.bad.Load()), statuses: ld.statuses}
	res.lat = slices.DeleteFunc(lat[:res.sent], func(d time.Duration) bool { return d < 0 })
	slices.Sort(res.lat)
	res.failed = res.sent - res.ok - res.status
	if err := <-errc; err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// loader is the state the workers of one phase share.
type loader struct {
	spec  loadSpec
	lat   []time.Duration
	start time.Time
	next  atomic.Int64 // next event index to claim
	ok    atomic.Int64
	bad   atomic.Int64

	mu       sync.Mutex
	statuses map[int]int
}

// claim returns the next event index and the time it counts from (its
// scheduled start with a rate, else now), or false when all are claimed.
func (ld *loader) claim(ctx context.Context) (int, time.Time, bool) {
	i := ld.next.Add(1) - 1
	if i >= int64(ld.spec.n) || ctx.Err() != nil {
		return 0, time.Time{}, false
	}
	if ld.spec.rate <= 0 {
		return int(i), time.Now(), true
	}
	due := ld.start.Add(time.Duration(float64(i) * float64(time.Second) / ld.spec.rate))
	if d := time.Until(due); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	return int(i), due, true
}

// done records event i's answer.
func (ld *loader) done(i int, from time.Time, code int) {
	ld.lat[i] = time.Since(from)
	if code == http.StatusNoContent {
		ld.ok.Add(1)
		return
	}
	ld.bad.Add(1)
	ld.mu.Lock()
	ld.statuses[code]++
	ld.mu.Unlock()
}

// newLoadClient is a net/http client keeping one idle keep-alive
// connection per worker.
func newLoadClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     8 << 10,
		ReadBufferSize:      8 << 10,
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

var jsonHeader = []string{"application/json"}

func (ld *loader) httpWorker(ctx context.Context, client *http.Client, target string) error {
	bodies := ld.spec.pool.bodies
	for {
		i, from, ok := ld.claim(ctx)
		if !ok {
			return nil
		}
		body := bodies[i%len(bodies)]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header["Content-Type"] = jsonHeader
		resp, err := client.Do(req)
		if err != nil {
			continue // counted as failed: lat[i] stays -1
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ld.done(i, from, resp.StatusCode)
	}
}

// rawWorker speaks HTTP/1.1 on its own connection: pre-encoded requests,
// up to spec.pipeline in flight, answers parsed in order. A broken
// connection fails the requests in flight on it and is redialled.
func (ld *loader) rawWorker(ctx context.Context, host string) error {
	reqs := ld.rawRequests(host)
	depth := ld.spec.pipeline
	type inflight struct {
		i    int
		from time.Time
	}
	window := make([]inflight, 0, depth)
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	dials := 0
	for {
		if conn == nil {
			c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", host)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if dials == 0 {
					return fmt.Errorf("dial %s: %w", host, err)
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			dials++
			conn, br = c, bufio.NewReaderSize(c, 16<<10)
			stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
			defer stop()
		}
		// Fill the window.
		more := true
		for len(window) < depth {
			i, from, ok := ld.claim(ctx)
			if !ok {
				more = false
				break
			}
			window = append(window, inflight{i, from})
			if _, err := conn.Write(reqs[i%len(reqs)]); err != nil {
				conn.Close()
				conn, window = nil, window[:0] // the window's requests count as failed
				break
			}
		}
		if conn == nil {
			continue
		}
		if len(window) == 0 && !more {
			return nil
		}
		// Read the oldest answer.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		code, keep, err := readAnswer(br)
		if err != nil {
			conn.Close()
			conn, window = nil, window[:0]
			continue
		}
		ld.done(window[0].i, window[0].from, code)
		window = append(window[:0], window[1:]...)
		if !keep {
			// The server closes: everything still in flight is lost.
			conn.Close()
			conn, window = nil, window[:0]
		}
	}
}

func (ld *loader) rawRequests(host string) [][]byte {
	bodies := ld.spec.pool.bodies
	out := make([][]byte, len(bodies))
	for j, b := range bodies {
		out[j] = append(fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			eventPath, host, len(b)), b...)
	}
	return out
}

// readAnswer reads one HTTP/1.1 response and discards its body; keep is
// false when the server will close the connection.
func readAnswer(br *bufio.Reader) (code int, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 204 No Content\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	keep = line[7] == '1'
	length, chunked := int64(0), false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqualFold(k, "Content-Length"):
			if length, err = strconv.ParseInt(string(v), 10, 64); err != nil || length < 0 {
				return 0, false, fmt.Errorf("bad Content-Length %q", v)
			}
		case asciiEqualFold(k, "Transfer-Encoding"):
			chunked = asciiEqualFold(v, "chunked")
		case asciiEqualFold(k, "Connection"):
			if asciiEqualFold(v, "close") {
				keep = false
			} else if asciiEqualFold(v, "keep-alive") {
				keep = true
			}
		}
	}
	if code == http.StatusNoContent || code == http.StatusNotModified || code/100 == 1 {
		return code, keep, nil
	}
	if chunked {
		return code, keep, discardChunked(br)
	}
	_, err = br.Discard(int(length))
	return code, keep, err
}

func discardChunked(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 { // trailers until the blank line
			for {
				t, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
