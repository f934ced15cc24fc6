package perception

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// forgetRecorder is a Senses that records what it was told to forget.
type forgetRecorder struct {
	mu   sync.Mutex
	gone map[string]bool
}

func (f *forgetRecorder) Fresh(string) (string, string) { return "", "" }
func (f *forgetRecorder) Forget(d string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[d] = true
}

// A flood of new device ids keeps the table at its bound: the newest are
// kept, the evicted ones lose their ring, abort timer and vision entries,
// the counter counts them and the heap does not grow with the flood.
func TestDeviceFloodIsBounded(t *testing.T) {
	const limit, flood = 16, 5000
	evicted := prometheus.NewCounter(prometheus.CounterOpts{Name: "evicted"})
	senses := &forgetRecorder{gone: map[string]bool{}}
	e := newEnv(t, func(c *Config) { c.MaxDevices, c.Metrics.DevicesEvicted, c.Senses = limit, evicted, senses })

	// The first device has a pending face-lost abort when the flood starts.
	e.s.states.Update("first", func(d *DeviceState) { d.LastFaceGreetT = ptr(at(0)) })
	e.fire(FaceLostAborter, ev("first", "face_lost", at(1), nil))
	e.c.abortMu.Lock()
	pending := e.c.aborts["first"] != nil
	e.c.abortMu.Unlock()
	if !pending {
		t.Fatal("no abort pending before the flood")
	}

	for i := range 200 { // warm up to the bound
		if code, body := e.post(t, fmt.Sprintf(`{"device_id":"warm-%d","name":"sound_event","data":{"direction":"left"}}`, i)); code != 204 {
			t.Fatalf("%d %s", code, body)
		}
	}
	before := heap()
	for i := range flood {
		e.s.Ingest(ev(fmt.Sprintf("flood-%d", i), "sound_event", at(2), map[string]any{"direction": "left", "pad": strings.Repeat("x", 200)}))
	}
	after := heap()
	if n := e.s.states.Len(); n != limit {
		t.Errorf("%d devices kept, want %d", n, limit)
	}
	if _, ok := e.s.states.Get(fmt.Sprintf("flood-%d", flood-1)); !ok {
		t.Error("the newest device was evicted")
	}
	if _, ok := e.s.states.Get("first"); ok {
		t.Error("the oldest device was kept")
	}
	e.s.bus.mu.Lock()
	rings := e.s.bus.recent.Len()
	e.s.bus.mu.Unlock()
	if rings > limit {
		t.Errorf("%d recent rings kept, want at most %d", rings, limit)
	}
	e.c.abortMu.Lock()
	pending = e.c.aborts["first"] != nil
	e.c.abortMu.Unlock()
	if pending {
		t.Error("the evicted device's abort timer is still pending")
	}
	senses.mu.Lock()
	forgotFirst := senses.gone["first"]
	senses.mu.Unlock()
	if !forgotFirst {
		t.Error("vision was not told to forget the evicted device")
	}
	if got, want := testutil.ToFloat64(evicted), float64(200+flood+1-limit); got != want {
		t.Errorf("evictions counted %v, want %v", got, want)
	}
	// 5 000 devices with 200-byte data kept would be well over 2 MiB.
	if after > before+512<<10 {
		t.Errorf("heap grew from %d to %d bytes over the flood", before, after)
	}
	if body := e.get(t, "/api/perception/state"); strings.Count(body, `"sensor_stale"`) != limit {
		t.Errorf("state lists %d devices, want %d", strings.Count(body, `"sensor_stale"`), limit)
	}
}

// Bad device ids are refused with a 422 naming the rule; nothing stored
// changes. An absent device_id is still "unknown".
func TestDeviceIDValidation(t *testing.T) {
	e := newEnv(t, nil)
	for _, tt := range []struct{ id, msg string }{
		{`""`, "device_id must not be blank"},
		{`"   "`, "device_id must not be blank"},
		{`"` + strings.Repeat("a", 129) + `"`, "device_id must be at most 128 bytes"},
		{`"bad\u0007id"`, "device_id must not contain control characters"},
		{`"line\nbreak"`, "device_id must not contain control characters"},
	} {
		code, body := e.post(t, `{"device_id":`+tt.id+`,"name":"face_detected"}`)
		want := `{"detail":[{"type":"value_error","loc":["body","device_id"],"msg":"Value error, ` + tt.msg + `","input":` + tt.id + `}]}`
		if code != 422 || body != want {
			t.Errorf("device_id %s: %d %s\nwant 422 %s", tt.id, code, body, want)
		}
	}
	if n := e.s.states.Len(); n != 0 {
		t.Errorf("%d devices stored after refused events", n)
	}
	if code, _ := e.post(t, `{"device_id":"`+strings.Repeat("a", 128)+`","name":"face_detected"}`); code != 204 {
		t.Errorf("128-byte id: %d", code)
	}
	if code, _ := e.post(t, `{"name":"face_detected"}`); code != 204 {
		t.Errorf("absent id: %d", code)
	}
	if _, ok := e.s.states.Get("unknown"); !ok {
		t.Error("absent device_id is not stored as unknown")
	}
	if code, _ := testkit.Get(t, e.url+"/api/perception/recent?device_id=%07"); code != 422 {
		t.Errorf("recent with a control character: %d", code)
	}
}

// Event data over 4 KiB is summarised in state, the ring and the feed
// frame; the body cap is 64 KiB.
func TestLargeDataIsSummarised(t *testing.T) {
	e := newEnv(t, nil)
	base := e.s.bus.Subscribers()
	feed := openFeed(t, e.url)
	waitSubscribers(t, e.s.bus, base+1)
	big := strings.Repeat("y", 40<<10)
	code, body := e.post(t, `{"device_id":"d1","name":"sound_event","data":{"direction":"left","blob":"`+big+`","nested":{"list":[`+strings.Repeat(`1,`, 3000)+`1]}}}`)
	if code != 204 {
		t.Fatalf("%d %s", code, body)
	}
	frame := feed.next(t)
	if len(frame) > MaxData+512 || !strings.Contains(frame, `"direction":"left"`) || !strings.Contains(frame, `"truncated":true`) || !strings.Contains(frame, `…`) {
		t.Errorf("feed frame of %d bytes: %.300s", len(frame), frame)
	}
	recent := e.get(t, "/api/perception/recent?device_id=d1")
	if len(recent) > MaxData+512 || !strings.Contains(recent, `"direction":"left"`) {
		t.Errorf("recent of %d bytes", len(recent))
	}
	st, _ := e.s.states.Get("d1")
	if st.LastSoundDir != "left" {
		t.Errorf("direction lost: %v", st.LastSoundDir)
	}
	code, body = e.post(t, `{"device_id":"d1","name":"sound_event","data":{"blob":"`+strings.Repeat("z", 1<<20)+`"}}`)
	if code != 413 || body != `{"detail":"request body over 65536 bytes"}` {
		t.Errorf("1 MiB event: %d %s", code, body)
	}
	// Small data is kept exactly as sent.
	if got := capData(map[string]any{"a": "b"}); len(got) != 1 || got["a"] != "b" {
		t.Errorf("small data changed: %v", got)
	}
}

// The feed takes at most MaxFeedClients; the next gets 503 with the reason
// and a freed slot is reusable at once.
func TestFeedClientCap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxFeedClients = 3 })
	base := e.s.bus.Subscribers()
	var clients []*sseClient
	for range 3 {
		clients = append(clients, openFeed(t, e.url))
	}
	waitSubscribers(t, e.s.bus, base+3)
	resp, err := http.Get(e.url + "/api/perception/feed")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 200)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	if want := `{"detail":"too many perception feed clients (limit 3); try again later"}`; resp.StatusCode != 503 || string(b[:n]) != want {
		t.Errorf("fourth client: %d %s", resp.StatusCode, b[:n])
	}
	clients[0].cancel()
	// The slot is freed when the handler returns, which the test sees as
	// the slot count dropping; then a new client is let in.
	testkit.WaitFor(t, 5*time.Second, "the closed client's slot", func() bool { return len(e.s.feedSlots) == 2 })
	if c := openFeed(t, e.url); c.resp.StatusCode != 200 {
		t.Errorf("client after one left: %d", c.resp.StatusCode)
	}
}

func TestNameGreetsBounded(t *testing.T) {
	var d DeviceState
	for i := range 100 {
		d.NoteNameGreet(fmt.Sprint("person-", i), float64(i))
	}
	if len(d.LastNameGreetT) != MaxNameGreets {
		t.Errorf("%d identities kept, want %d", len(d.LastNameGreetT), MaxNameGreets)
	}
	if _, ok := d.LastNameGreetT["person-99"]; !ok {
		t.Error("newest identity dropped")
	}
	if _, ok := d.LastNameGreetT["person-0"]; ok {
		t.Error("oldest identity kept")
	}
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Broadcasts (audio captions) can name devices the table never saw; the
// recent rings keep the same bound, the newest written kept.
func TestBroadcastRingsBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxDevices = 16 })
	for i := range 5000 {
		e.s.Broadcast(ev(fmt.Sprint("cam-", i), "audio_captioned", at(0), map[string]any{"preview": "a dog barks"}))
	}
	if n := e.s.bus.Rings(); n != 16 {
		t.Errorf("%d recent rings kept, want 16", n)
	}
	if got := e.s.bus.Recent("cam-4999", 0); len(got) != 1 {
		t.Errorf("newest device's ring holds %d events", len(got))
	}
	if got := e.s.bus.Recent("cam-0", 0); len(got) != 0 {
		t.Errorf("oldest device's ring kept %d events", len(got))
	}
	if n := e.s.states.Len(); n != 0 {
		t.Errorf("broadcasts created %d devices", n)
	}
}

// A face_lost handled after its device was evicted arms no abort: timers
// are kept only for devices in the table.
func TestNoAbortForEvictedDevice(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxDevices = 2 })
	e.s.states.Update("gone", func(d *DeviceState) { d.LastFaceGreetT = ptr(at(0)) })
	lost := ev("gone", "face_lost", at(1), nil)
	e.s.Ingest(lost)
	e.s.Ingest(ev("b", "sound_event", at(1), nil))
	e.s.Ingest(ev("c", "sound_event", at(1), nil)) // evicts "gone" before the aborter gets to it
	e.c.handler(FaceLostAborter)(context.Background(), lost)
	// A ts near the epoch passes the window check on a missing greeting
	// time, so a never-seen device must be refused for not being kept.
	e.c.handler(FaceLostAborter)(context.Background(), ev("never", "face_lost", 1, nil))
	e.c.abortMu.Lock()
	n := len(e.c.aborts)
	e.c.abortMu.Unlock()
	if n != 0 {
		t.Errorf("%d abort timers armed for devices not in the table", n)
	}
	e.clock.Advance(time.Minute)
	e.c.inflight.Wait()
	wantCalls(t, e)
}

// Event data of 1 MiB (a synthetic event, which no body cap limits) is
// retained as about 4 KiB: in the state, the recent ring and the feed
// frame; twenty such devices do not grow the heap by their size.
func TestMiBDataRetainedSmall(t *testing.T) {
	e := newEnv(t, nil)
	base := e.s.bus.Subscribers()
	feed := openFeed(t, e.url)
	waitSubscribers(t, e.s.bus, base+1)
	bigEvent := func(device string) Event {
		return ev(device, "sound_event", at(0), map[string]any{
			"direction": strings.Repeat("l", 1<<20),
			"energy":    0.5,
			"nested":    map[string]any{"list": make([]any, 1<<17)},
		})
	}
	e.s.Ingest(bigEvent("d1"))
	frame := feed.next(t)
	if len(frame) > MaxData+256 || !strings.Contains(frame, `"truncated":true`) || !strings.Contains(frame, `"energy":0.5`) {
		t.Errorf("feed frame of %d bytes: %.300s", len(frame), frame)
	}
	if recent := e.get(t, "/api/perception/recent?device_id=d1"); len(recent) > MaxData+256 {
		t.Errorf("recent of %d bytes", len(recent))
	}
	st, _ := e.s.states.Get("d1")
	if dir, _ := st.LastSoundDir.(string); len(dir) > 256 || !strings.HasSuffix(dir, "…") {
		t.Errorf("last_sound_dir kept %d bytes", len(dir))
	}
	if body := e.get(t, "/api/perception/state?device_id=d1"); len(body) > 2048 {
		t.Errorf("state of %d bytes", len(body))
	}

	before := heap()
	for i := range 20 {
		e.s.Ingest(bigEvent(fmt.Sprint("dev-", i)))
		feed.next(t)
	}
	// Kept whole, twenty events would hold 60 MiB (a 1 MiB string and a
	// 2 MiB list each); the margin allows for the last one still being
	// collected and the race detector's own allocations.
	if after := heap(); after > before+4<<20 {
		t.Errorf("heap grew from %d to %d bytes over twenty 1 MiB events", before, after)
	}
}

// Evictions are logged at most once a minute, with how many there were
// since the last line.
func TestEvictionLogRateLimited(t *testing.T) {
	var logs testkit.LogBuffer
	e := newEnv(t, func(c *Config) {
		c.MaxDevices = 2
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	})
	for i := range 10 { // 8 evictions: the first is logged at once
		e.s.Ingest(ev(fmt.Sprint("d", i), "sound_event", at(0), nil))
	}
	e.clock.Advance(61 * time.Second)
	e.s.Ingest(ev("late", "sound_event", at(61), nil)) // the 7 since, plus this one
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "evicted=1 ") || !strings.Contains(lines[1], "evicted=8 ") {
		t.Errorf("eviction log lines:\n%s", logs.String())
	}
}
