package vision

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// A device evicted from perception's table loses its cached descriptions
// and its long-poll waiters get their 404 at once.
func TestEvictedDeviceWaitersGet404(t *testing.T) {
	e := newEnv(t, nil)
	p := perception.New(perception.Config{MaxDevices: 2, Clock: e.clock, Consumers: perception.DefaultConsumers(), Logger: hclog.NewNullLogger()})
	p.UseSenses(e.s)
	p.Ingest(perception.Event{DeviceID: "old", Name: "face_detected"})
	e.upload(t, "/api/audio/explain", "old", "", []byte("RIFF"), "audio/wav")
	poll := e.poll(t, "old")
	waitWaiters(t, e.s, "old", 1)
	p.Ingest(perception.Event{DeviceID: "b", Name: "face_detected"})
	p.Ingest(perception.Event{DeviceID: "c", Name: "face_detected"}) // evicts "old"
	if got := recv(t, poll); got != [2]string{"404", `{"error":"no vision result in time"}`} {
		t.Errorf("evicted device's waiter got %v", got)
	}
	if _, audio := e.s.Fresh("old"); audio != "" {
		t.Errorf("evicted device's audio description kept: %q", audio)
	}
}

// The caches keep their own bound for devices perception never saw.
func TestCachesBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxDevices = 4 })
	for i := range 20 {
		if code, body := e.upload(t, "/api/vision/explain", fmt.Sprint("cam-", i), "", jpeg, "image/jpeg"); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	e.s.mu.Lock()
	n := len(e.s.images)
	_, newest := e.s.images["cam-19"]
	e.s.mu.Unlock()
	if n > 4 || !newest {
		t.Errorf("%d cached images (bound 4), newest kept %v", n, newest)
	}
}

// Past MaxWaiters a long-poll gets 503 with the reason; a bad device id
// gets 422.
func TestLongPollCapAndValidation(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxWaiters = 2 })
	a, b := e.poll(t, "w1"), e.poll(t, "w2")
	waitWaiters(t, e.s, "w1", 1)
	waitWaiters(t, e.s, "w2", 1)
	want := [2]string{"503", `{"detail":"too many vision long-polls waiting (limit 2); try again later"}`}
	if got := recv(t, e.poll(t, "w3")); got != want {
		t.Errorf("third poll %v", got)
	}
	e.s.Forget("w1")
	e.s.Forget("w2")
	recv(t, a)
	recv(t, b)
	if got := recv(t, e.poll(t, "bad%07id")); got[0] != "422" {
		t.Errorf("control character in the device id: %v", got)
	}
	if code, _ := e.upload(t, "/api/vision/explain", strings.Repeat("d", 129), "", jpeg, "image/jpeg"); code != 422 {
		t.Errorf("129-byte device-id header: %d", code)
	}
}
