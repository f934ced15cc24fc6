package vision

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// A device evicted from perception's table loses its cached descriptions
// and its long-poll waiters get their 404 at once.
func TestEvictedDeviceWaitersGet404(t *testing.T) {
	e := newEnvWith(t, nil, func(c *perception.Config) { c.MaxDevices = 2 })
	p := e.p
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
	n := e.s.images.Len()
	_, newest := e.s.images.Get("cam-19")
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

// A flood of devices through perception, with vision as its senses,
// leaves vision nothing of the evicted devices and answers their
// long-polls; audio uploads naming devices perception never saw keep
// both vision's cache and perception's recent rings at the bound.
func TestDeviceFloodAcrossPerceptionAndVision(t *testing.T) {
	const limit = 16
	e := newEnvWith(t, func(c *Config) { c.MaxDevices = limit }, func(c *perception.Config) { c.MaxDevices = limit })
	p := e.p

	var polls []<-chan [2]string
	for i := range 4 {
		cam := fmt.Sprint("cam-", i)
		p.Ingest(perception.Event{DeviceID: cam, Name: "face_detected"})
		if code, body := e.upload(t, "/api/audio/explain", cam, "", []byte("RIFF"), "audio/wav"); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		polls = append(polls, e.poll(t, cam))
		waitWaiters(t, e.s, cam, 1)
	}
	for i := range 5000 {
		p.Ingest(perception.Event{DeviceID: fmt.Sprint("flood-", i), Name: "sound_event"})
	}
	for i, poll := range polls {
		if got := recv(t, poll); got[0] != "404" {
			t.Errorf("cam-%d's long-poll after its eviction: %v", i, got)
		}
	}
	sizes := e.s.Sizes()
	sounds, waiting := sizes.Sounds, sizes.Waiters
	if sounds != 0 || waiting != 0 {
		t.Errorf("after the flood vision keeps %d audio entries and %d waiters", sounds, waiting)
	}
	if n := p.States().Len(); n != limit {
		t.Errorf("perception keeps %d devices", n)
	}

	for i := range 3 * limit {
		if code, body := e.upload(t, "/api/audio/explain", fmt.Sprint("ear-", i), "", []byte("RIFF"), "audio/wav"); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	e.s.mu.Lock()
	sounds = e.s.sounds.Len()
	e.s.mu.Unlock()
	if sounds != limit {
		t.Errorf("%d audio entries for devices perception never saw, want %d", sounds, limit)
	}
	if n := p.Bus().Rings(); n != limit {
		t.Errorf("%d recent rings, want %d", n, limit)
	}
	if got := p.Bus().Recent(fmt.Sprint("ear-", 3*limit-1), 0); len(got) != 1 || got[0].Name != "audio_captioned" {
		t.Errorf("newest caption's ring: %v", got)
	}
}

// The dashboard's photos keep within their byte budget, the oldest going
// first; a photo larger than the budget is not kept, and a forgotten
// device loses its photo.
func TestPhotosKeepTheirBudget(t *testing.T) {
	clk := clockwork.NewFakeClock()
	c := NewCache(CacheConfig{MaxDevices: 8, Clock: clk, PhotoBytes: 100})
	for i, d := range []string{"a", "b", "c"} {
		c.keepPhoto(d, Photo{JPEG: make([]byte, 40), Description: d, At: clk.Now().Add(time.Duration(i) * time.Second)})
	}
	if _, _, ok := c.LatestPhoto("a"); ok {
		t.Error("the oldest photo was kept past the budget")
	}
	if d, p, ok := c.LatestPhoto(""); !ok || d != "c" || p.Description != "c" {
		t.Errorf("newest photo %q %+v %v", d, p, ok)
	}
	c.keepPhoto("big", Photo{JPEG: make([]byte, 101)})
	if _, _, ok := c.LatestPhoto("big"); ok {
		t.Error("a photo over the whole budget was kept")
	}
	c.Forget("c")
	if list := c.Photos(); len(list) != 1 || list[0].Device != "b" || list[0].Bytes != 40 {
		t.Errorf("photos after forgetting c: %+v", list)
	}
	c.mu.Lock()
	n := c.photoN
	c.mu.Unlock()
	if n != 40 {
		t.Errorf("%d bytes counted, want 40", n)
	}
}

// A described photo is kept with its description for the dashboard.
func TestExplainKeepsThePhoto(t *testing.T) {
	e := newEnv(t, nil)
	e.model.Answer("A red ball on a wooden floor.")
	if code, body := e.upload(t, "/api/vision/explain", "dotty-1", "", jpeg, "image/jpeg"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	d, p, ok := e.s.LatestPhoto("")
	if !ok || d != "dotty-1" || string(p.JPEG) != string(jpeg) || p.Description != "A red ball on a wooden floor." {
		t.Errorf("kept %q %q %v", d, p.Description, ok)
	}
}
