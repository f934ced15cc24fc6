package ui

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

// panel is a dashboard wired to the real admin handler and a recording
// fake xiaozhi, as the bridge wires it.
type panel struct {
	*env
	xz    *xiaozhitest.Server
	modes *admin.Modes
	clock *clockwork.FakeClock
	dir   string
}

func newPanel(t *testing.T, edit func(*Config, *admin.Config)) *panel {
	t.Helper()
	p := &panel{xz: xiaozhitest.New(t), clock: clockwork.NewFakeClock(), dir: t.TempDir()}
	p.modes = admin.NewModes(admin.ModesConfig{KidStatePath: filepath.Join(p.dir, "kid"), KidDefault: true,
		SmartStatePath: filepath.Join(p.dir, "smart")})
	host, port := p.xz.HostPort()
	robot := xiaozhi.New(xiaozhi.Config{Host: host, Port: port})
	acfg := admin.Config{Modes: p.modes, Robot: robot, Provider: "tier1slim",
		SmartOn:  admin.Target{Model: "big-cloud", URL: "https://cloud.example/v1", APIKey: "sk-on"},
		SmartOff: admin.Target{Model: "small-local", URL: "http://localhost:8080/v1", APIKey: "sk-off"},
		Logger:   hclog.NewNullLogger()}
	cfg := Config{Modes: p.modes, Robot: robot, SongAssetBase: "/srv/songs/", Version: "v-test", Clock: p.clock}
	if edit != nil {
		edit(&cfg, &acfg)
	}
	if cfg.Controls == nil {
		cfg.Controls = admin.NewHandler(acfg)
	}
	p.env = newEnv(t, cfg)
	return p
}

// post sends an action as the page does: JSON from the page's own origin.
func (p *panel) post(t *testing.T, path, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", p.url)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %d %q is not a JSON object", path, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// lastCall is the body of the latest call to a xiaozhi admin path.
func (p *panel) lastCall(t *testing.T, path string) map[string]any {
	t.Helper()
	calls := p.xz.CallsTo(path)
	if len(calls) == 0 {
		t.Fatalf("no call to %s", path)
	}
	return calls[len(calls)-1].Body
}

func TestToggleKidAndSmartModeThroughAdmin(t *testing.T) {
	p := newPanel(t, nil)
	code, out := p.post(t, "/ui/api/kid-mode", `{"enabled":false}`)
	if code != 200 || out["ok"] != true || out["enabled"] != false || out["device_pushed"] != true {
		t.Fatalf("kid mode: %d %v", code, out)
	}
	if p.modes.KidMode() {
		t.Error("kid mode still on after the toggle")
	}
	if got := p.lastCall(t, "/xiaozhi/admin/set-toggle"); !cmp.Equal(got, map[string]any{"device_id": "", "name": "kid_mode", "enabled": false}) {
		t.Errorf("set-toggle %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.dir, "kid")); err != nil || string(b) != "false" {
		t.Errorf("kid state file %q %v", b, err)
	}

	code, out = p.post(t, "/ui/api/smart-mode", `{"enabled":true}`)
	if code != 200 || out["enabled"] != true || out["model"] != "big-cloud" {
		t.Fatalf("smart mode: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/set-tier1slim-model"); got["model"] != "big-cloud" {
		t.Errorf("tier1slim swap %v", got)
	}
	if !p.modes.SmartMode() {
		t.Error("smart mode not stored")
	}

	// The robot not taking the toggle is a visible warning, not a failure:
	// the mode is stored and the robot catches up at its next change.
	p.xz.Set("/xiaozhi/admin/set-toggle", xiaozhitest.Reply{Status: 503, Body: `{"error":"no device connected"}`})
	code, out = p.post(t, "/ui/api/kid-mode", `{"enabled":true}`)
	if code != 200 || out["device_pushed"] != false || !strings.Contains(out["warning"].(string), "Dotty isn't connected right now") {
		t.Errorf("kid mode with the robot away: %d %v", code, out)
	}
	if code, out := p.post(t, "/ui/api/kid-mode", `{"enabled":"perhaps"}`); code != 422 {
		t.Errorf("bad enabled: %d %v", code, out)
	}
}

func TestRobotState(t *testing.T) {
	p := newPanel(t, nil)
	code, out := p.post(t, "/ui/api/state", `{"state":"sleep","device_id":"dotty-1"}`)
	if code != 200 || out["state"] != "sleep" {
		t.Fatalf("%d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/set-state"); !cmp.Equal(got, map[string]any{"device_id": "dotty-1", "state": "sleep"}) {
		t.Errorf("set-state %v", got)
	}
	if code, out := p.post(t, "/ui/api/state", `{"state":"party"}`); code != 400 || !strings.Contains(out["detail"].(string), "state must be one of") {
		t.Errorf("unknown state: %d %v", code, out)
	}
	p.xz.Set("/xiaozhi/admin/set-state", xiaozhitest.Reply{Status: 503, Body: `{"error":"no device connected"}`})
	if code, out := p.post(t, "/ui/api/state", `{"state":"idle"}`); code != 503 || out["detail"] != "Dotty isn't connected right now — try again in a few seconds." {
		t.Errorf("robot away: %d %v", code, out)
	}
}

// An action that makes the robot speak answers with the reply of the next
// completed turn, or says none came within 8 s of the dashboard's clock.
func TestSpeakingActions(t *testing.T) {
	p := newPanel(t, nil)
	// reply publishes the robot's answer once the next inject-text call
	// has arrived (the action subscribes to the turns before it calls).
	reply := func(text string) {
		before := len(p.xz.CallsTo("/xiaozhi/admin/inject-text"))
		go func() {
			for deadline := time.Now().Add(5 * time.Second); len(p.xz.CallsTo("/xiaozhi/admin/inject-text")) <= before; {
				if time.Now().After(deadline) {
					t.Error("no inject-text call within 5 s")
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			p.bus.Publish(turnbus.Turn{ResponseText: text})
		}()
	}
	reply("😊 Hello there!")
	code, out := p.post(t, "/ui/api/say", `{"text":"  Say\u0000 hello\n\tto   Nana  "}`)
	if code != 200 || out["sent"] != "Say hello to Nana" || out["response"] != "😊 Hello there!" {
		t.Fatalf("say: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); got["text"] != "Say hello to Nana" {
		t.Errorf("inject-text %v", got)
	}

	// No reply: the answer comes when the clock passes 8 s.
	done := make(chan map[string]any, 1)
	go func() { _, out := p.post(t, "/ui/api/dance", `{}`); done <- out }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("dance never waited for a reply:", err)
	}
	p.clock.Advance(replyWait)
	select {
	case out := <-done:
		if out["response"] != noReply || out["sent"] != "dance & sing" {
			t.Errorf("dance: %v", out)
		}
	case <-ctx.Done():
		t.Fatal("dance did not answer after 8 s")
	}
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); got["text"] != "do a dance and sing a song" {
		t.Errorf("dance inject %v", got)
	}

	// Mood: kid mode off names 😠 war.
	if err := p.modes.SetKidMode(false); err != nil {
		t.Fatal(err)
	}
	reply("😠 This is my war face.")
	if code, out := p.post(t, "/ui/api/mood", `{"emoji":"😠"}`); code != 200 || out["response"] != "😠 This is my war face." {
		t.Errorf("mood: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); got["text"] != "Make the 😠 face. Reply with exactly: '😠 This is my war face.' — nothing else." {
		t.Errorf("mood inject %v", got["text"])
	}
	if code, out := p.post(t, "/ui/api/mood", `{"emoji":"🦄"}`); code != 400 || out["detail"] != "Unknown emoji." {
		t.Errorf("unknown emoji: %d %v", code, out)
	}

	// Story: the state flips to story_time, then the seed.
	reply("😊 Once upon a time…")
	if code, out := p.post(t, "/ui/api/story", `{"text":"a brave snail"}`); code != 200 || out["response"] != "😊 Once upon a time…" {
		t.Errorf("story: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/set-state"); got["state"] != "story_time" {
		t.Errorf("story state %v", got)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/inject-text"); got["text"] != "Tell a new story about: a brave snail" {
		t.Errorf("story seed %v", got)
	}

	for body, want := range map[string]string{
		`{"text":"   "}`: "Empty message — type something first.",
		`{"text":"` + strings.Repeat("é", MaxSay+1) + `"}`: "Too long — keep it under 500 characters.",
		`{"text":"\u0001\u0002"}`:                          "The message was empty after removing control characters.",
	} {
		if code, out := p.post(t, "/ui/api/say", body); code != 400 || out["detail"] != want {
			t.Errorf("say %.40s: %d %v", body, code, out)
		}
	}
	p.xz.Set("/xiaozhi/admin/inject-text", xiaozhitest.Reply{Status: 503, Body: `{"error":"no device connected"}`})
	if code, out := p.post(t, "/ui/api/say", `{"text":"hi"}`); code != 503 || out["detail"] != "Dotty isn't connected right now — try again in a few seconds." {
		t.Errorf("say with the robot away: %d %v", code, out)
	}
}

func TestSongsAndPhoto(t *testing.T) {
	p := newPanel(t, nil)
	p.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["Lullaby.opus","Waltz.mp3"]}`})
	_, body := get(t, p.url+"/ui/api/songs", "", "")
	if body != `{"songs":["Lullaby.opus","Waltz.mp3"]}` {
		t.Errorf("songs %s", body)
	}
	code, out := p.post(t, "/ui/api/play-song", `{"filename":"Lullaby.opus"}`)
	if code != 200 || out["response"] != "playing Lullaby.opus" {
		t.Fatalf("play: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/play-asset"); !cmp.Equal(got, map[string]any{"asset": "/srv/songs/Lullaby.opus"}) {
		t.Errorf("play-asset %v", got)
	}
	for _, bad := range []string{"../etc/passwd.mp3", "a/b.opus", "notes.txt", ""} {
		if code, out := p.post(t, "/ui/api/play-song", `{"filename":"`+bad+`"}`); code != 400 || out["detail"] != "Invalid song filename." {
			t.Errorf("play %q: %d %v", bad, code, out)
		}
	}
	p.xz.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 404, Body: `{"error":"asset not found"}`})
	if code, out := p.post(t, "/ui/api/play-song", `{"filename":"Gone.ogg"}`); code != 502 || !strings.Contains(out["detail"].(string), "HTTP 404") {
		t.Errorf("missing asset: %d %v", code, out)
	}

	code, out = p.post(t, "/ui/api/take-photo", `{"device_id":"dotty-1"}`)
	if code != 200 || out["ok"] != true {
		t.Fatalf("photo: %d %v", code, out)
	}
	if got := p.lastCall(t, "/xiaozhi/admin/take-photo"); !cmp.Equal(got, map[string]any{"device_id": "dotty-1", "question": "What do you see?"}) {
		t.Errorf("take-photo %v", got)
	}

	p.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 500, Body: "boom"})
	if _, body := get(t, p.url+"/ui/api/songs", "", ""); !strings.Contains(body, `"songs":[]`) || !strings.Contains(body, "HTTP 500") {
		t.Errorf("songs failure %s", body)
	}
}

// Without xiaozhi every action says so instead of failing silently.
func TestActionsWithoutXiaozhi(t *testing.T) {
	p := newPanel(t, func(c *Config, a *admin.Config) {
		c.Robot = xiaozhi.New(xiaozhi.Config{})
		a.Robot = c.Robot.(*xiaozhi.Client)
	})
	const want = "xiaozhi is not configured (XIAOZHI_HOST is empty)"
	for path, body := range map[string]string{"/ui/api/say": `{"text":"hi"}`, "/ui/api/dance": `{}`,
		"/ui/api/state": `{"state":"idle"}`, "/ui/api/take-photo": `{}`, "/ui/api/play-song": `{"filename":"a.opus"}`} {
		if code, out := p.post(t, path, body); code != 503 || out["detail"] != want {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
}

// A page on another site cannot drive the controls: a foreign Origin or
// Referer is refused, and so is a body a plain form could send.
func TestActionsRefuseCrossSiteRequests(t *testing.T) {
	p := newPanel(t, nil)
	for _, h := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "", "Referer", "http://evil.example/page"},
	} {
		if code, out := p.post(t, "/ui/api/dance", `{}`, h...); code != 403 || out["detail"] != "cross-site request refused" {
			t.Errorf("%v: %d %v", h, code, out)
		}
	}
	if code, out := p.post(t, "/ui/api/dance", `text=x`, "Content-Type", "application/x-www-form-urlencoded"); code != 415 {
		t.Errorf("form body: %d %v", code, out)
	}
	if n := len(p.xz.CallsTo("/xiaozhi/admin/inject-text")); n != 0 {
		t.Errorf("%d refused requests reached the robot", n)
	}

	locked := newPanel(t, func(c *Config, _ *admin.Config) { c.User, c.Pass = "parent", "secret" })
	if code, _ := locked.post(t, "/ui/api/dance", `{}`); code != 401 {
		t.Errorf("no credentials: %d", code)
	}
}

func TestStatus(t *testing.T) {
	ws, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	p := newPanel(t, func(c *Config, _ *admin.Config) {
		c.XiaozhiHost, c.XiaozhiWSPort = "127.0.0.1", ws.Addr().(*net.TCPAddr).Port
		c.DemoAgent = func() bool { return true }
	})
	p.xz.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 200, Body: `{"devices":["dotty-1"]}`})
	_, body := get(t, p.url+"/ui/api/status", "", "")
	var got statusResult
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := statusResult{Version: "v-test", DemoAgent: true, Open: true, KidMode: true,
		Xiaozhi:  xiaozhiStatus{Configured: true, Reachable: true, Devices: []string{"dotty-1"}, WebSocket: true},
		SmartOff: "small-local", SmartOn: "big-cloud", States: admin.States}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("status (-got +want):\n%s", d)
	}
	ws.Close()
	p.xz.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 500, Body: "down"})
	_, body = get(t, p.url+"/ui/api/status", "", "")
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Xiaozhi.Reachable || got.Xiaozhi.WebSocket || got.Xiaozhi.Error == "" {
		t.Errorf("xiaozhi down: %+v", got.Xiaozhi)
	}
}

func TestPhotoRoutes(t *testing.T) {
	at := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	var kept *Photo
	p := newPanel(t, func(c *Config, _ *admin.Config) {
		c.Location = time.UTC
		c.LatestPhoto = func(device string) (Photo, bool) {
			if kept == nil || (device != "" && device != kept.Device) {
				return Photo{}, false
			}
			return *kept, true
		}
		c.PhotoList = func() []Photo {
			if kept == nil {
				return nil
			}
			k := *kept
			k.JPEG = nil
			return []Photo{k}
		}
	})
	if _, body := get(t, p.url+"/ui/api/photos", "", ""); body != `[]` {
		t.Errorf("no photos: %s", body)
	}
	if resp, body := get(t, p.url+"/ui/api/photo", "", ""); resp.StatusCode != 404 || body != `{"detail":"no photo yet"}` {
		t.Errorf("no photo: %d %s", resp.StatusCode, body)
	}
	kept = &Photo{Device: "dotty/1", Description: "A <b>cat</b>.", At: at, Size: 4, JPEG: []byte("\xff\xd8\xff\xd9")}
	if _, body := get(t, p.url+"/ui/api/photos", "", ""); body != `[{"device_id":"dotty/1","description":"A <b>cat</b>.","at":"2026-11-24T09:30:00Z","bytes":4}]` {
		t.Errorf("photos: %s", body)
	}
	resp, body := get(t, p.url+"/ui/api/photo?device_id=dotty%2F1&download=1", "", "")
	if resp.StatusCode != 200 || body != "\xff\xd8\xff\xd9" || resp.Header.Get("Content-Type") != "image/jpeg" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="dotty-dotty_1-20261124-093000.jpg"` {
		t.Errorf("photo: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := get(t, p.url+"/ui/api/photo?device_id=other", "", ""); resp.StatusCode != 404 {
		t.Errorf("other device: %d", resp.StatusCode)
	}
}
