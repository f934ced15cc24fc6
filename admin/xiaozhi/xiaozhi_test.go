package xiaozhi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
)

func newClient(t *testing.T, token string) (*Client, *xiaozhitest.Server, *bytes.Buffer) {
	t.Helper()
	fake := xiaozhitest.New(t)
	host, port := fake.HostPort()
	var logs bytes.Buffer
	return New(Config{Host: host, Port: port, Token: token, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})}), fake, &logs
}

func TestRoutesAndBodies(t *testing.T) {
	c, fake, logs := newClient(t, "s3cret")
	ctx := context.Background()
	steps := []struct {
		call func() error
		path string
		body map[string]any
	}{
		{func() error { return c.Abort(ctx, "d1") }, "/xiaozhi/admin/abort", map[string]any{"device_id": "d1"}},
		{func() error { return c.InjectText(ctx, "", "Hi!") }, "/xiaozhi/admin/inject-text", map[string]any{"text": "Hi!", "device_id": ""}},
		{func() error { return c.Say(ctx, "d1", "Oh, it's Alex!") }, "/xiaozhi/admin/say", map[string]any{"text": "Oh, it's Alex!", "device_id": "d1"}},
		{func() error { return c.SetHeadAngles(ctx, "d1", -30, 5, 250) }, "/xiaozhi/admin/set-head-angles", map[string]any{"device_id": "d1", "yaw": -30.0, "pitch": 5.0, "speed": 250.0}},
		{func() error { return c.SetState(ctx, "", "story_time") }, "/xiaozhi/admin/set-state", map[string]any{"device_id": "", "state": "story_time"}},
		{func() error { return c.SetToggle(ctx, "", "kid_mode", true) }, "/xiaozhi/admin/set-toggle", map[string]any{"device_id": "", "name": "kid_mode", "enabled": true}},
		{func() error { return c.SetFaceIdentified(ctx, "d1") }, "/xiaozhi/admin/set-face-identified", map[string]any{"device_id": "d1"}},
		{func() error { return c.SetTier1SlimModel(ctx, "qwen", "", "") }, "/xiaozhi/admin/set-tier1slim-model", map[string]any{"model": "qwen"}},
		{func() error { return c.SetTier1SlimModel(ctx, "big", "https://x/v1", "k") }, "/xiaozhi/admin/set-tier1slim-model", map[string]any{"model": "big", "url": "https://x/v1", "api_key": "k"}},
		{func() error { _, err := c.PlayAsset(ctx, "", "/songs/a.opus"); return err }, "/xiaozhi/admin/play-asset", map[string]any{"asset": "/songs/a.opus"}},
		{func() error { _, err := c.PlayAsset(ctx, "d1", "/purr.wav"); return err }, "/xiaozhi/admin/play-asset", map[string]any{"asset": "/purr.wav", "device_id": "d1"}},
		{func() error { return c.TakePhoto(ctx, "d1", "__ROOM_VIEW_V1__") }, "/xiaozhi/admin/take-photo", map[string]any{"device_id": "d1", "question": "__ROOM_VIEW_V1__"}},
		{func() error { return c.CaptureAudio(ctx, "d1", 3*time.Second) }, "/xiaozhi/admin/capture-audio", map[string]any{"device_id": "d1", "duration_ms": 3000.0}},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Errorf("%s: %v", s.path, err)
		}
	}
	calls := fake.Calls()
	if len(calls) != len(steps) {
		t.Fatalf("%d calls, want %d", len(calls), len(steps))
	}
	for i, s := range steps {
		if calls[i].Method != http.MethodPost || calls[i].Path != s.path || calls[i].Token != "s3cret" {
			t.Errorf("call %d: %s %s token %q", i, calls[i].Method, calls[i].Path, calls[i].Token)
		}
		if d := cmp.Diff(calls[i].Body, s.body); d != "" {
			t.Errorf("%s body (-got +want):\n%s", s.path, d)
		}
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Error("the admin token appeared in the logs")
	}
}

func TestGetRoutes(t *testing.T) {
	c, fake, _ := newClient(t, "")
	fake.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"base":"/s","files":["a.opus",7,"b.mp3",null]}`})
	fake.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 200, Body: `{"devices":["aa:bb","cc:dd"]}`})
	songs, err := c.Songs(context.Background())
	if err != nil || !cmp.Equal(songs, []string{"a.opus", "b.mp3"}) {
		t.Errorf("songs %q %v", songs, err)
	}
	devs, err := c.Devices(context.Background())
	if err != nil || !cmp.Equal(devs, []string{"aa:bb", "cc:dd"}) {
		t.Errorf("devices %q %v", devs, err)
	}
	for _, call := range fake.Calls() {
		if call.Method != http.MethodGet || call.Token != "" {
			t.Errorf("%+v", call)
		}
	}
}

func TestStatuses(t *testing.T) {
	c, fake, logs := newClient(t, "")
	ctx := context.Background()
	fake.Set("/xiaozhi/admin/say", xiaozhitest.Reply{Status: 201, Body: `{}`})
	if err := c.Say(ctx, "", "x"); err != nil {
		t.Errorf("201 should succeed: %v", err)
	}
	fake.Set("/xiaozhi/admin/abort", xiaozhitest.Reply{Status: 503, Body: `{"error":"no device connected","known":[]}`})
	if err := c.Abort(ctx, "nope"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("503 no device: %v", err)
	}
	fake.Set("/xiaozhi/admin/set-state", xiaozhitest.Reply{Status: 400, Body: `{"error":"unknown state: 'x'"}`})
	var se *StatusError
	if err := c.SetState(ctx, "", "x"); !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Body, "unknown state") {
		t.Errorf("400: %v", err)
	}
	fake.Set("/xiaozhi/admin/take-photo", xiaozhitest.Reply{Status: 404, Body: "404: Not Found"})
	for i := 0; i < 3; i++ {
		if err := c.TakePhoto(ctx, "", "q"); !errors.Is(err, ErrRouteAbsent) {
			t.Errorf("404 take-photo: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "does not have this admin route"); n != 1 {
		t.Errorf("absent route logged %d times, want once", n)
	}
	fake.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 404, Body: `{"error":"asset not found: /x"}`})
	if _, err := c.PlayAsset(ctx, "", "/x"); !errors.As(err, &se) || se.Status != 404 {
		t.Errorf("play-asset 404 is a plain status error: %v", err)
	}
}

func TestTimeouts(t *testing.T) {
	c, fake, _ := newClient(t, "")
	fake.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":[]}`, Delay: 10 * time.Second})
	start := time.Now()
	if _, err := c.Songs(context.Background()); err == nil {
		t.Error("stalled songs succeeded")
	}
	// The reply would come after 10 s: failing shows GetTimeout cut the
	// wait, and a timer cannot fire early; how late it fired is printed.
	if d := time.Since(start); d < GetTimeout {
		t.Errorf("songs gave up after %s, before GetTimeout %s", d, GetTimeout)
	}
	t.Logf("songs gave up after %s (GetTimeout %s)", time.Since(start).Round(time.Millisecond), GetTimeout)
}

func TestDisabledMakesNoRequest(t *testing.T) {
	c := New(Config{})
	if c.Enabled() {
		t.Fatal("enabled without a host")
	}
	if err := c.Say(context.Background(), "", "x"); !errors.Is(err, ErrDisabled) {
		t.Errorf("err = %v", err)
	}
	if _, err := c.Songs(context.Background()); !errors.Is(err, ErrDisabled) {
		t.Errorf("err = %v", err)
	}
}

func TestRefusedPortIsAnError(t *testing.T) {
	c := New(Config{Host: "127.0.0.1", Port: 1})
	if err := c.Say(context.Background(), "", "x"); err == nil || errors.Is(err, ErrDisabled) {
		t.Errorf("err = %v", err)
	}
}
