package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
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
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else if headers[i+1] == "" {
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

// TestSmartModeWithoutAgentConfig: the toggle the family uses stays on
// when the agent's config.toml is missing (the demo mode): the mode is
// stored and the page shows why the model did not follow.
func TestSmartModeWithoutAgentConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "config.toml")
	p := newPanel(t, func(_ *Config, a *admin.Config) {
		a.Provider, a.VoiceConfig, a.DefaultModel = "zeroclaw", missing, "small-local"
	})
	code, out := p.post(t, "/ui/api/smart-mode", `{"enabled":true}`)
	if code != 200 || out["ok"] != true || out["enabled"] != true ||
		out["warning"] != "Saved, but the agent's model was not changed: config not found: "+missing {
		t.Fatalf("smart mode: %d %v", code, out)
	}
	if !p.modes.SmartMode() {
		t.Error("smart mode not stored")
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
			if !testkit.Within(testkit.MinWait, func() bool { return len(p.xz.CallsTo("/xiaozhi/admin/inject-text")) > before }) {
				t.Error("no inject-text call")
				return
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
	if code, out := p.post(t, "/ui/api/dance", `{}`, "Content-Type", ""); code != 415 {
		t.Errorf("untyped body: %d %v", code, out)
	}
	if n := len(p.xz.CallsTo("/xiaozhi/admin/inject-text")); n != 0 {
		t.Errorf("%d refused requests reached the robot", n)
	}
	// DNS rebinding: the attacker's name points at the bridge, so the page
	// is "same-origin" with itself; its Host is not this machine.
	rebound := []string{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"}
	if code, out := p.post(t, "/ui/api/kid-mode", `{"enabled":false}`, rebound...); code != 403 ||
		out["detail"] != "the Host header does not name this machine; add a reverse proxy's public name to BRIDGE_PUBLIC_HOSTS" {
		t.Errorf("rebinding: %d %v", code, out)
	}
	if !p.modes.KidMode() || len(p.xz.CallsTo("/xiaozhi/admin/set-toggle")) != 0 {
		t.Error("a rebinding request turned kid mode off")
	}
	// The same request with this machine's name works.
	if code, out := p.post(t, "/ui/api/kid-mode", `{"enabled":false}`, "Host", "localhost", "Origin", "http://localhost"); code != 200 || p.modes.KidMode() {
		t.Errorf("own name: %d %v", code, out)
	}

	locked := newPanel(t, func(c *Config, _ *admin.Config) { c.Access = credentials("parent", "secret") })
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
		c.DemoAgent, c.DemoAdvice = func() bool { return true }, "For real answers, set STEERABLE_CMD."
	})
	p.xz.Set("/xiaozhi/admin/devices", xiaozhitest.Reply{Status: 200, Body: `{"devices":["dotty-1"]}`})
	_, body := get(t, p.url+"/ui/api/status", "", "")
	var got statusResult
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := statusResult{Version: "v-test", DemoAgent: true, DemoAdvice: "For real answers, set STEERABLE_CMD.", Open: true, KidMode: true,
		Xiaozhi:  xiaozhiStatus{Configured: true, Reachable: true, Devices: []string{"dotty-1"}, WebSocket: true},
		SmartOff: "small-local", SmartOn: "big-cloud", States: admin.States,
		Operator: &operatorStatus{Started: p.clock.Now(), Units: []units.State{}, XiaozhiRestart: xiaozhiRestartStatus{TimeoutS: 30}}}
	if d := cmp.Diff(got, want, cmpopts.IgnoreFields(statusResult{}, "Host")); d != "" {
		t.Errorf("status (-got +want):\n%s", d)
	}
	ws.Close()
	p.clock.Advance(probeTTL) // the port probe's answer is kept that long
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

// fakeMemory is a recording fake of the memory store: it keeps records,
// held ones first, and every approve and redact call it receives.
type fakeMemory struct {
	mu      sync.Mutex
	records []MemoryRecord
	more    bool
	calls   []string // "approve <id>", "redact <id>"
	lists   int      // listings served
	busy    error    // every call fails with it while set
	// gate, while set, holds approve and redact (after they are recorded)
	// until it closes.
	gate chan struct{}
}

func newFakeMemory(records ...MemoryRecord) *fakeMemory {
	return &fakeMemory{records: records}
}

// wire sets the memory functions of cfg to the fake's.
func (m *fakeMemory) wire(cfg *Config) {
	cfg.MemoryRecords, cfg.ApproveMemory, cfg.RedactMemory = m.list, m.approve, m.redact
}

func (m *fakeMemory) list(context.Context) ([]MemoryRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	if m.busy != nil {
		return nil, false, m.busy
	}
	out := slices.Clone(m.records)
	slices.SortStableFunc(out, func(a, b MemoryRecord) int { // held first, as the store lists them
		switch {
		case a.Pending == b.Pending:
			return 0
		case a.Pending:
			return -1
		}
		return 1
	})
	return out, m.more, nil
}

// call records a call and waits for the gate, if any.
func (m *fakeMemory) call(ctx context.Context, what string) error {
	m.mu.Lock()
	m.calls = append(m.calls, what)
	gate := m.gate
	m.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *fakeMemory) approve(ctx context.Context, id string) (bool, error) {
	return m.change(ctx, "approve", id, func(i int) bool {
		if !m.records[i].Pending {
			return false
		}
		m.records[i].Pending = false
		return true
	})
}

func (m *fakeMemory) redact(ctx context.Context, id string) (bool, error) {
	return m.change(ctx, "redact", id, func(i int) bool {
		m.records = slices.Delete(m.records, i, i+1)
		return true
	})
}

// change records the call "verb id" and, unless the store is busy, applies
// apply under the lock to the record with that id; it reports whether
// apply changed one.
func (m *fakeMemory) change(ctx context.Context, verb, id string, apply func(i int) bool) (bool, error) {
	if err := m.call(ctx, verb+" "+id); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busy != nil {
		return false, m.busy
	}
	for i, r := range m.records {
		if r.ID == id && apply(i) {
			return true, nil
		}
	}
	return false, nil
}

// received is the calls so far.
func (m *fakeMemory) received() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

func (m *fakeMemory) set(f func(m *fakeMemory)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

// errMemoryBusy is the fake's locked database.
var errMemoryBusy = errors.New("approve person memory: memory database busy: context deadline exceeded")

// memoryFacts are the review card's test records: one held fact with
// markup in it, one held about an unknown person, one approved.
func memoryFacts() []MemoryRecord {
	return []MemoryRecord{
		{ID: "m-held-1", PersonID: "hudson", Content: `likes <img src=x onerror=alert(1)> dinosaurs`, Pending: true, Importance: 0.7,
			CreatedAt: "2026-05-17T01:02:03.000000+00:00", UpdatedAt: "2026-05-17T01:02:03.000000+00:00"},
		{ID: "m-approved", PersonID: "brett", Content: "drinks his coffee black", Importance: 0.7,
			CreatedAt: "2026-05-16T08:00:00.000000+00:00", UpdatedAt: "2026-05-16T09:00:00.000000+00:00"},
		{ID: "m-held-2", PersonID: "unknown-1", Content: "has a dog called Biscuit", Pending: true, Importance: 0.5,
			CreatedAt: "2026-05-17T02:00:00.000000+00:00", UpdatedAt: "2026-05-17T02:00:00.000000+00:00"},
	}
}

// The memory review routes: the listing's exact body, approve and redact
// with the exact store call, 404 with the reason for a fact that is gone,
// 503 with the reason when the store is busy, logged each time; 503
// pointing at /health's problems, not logged and without the cause, when
// the store reported it as a health condition (the dashboard polls).
func TestMemoryRoutes(t *testing.T) {
	mem := newFakeMemory(memoryFacts()...)
	var logs testkit.LogBuffer
	p := newPanel(t, func(c *Config, _ *admin.Config) {
		mem.wire(c)
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	})

	resp, body := get(t, p.url+"/ui/api/memory", "", "")
	want := `{"records":[` +
		`{"id":"m-held-1","person_id":"hudson","content":"likes <img src=x onerror=alert(1)> dinosaurs","pending":true,"importance":0.7,"created_at":"2026-05-17T01:02:03.000000+00:00","updated_at":"2026-05-17T01:02:03.000000+00:00"},` +
		`{"id":"m-held-2","person_id":"unknown-1","content":"has a dog called Biscuit","pending":true,"importance":0.5,"created_at":"2026-05-17T02:00:00.000000+00:00","updated_at":"2026-05-17T02:00:00.000000+00:00"},` +
		`{"id":"m-approved","person_id":"brett","content":"drinks his coffee black","pending":false,"importance":0.7,"created_at":"2026-05-16T08:00:00.000000+00:00","updated_at":"2026-05-16T09:00:00.000000+00:00"}` +
		`],"more":false}`
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || body != want {
		t.Errorf("listing: %d %s %s\nwant %s", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}

	code, out := p.post(t, "/ui/api/memory/approve", `{"id":"m-held-1"}`)
	if code != 200 || !cmp.Equal(out, map[string]any{"ok": true, "id": "m-held-1", "action": "approved"}) {
		t.Errorf("approve: %d %v", code, out)
	}
	// Approving twice: the fact is no longer held.
	code, out = p.post(t, "/ui/api/memory/approve", `{"id":"m-held-1"}`)
	if code != 404 || out["detail"] != "That fact is not waiting for review any more: it was approved or redacted already." {
		t.Errorf("approve again: %d %v", code, out)
	}
	code, out = p.post(t, "/ui/api/memory/redact", `{"id":"m-approved"}`)
	if code != 200 || !cmp.Equal(out, map[string]any{"ok": true, "id": "m-approved", "action": "redacted"}) {
		t.Errorf("redact: %d %v", code, out)
	}
	code, out = p.post(t, "/ui/api/memory/redact", `{"id":"m-approved"}`)
	if code != 404 || out["detail"] != "That fact is not stored any more: it was redacted already." {
		t.Errorf("redact again: %d %v", code, out)
	}
	if got, want := mem.received(), []string{"approve m-held-1", "approve m-held-1", "redact m-approved", "redact m-approved"}; !cmp.Equal(got, want) {
		t.Errorf("store calls %q, want %q", got, want)
	}
	if _, body := get(t, p.url+"/ui/api/memory", "", ""); !strings.HasPrefix(body, `{"records":[{"id":"m-held-2",`) ||
		strings.Count(body, `"id"`) != 2 || !strings.Contains(body, `{"id":"m-held-1","person_id":"hudson","content":"likes <img src=x onerror=alert(1)> dinosaurs","pending":false`) {
		t.Errorf("listing after the actions: %s", body)
	}

	// A busy store: 503 with the reason, for the listing and the actions.
	mem.set(func(m *fakeMemory) { m.busy = errMemoryBusy })
	for _, path := range []string{"/ui/api/memory/approve", "/ui/api/memory/redact"} {
		verb := strings.TrimPrefix(path, "/ui/api/memory/")
		code, out := p.post(t, path, `{"id":"m-held-2"}`)
		if want := "Could not " + verb + " the fact (" + errMemoryBusy.Error() + "). Try again in a moment."; code != 503 || out["detail"] != want {
			t.Errorf("%s busy: %d %v", path, code, out)
		}
	}
	if resp, body := get(t, p.url+"/ui/api/memory", "", ""); resp.StatusCode != 503 ||
		body != `{"detail":"Could not read the memory store (`+errMemoryBusy.Error()+`). Try again in a moment."}` {
		t.Errorf("listing busy: %d %s", resp.StatusCode, body)
	}
	if n := strings.Count(logs.String(), "[WARN]  memory review: listing failed"); n != 1 {
		t.Errorf("%d Warn lines for the busy listing, want 1:\n%s", n, logs.String())
	}
	logs.Reset()
	reported := fmt.Errorf("%w: list person memory: stat /x/brain.db: permission denied", health.ErrReported)
	mem.set(func(m *fakeMemory) { m.busy = reported })
	for range 3 {
		if resp, body := get(t, p.url+"/ui/api/memory", "", ""); resp.StatusCode != 503 ||
			body != `{"detail":"Could not read the memory store (the Agent card's problems say why). Try again once that is fixed."}` {
			t.Errorf("listing with a reported cause: %d %s", resp.StatusCode, body)
		}
	}
	if logs.String() != "" {
		t.Errorf("a reported cause logged again:\n%s", logs.String())
	}
	mem.set(func(m *fakeMemory) { m.busy, m.records, m.more = nil, nil, true })
	if _, body := get(t, p.url+"/ui/api/memory", "", ""); body != `{"records":[],"more":true}` {
		t.Errorf("empty listing: %s", body)
	}
}

// Bad input to the memory actions is a clear 4xx, never a 500, and never
// reaches the store.
func TestMemoryActionValidation(t *testing.T) {
	mem := newFakeMemory(memoryFacts()...)
	p := newPanel(t, func(c *Config, _ *admin.Config) { mem.wire(c) })
	for _, tt := range []struct {
		body   string
		status int
		detail string // a string detail, or the type of the one 422 item
	}{
		{`{}`, 422, "missing"},
		{`{"id":null}`, 422, "string_type"},
		{`{"id":42}`, 422, "string_type"},
		{`{"id":""}`, 400, "The fact id is empty."},
		{`{"id":"   "}`, 400, "The fact id is empty."},
		{`{"id":"` + strings.Repeat("a", MaxMemoryID+1) + `"}`, 422, "string_too_long"},
		{`["m-held-1"]`, 422, "model_attributes_type"},
		{`{"id":`, 422, "json_invalid"},
		{`{"id":"m-held-1","pad":"` + strings.Repeat("x", 8<<10) + `"}`, 413, ""},
	} {
		for _, path := range []string{"/ui/api/memory/approve", "/ui/api/memory/redact"} {
			code, out := p.post(t, path, tt.body)
			if code != tt.status {
				t.Errorf("%s %.40s: %d %v, want %d", path, tt.body, code, out, tt.status)
				continue
			}
			switch d := out["detail"].(type) {
			case string:
				if tt.detail != "" && d != tt.detail {
					t.Errorf("%s %.40s: detail %q, want %q", path, tt.body, d, tt.detail)
				}
			case []any:
				if item, _ := d[0].(map[string]any); len(d) != 1 || item["type"] != tt.detail {
					t.Errorf("%s %.40s: detail %v, want one %s item", path, tt.body, d, tt.detail)
				}
			default:
				t.Errorf("%s %.40s: detail %v", path, tt.body, out)
			}
		}
	}
	// A 128-character id is fine: the store says it has no such fact.
	if code, out := p.post(t, "/ui/api/memory/redact", `{"id":"`+strings.Repeat("a", MaxMemoryID)+`"}`); code != 404 {
		t.Errorf("a %d-character id: %d %v", MaxMemoryID, code, out)
	}
	if got := mem.received(); len(got) != 1 {
		t.Errorf("bad input reached the store: %q", got)
	}

	// Cross-site and form posts are refused before the store is asked.
	for _, tt := range []struct {
		headers []string
		status  int
	}{
		{[]string{"Origin", "http://evil.example"}, 403},
		{[]string{"Origin", "", "Referer", "http://evil.example/page"}, 403},
		{[]string{"Content-Type", "text/plain"}, 415},
		{[]string{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"}, 403},
	} {
		if code, out := p.post(t, "/ui/api/memory/redact", `{"id":"m-held-1"}`, tt.headers...); code != tt.status {
			t.Errorf("%v: %d %v, want %d", tt.headers, code, out, tt.status)
		}
	}
	if got := mem.received(); len(got) != 1 {
		t.Errorf("a refused request reached the store: %q", got)
	}

	// Behind the dashboard's Basic auth like every /ui route.
	locked := newPanel(t, func(c *Config, _ *admin.Config) { mem.wire(c); c.Access = credentials("parent", "secret") })
	if code, _ := locked.post(t, "/ui/api/memory/redact", `{"id":"m-held-1"}`); code != 401 {
		t.Errorf("redact without credentials: %d", code)
	}
	if resp, _ := get(t, locked.url+"/ui/api/memory", "", ""); resp.StatusCode != 401 {
		t.Errorf("listing without credentials: %d", resp.StatusCode)
	}
	if resp, _ := get(t, locked.url+"/ui/api/memory", "parent", "secret"); resp.StatusCode != 200 {
		t.Errorf("listing with credentials: %d", resp.StatusCode)
	}
	if got := mem.received(); len(got) != 1 {
		t.Errorf("an unauthenticated request reached the store: %q", got)
	}
}

// Without a memory store every memory route says so.
func TestMemoryNotConfigured(t *testing.T) {
	p := newPanel(t, nil)
	if resp, body := get(t, p.url+"/ui/api/memory", "", ""); resp.StatusCode != 503 || body != `{"detail":"Memory not configured"}` {
		t.Errorf("listing: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/ui/api/memory/approve", "/ui/api/memory/redact"} {
		if code, out := p.post(t, path, `{"id":"m-1"}`); code != 503 || out["detail"] != "Memory not configured" {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
	// A listing alone: the actions still say what is missing.
	mem := newFakeMemory(memoryFacts()...)
	only := newPanel(t, func(c *Config, _ *admin.Config) { c.MemoryRecords = mem.list })
	if code, out := only.post(t, "/ui/api/memory/approve", `{"id":"m-held-1"}`); code != 503 || out["detail"] != "Memory not configured" {
		t.Errorf("approve without ApproveMemory: %d %v", code, out)
	}
}
