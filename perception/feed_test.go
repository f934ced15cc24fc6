package perception

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// sseClient reads an SSE stream frame by frame on a background goroutine.
type sseClient struct {
	resp   *http.Response
	frames <-chan string // closed at the end of the stream
	cancel context.CancelFunc
}

func openFeed(t *testing.T, url string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/perception/feed", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &sseClient{resp: resp, frames: testkit.SSEFrames(ctx, resp.Body), cancel: cancel}
	t.Cleanup(func() {
		c.cancel()
		resp.Body.Close()
		for range c.frames { // until the reader is gone
		}
	})
	return c
}

// next returns the next frame (its lines, without the blank line), or ""
// at the end of the stream; it fails the test after 5 s.
func (c *sseClient) next(t *testing.T) string {
	t.Helper()
	f, ok := c.within(5 * time.Second)
	if !ok {
		t.Fatal("no SSE frame within 5 s")
	}
	return f
}

// within waits up to d for the next frame.
func (c *sseClient) within(d time.Duration) (string, bool) {
	select {
	case f := <-c.frames:
		return f, true
	case <-time.After(d):
		return "", false
	}
}

// waitSubscribers waits (≤ 5 s) until the bus has n subscribers.
func waitSubscribers(t *testing.T, b *Bus, n int) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%d subscribers", n), func() bool { return b.Subscribers() == n })
}

func TestFeed(t *testing.T) {
	e := newEnv(t, nil)
	consumers := e.s.bus.Subscribers()
	c := openFeed(t, e.url)
	if ct := c.resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" ||
		c.resp.Header.Get("Cache-Control") != "no-cache" || c.resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("headers %v", c.resp.Header)
	}
	waitSubscribers(t, e.s.bus, consumers+1)
	e.post(t, `{"device_id":"d1","ts":1763800000.5,"name":"sound_event","data":{"direction":"left","note":"é"}}`)
	if got := c.next(t); got != `data: {"name":"sound_event","data":{"direction":"left","note":"é"},"device_id":"d1","ts":1763800000.5}`+"\n" {
		t.Errorf("frame %q", got)
	}
	// Synthetic events reach the feed too.
	e.s.Ingest(ev("d1", "head_turn", 2, map[string]any{"yaw": 45}))
	if got := c.next(t); !strings.Contains(got, `"name":"head_turn"`) {
		t.Errorf("frame %q", got)
	}
	// Keepalive after 15 s of silence (the handler may still be resetting
	// its ticker after the last frame, so advance until it speaks).
	var keepalive string
	for i := 0; i < 50 && keepalive == ""; i++ {
		e.clock.Advance(15 * time.Second)
		keepalive, _ = c.within(100 * time.Millisecond)
	}
	if keepalive != ": keepalive\n" {
		t.Errorf("keepalive %q", keepalive)
	}
	// A client that leaves is unsubscribed.
	c.cancel()
	waitSubscribers(t, e.s.bus, consumers)
}

func TestFeedEvictsSlowClient(t *testing.T) {
	e := newEnv(t, nil)
	consumers := e.s.bus.Subscribers()
	slow := openFeed(t, e.url)
	fast := openFeed(t, e.url)
	waitSubscribers(t, e.s.bus, consumers+2)
	// The slow client reads nothing; the fast one keeps up. Ingest never
	// waits. Payloads are large so the slow client's socket buffers fill
	// and then its queue.
	var received atomic.Int64
	got := make(chan int64, 1)
	go func() {
		for f := fast.next(t); f != ""; f = fast.next(t) {
			if strings.Contains(f, `"name":"tick"`) && received.Add(1) == 5000 {
				break
			}
		}
		got <- received.Load()
	}()
	// Nearly 4 KiB of data per event, in values small enough that the
	// data cap keeps them whole.
	pad := map[string]any{}
	for k := range 14 {
		pad[fmt.Sprint("pad", k)] = strings.Repeat("x", 250)
	}
	start := time.Now()
	for i := range 5000 {
		for int64(i)-received.Load() > 64 { // pace to the fast reader only
			time.Sleep(50 * time.Microsecond)
		}
		e.s.Ingest(ev("d", "tick", float64(i), pad))
	}
	elapsed := time.Since(start)
	if n := testkit.Recv(t, 20*time.Second, got, "fast client stuck"); n != 5000 {
		t.Errorf("fast client got %d of 5000", n)
	}
	t.Logf("5000 events ingested in %v with a stalled feed client", elapsed)
	// The slow one was evicted: its socket buffers fill first, then its
	// queue. It gets one fell_behind event, then the end of the stream.
	var last string
	for f := slow.next(t); f != ""; f = slow.next(t) {
		last = f
	}
	if !strings.Contains(last, `"name":"fell_behind"`) {
		t.Errorf("slow client's last frame %q", last)
	}
	if testutil.ToFloat64(e.evictions) != 1 {
		t.Errorf("evictions %v", testutil.ToFloat64(e.evictions))
	}
	waitSubscribers(t, e.s.bus, consumers+1)
}

func TestFeedEndsWhenServerStops(t *testing.T) {
	stopping := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.Stopping = stopping })
	base := e.s.bus.Subscribers()
	c := openFeed(t, e.url)
	waitSubscribers(t, e.s.bus, base+1)
	close(stopping)
	if f := c.next(t); f != "" {
		t.Errorf("frame after stop %q", f)
	}
	waitSubscribers(t, e.s.bus, base)
}

// TestStuckConsumerCannotDelayOthers: a consumer that never reads loses
// events (counted); another subscriber still gets every one, in order.
func TestStuckConsumerCannotDelayOthers(t *testing.T) {
	b := NewBus(BusConfig{Dropped: newDropped()})
	stuck := b.Consume("stuck", 10)
	live := b.Consume("live", 100)
	done := make(chan []float64)
	go func() {
		var seen []float64
		for e := range live.C {
			seen = append(seen, e.TS)
			if len(seen) == 10000 {
				break
			}
		}
		done <- seen
	}()
	for i := range 10000 {
		for len(live.C) == cap(live.C) { // a consumer that keeps up: never let it overflow
			time.Sleep(10 * time.Microsecond)
		}
		b.Publish(Event{Name: "x", TS: float64(i)})
	}
	seen := testkit.Recv(t, 10*time.Second, done, "live subscriber stalled")
	for i, ts := range seen {
		if ts != float64(i) {
			t.Fatalf("event %d out of order: %v", i, ts)
		}
	}
	if got := testutil.ToFloat64(b.dropped.WithLabelValues("stuck")); got != 10000-10 {
		t.Errorf("stuck consumer dropped %v, want %d", got, 10000-10)
	}
	if len(stuck.C) != 10 {
		t.Errorf("stuck queue holds %d", len(stuck.C))
	}
	stuck.Close()
	live.Close()
	stuck.Close() // idempotent
	if b.Subscribers() != 0 {
		t.Errorf("%d subscribers left", b.Subscribers())
	}
	<-stuck.Done()
	if stuck.Evicted() {
		t.Error("a closed consumer is not evicted")
	}
}

// TestSubscribersComeAndGo: concurrent subscribe/unsubscribe while
// publishing leaves nothing behind (goleak checks goroutines at exit).
func TestSubscribersComeAndGo(t *testing.T) {
	b := NewBus(BusConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for i := 0; ctx.Err() == nil; i++ {
			b.Publish(Event{DeviceID: "d", Name: "x", TS: float64(i)})
		}
	}()
	errs := make(chan string, 8)
	for w := range 8 {
		go func() {
			for i := range 200 {
				var s *Subscription
				if (w+i)%2 == 0 {
					s = b.Watch(4)
				} else {
					s = b.Consume("c", 4)
				}
				select {
				case <-s.C:
				case <-s.Done():
				case <-time.After(5 * time.Second):
					errs <- "no event within 5 s"
					return
				}
				s.Close()
			}
			errs <- ""
		}()
	}
	for range 8 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	cancel()
	<-pubDone
	if n := b.Subscribers(); n != 0 {
		t.Errorf("%d subscribers left", n)
	}
}

func newDropped() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "d"}, []string{"consumer"})
}

// RecentJSON is every ring's events as feed frames, newest first.
func TestRecentJSON(t *testing.T) {
	b := NewBus(BusConfig{})
	if got := string(b.RecentJSON()); got != "[]" {
		t.Errorf("empty bus: %s", got)
	}
	b.Publish(Event{DeviceID: "a", Name: "face_detected", TS: 1, Data: DataOf(map[string]any{})})
	b.Publish(Event{DeviceID: "b", Name: "sound_event", TS: 3, Data: DataOf(map[string]any{"direction": "left"})})
	b.Publish(Event{DeviceID: "a", Name: "face_lost", TS: 2, Data: DataOf(map[string]any{})})
	b.Publish(Event{DeviceID: "unknown", Name: "x", TS: 9}) // no ring
	var got []struct {
		DeviceID string  `json:"device_id"`
		Name     string  `json:"name"`
		TS       float64 `json:"ts"`
	}
	if err := json.Unmarshal(b.RecentJSON(), &got); err != nil {
		t.Fatal(err)
	}
	want := "b sound_event 3|a face_lost 2|a face_detected 1"
	var parts []string
	for _, e := range got {
		parts = append(parts, fmt.Sprintf("%s %s %g", e.DeviceID, e.Name, e.TS))
	}
	if strings.Join(parts, "|") != want {
		t.Errorf("got %v, want %s", parts, want)
	}
}
