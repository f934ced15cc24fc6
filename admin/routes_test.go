package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health/healthtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

type fakeAgent struct {
	mu       sync.Mutex
	restarts []string
	rotated  int
}

func (f *fakeAgent) Restart(reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, reason)
	return true
}

func (f *fakeAgent) RotateAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rotated++
}

type adminEnv struct {
	e     *echo.Echo
	dir   string
	modes *Modes
	gauge prometheus.Gauge
	xz    *xiaozhitest.Server
	agent *fakeAgent
	units []string
	cfg   Config
	h     *Handler
}

func newAdminEnv(t *testing.T, edit func(*Config)) *adminEnv {
	t.Helper()
	dir := t.TempDir()
	a := &adminEnv{dir: dir, xz: xiaozhitest.New(t), agent: &fakeAgent{}}
	a.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "kid"})
	a.modes = NewModes(ModesConfig{KidStatePath: filepath.Join(dir, "state", "kid-mode"), KidDefault: true,
		SmartStatePath: filepath.Join(dir, "state", "smart-mode"), Metrics: &Metrics{KidModeActive: a.gauge}})
	host, port := a.xz.HostPort()
	safety, err := NewSafety(filepath.Join(dir, "state", "tool-allowlist"))
	if err != nil {
		t.Fatal(err)
	}
	a.cfg = Config{
		Modes: a.modes, Robot: xiaozhi.New(xiaozhi.Config{Host: host, Port: port}),
		Provider:     "zeroclaw",
		SmartOn:      Target{Model: "anthropic/claude-sonnet-4-6", URL: "https://openrouter.ai/api/v1", APIKey: "sk-cloud"},
		SmartOff:     Target{Model: "qwen3.5:4b", URL: "http://localhost:8080/v1", APIKey: "dotty-voice"},
		DefaultModel: "qwen3.5:4b", Workspace: filepath.Join(dir, "workspace"),
		VoiceConfig: filepath.Join(dir, "voice.toml"), DiscordConfig: filepath.Join(dir, "discord.toml"),
		VoiceUnit: "zeroclaw-bridge", DiscordUnit: "zeroclaw-discord", CloudProfileKey: "custom:https://openrouter.ai/api/v1",
		Safety: safety, Agent: a.agent, Sessions: a.agent,
		RestartUnit: func(unit string) { a.units = append(a.units, unit) },
		Logger:      hclog.NewNullLogger(),
	}
	if edit != nil {
		edit(&a.cfg)
	}
	a.e = echo.New()
	a.e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	a.h = NewHandler(a.cfg)
	a.h.Routes(a.e)
	return a
}

// do sends a request through the echo stack from peer (host:port).
func (a *adminEnv) do(path, body, peer string, headers ...string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.RemoteAddr = peer
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		switch headers[i] {
		case "Host":
			req.Host = headers[i+1]
		case "Content-Type":
			req.Header.Set("Content-Type", headers[i+1])
		default:
			req.Header.Add(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func (a *adminEnv) post(path, body string) (int, string) { return a.do(path, body, "127.0.0.1:40000") }

func (a *adminEnv) calls() []string {
	var out []string
	for _, c := range a.xz.Calls() {
		out = append(out, strings.TrimPrefix(c.Path, "/xiaozhi/admin/")+" "+string(c.Raw))
	}
	return out
}

const refused = `{"detail":"admin endpoints are localhost-only"}`

func TestLoopbackOnly(t *testing.T) {
	a := newAdminEnv(t, nil)
	for _, tt := range []struct {
		name, peer string
		headers    []string
		ok         bool
	}{
		{"LAN peer", "192.168.1.20:5555", nil, false},
		{"LAN peer claiming loopback", "192.168.1.20:5555", []string{"X-Forwarded-For", "127.0.0.1"}, false},
		{"loopback proxy for a LAN client", "127.0.0.1:5555", []string{"X-Forwarded-For", "192.168.1.20"}, false},
		{"loopback proxy, LAN client last", "127.0.0.1:5555", []string{"X-Forwarded-For", "127.0.0.1, 10.0.0.3"}, false},
		{"Forwarded header", "127.0.0.1:5555", []string{"Forwarded", `for="[2001:db8::1]:4711";proto=http`}, false},
		{"garbage forwarded", "127.0.0.1:5555", []string{"X-Forwarded-For", "unknown"}, false},
		{"X-Real-IP of a LAN client", "127.0.0.1:5555", []string{"X-Real-IP", "192.168.1.20"}, false},
		{"Forwarded with spaces", "127.0.0.1:5555", []string{"Forwarded", `For = 192.168.1.20 ; proto=http`}, false},
		{"public IPv6 peer", "[2001:db8::5]:80", nil, false},
		{"loopback", "127.0.0.1:5555", nil, true},
		{"other loopback", "127.8.9.10:5555", nil, true},
		{"IPv6 loopback", "[::1]:5555", nil, true},
		{"loopback chain", "[::1]:5555", []string{"X-Forwarded-For", "127.0.0.1, ::1", "Forwarded", "for=127.0.0.1", "X-Real-IP", "::1"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A malformed body still gets 403 first: the body is not read.
			code, body := a.do("/admin/state", `{"state":`, tt.peer, tt.headers...)
			if tt.ok {
				if code != 422 {
					t.Errorf("%d %s, want the body's 422", code, body)
				}
				return
			}
			if code != 403 || body != refused {
				t.Errorf("%d %s", code, body)
			}
		})
	}
	if len(a.xz.Calls()) != 0 {
		t.Errorf("calls made: %v", a.calls())
	}
}

func TestKidMode(t *testing.T) {
	a := newAdminEnv(t, nil)
	code, body := a.post("/admin/kid-mode", `{"enabled":false,"device_id":"dotty-1"}`)
	if code != 200 || body != `{"ok":true,"enabled":false,"device_pushed":true,"hot_applied":true}` {
		t.Fatalf("%d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(a.dir, "state", "kid-mode")); string(b) != "false" {
		t.Errorf("state file %q", b)
	}
	if a.modes.KidMode() || testutil.ToFloat64(a.gauge) != 0 {
		t.Error("kid mode not applied live")
	}
	a.xz.Set("/xiaozhi/admin/set-toggle", xiaozhitest.Reply{Status: 503, Body: "no device connected"})
	code, body = a.post("/admin/kid-mode", `{"enabled":"yes"}`)
	if code != 200 || body != `{"ok":true,"enabled":true,"device_pushed":false,"hot_applied":true}` || !a.modes.KidMode() {
		t.Errorf("%d %s", code, body)
	}
	want := []string{`set-toggle {"device_id":"dotty-1","enabled":false,"name":"kid_mode"}`, `set-toggle {"device_id":"","enabled":true,"name":"kid_mode"}`}
	if got := a.calls(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls %q", got)
	}
	for _, bad := range []string{`{}`, `{"enabled":2}`, `{"enabled":null}`, `{"enabled":true,"device_id":5}`, `[1]`} {
		if code, body := a.post("/admin/kid-mode", bad); code != 422 || !strings.Contains(body, `"detail":[`) {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if !a.modes.KidMode() {
		t.Error("a refused request changed kid mode")
	}
}

func TestSmartModeTier1Slim(t *testing.T) {
	a := newAdminEnv(t, func(c *Config) { c.Provider = " Tier1Slim " })
	code, body := a.post("/admin/smart-mode", `{"enabled":true,"device_id":"d"}`)
	if code != 200 || body != `{"ok":true,"enabled":true,"device_pushed":true,"model":"anthropic/claude-sonnet-4-6","swap_ok":true,"provider":"tier1slim"}` {
		t.Fatalf("%d %s", code, body)
	}
	a2 := newAdminEnv(t, func(c *Config) { c.Provider = "tier1slim"; c.SmartOff = Target{Model: "qwen3.5:4b"} })
	a2.post("/admin/smart-mode", `{"enabled":false}`)
	got := append(a.calls(), a2.calls()...)
	want := []string{
		`set-toggle {"device_id":"d","enabled":true,"name":"smart_mode"}`,
		`set-tier1slim-model {"api_key":"sk-cloud","model":"anthropic/claude-sonnet-4-6","url":"https://openrouter.ai/api/v1"}`,
		`set-toggle {"device_id":"","enabled":false,"name":"smart_mode"}`,
		`set-tier1slim-model {"model":"qwen3.5:4b"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s", strings.Join(got, "\n"))
	}
	if !a.modes.SmartMode() || a2.modes.SmartMode() {
		t.Error("smart mode not stored")
	}
	if len(a.agent.restarts) != 0 {
		t.Error("the tier1slim path restarted the agent")
	}
}

const legacyTOML = `default_provider = "custom:https://openrouter.ai/api/v1"

[providers.models."custom:https://openrouter.ai/api/v1"]
api_key = "sk"
model = "mistralai/mistral-small-3.2-24b-instruct"  # voice

[memory]
model = "keep-me"
`

func TestSmartModeZeroClawPath(t *testing.T) {
	a := newAdminEnv(t, nil)
	if err := os.WriteFile(a.cfg.VoiceConfig, []byte(legacyTOML), 0o640); err != nil {
		t.Fatal(err)
	}
	code, body := a.post("/admin/smart-mode", `{"enabled":true}`)
	if code != 200 || body != `{"ok":true,"enabled":true,"device_pushed":true,"model":"anthropic/claude-sonnet-4-6","config":"`+a.cfg.VoiceConfig+`","restart":"zeroclaw-bridge"}` {
		t.Fatalf("%d %s", code, body)
	}
	b, _ := os.ReadFile(a.cfg.VoiceConfig)
	if want := strings.Replace(legacyTOML, `model = "mistralai/mistral-small-3.2-24b-instruct"  # voice`, `model = "anthropic/claude-sonnet-4-6"  # voice`, 1); string(b) != want {
		t.Errorf("config:\n%s", b)
	}
	if fi, _ := os.Stat(a.cfg.VoiceConfig); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v not kept", fi.Mode().Perm())
	}
	if len(a.agent.restarts) != 1 {
		t.Errorf("restarts %v", a.agent.restarts)
	}
}

// TestSmartModeWithoutAgentConfig: with no config.toml to edit (the demo
// mode's case) smart mode is still stored and pushed, as bridge.py stored
// it first; the answer is a 200 that says the model did not follow, never
// an error about a mode that changed.
func TestSmartModeWithoutAgentConfig(t *testing.T) {
	a := newAdminEnv(t, nil)
	code, body := a.post("/admin/smart-mode", `{"enabled":true}`)
	want := `{"ok":true,"enabled":true,"device_pushed":true,"model":"anthropic/claude-sonnet-4-6","config":"","restart":"",` +
		`"warning":"Saved, but the agent's model was not changed: config not found: ` + a.cfg.VoiceConfig + `"}`
	if code != 200 || body != want {
		t.Fatalf("%d %s\nwant %s", code, body, want)
	}
	if !a.modes.SmartMode() {
		t.Error("smart mode not stored")
	}
	if got := a.calls(); len(got) != 1 || got[0] != `set-toggle {"device_id":"","enabled":true,"name":"smart_mode"}` {
		t.Errorf("calls %v", got)
	}
	if len(a.agent.restarts) != 0 {
		t.Errorf("the agent was restarted for a model it never got: %v", a.agent.restarts)
	}
	// A config without the section: the same, with its reason.
	if err := os.WriteFile(a.cfg.VoiceConfig, []byte("[memory]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := a.post("/admin/smart-mode", `{"enabled":false}`); code != 200 ||
		!strings.HasSuffix(body, `"warning":"Saved, but the agent's model was not changed: provider section not found"}`) || a.modes.SmartMode() {
		t.Errorf("%d %s (smart mode %v)", code, body, a.modes.SmartMode())
	}
}

func TestState(t *testing.T) {
	a := newAdminEnv(t, nil)
	if code, body := a.post("/admin/state", `{"state":"story_time","device_id":"d"}`); code != 200 || body != `{"ok":true,"state":"story_time","device_pushed":true}` {
		t.Errorf("%d %s", code, body)
	}
	for _, bad := range []string{`{"state":"Story_Time"}`, `{"state":""}`, `{"state":"party"}`} {
		if code, body := a.post("/admin/state", bad); code != 400 || body != `{"detail":"state must be one of ('idle', 'talk', 'story_time', 'security', 'sleep', 'dance')"}` {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if code, _ := a.post("/admin/state", `{}`); code != 422 {
		t.Errorf("missing state: %d", code)
	}
	if got := a.calls(); len(got) != 1 || got[0] != `set-state {"device_id":"d","state":"story_time"}` {
		t.Errorf("calls %q", got)
	}
}

func TestPersona(t *testing.T) {
	a := newAdminEnv(t, nil)
	code, body := a.post("/admin/persona", `{"file":"SOUL.md","content":"You are Dotty. 🤖"}`)
	path := filepath.Join(a.cfg.Workspace, "SOUL.md")
	if code != 200 || body != `{"ok":true,"file":"`+path+`","resolved":"`+path+`","bytes":16}` {
		t.Fatalf("%d %s", code, body)
	}
	if b, _ := os.ReadFile(path); string(b) != "You are Dotty. 🤖" || a.agent.rotated != 1 {
		t.Errorf("file %q, rotations %d", b, a.agent.rotated)
	}
	// A symlink inside the workspace is followed.
	inside := filepath.Join(a.cfg.Workspace, "real", "USER.md")
	os.MkdirAll(filepath.Dir(inside), 0o700)
	os.WriteFile(inside, []byte("old"), 0o600)
	os.Symlink(inside, filepath.Join(a.cfg.Workspace, "USER.md"))
	if code, body := a.post("/admin/persona", `{"file":"USER.md","content":"new"}`); code != 200 || !strings.Contains(body, `"resolved":"`+inside+`"`) {
		t.Errorf("inside link: %d %s", code, body)
	}
	if b, _ := os.ReadFile(inside); string(b) != "new" {
		t.Errorf("link target %q", b)
	}
	// Links leaving the workspace and names off the list change nothing.
	outside := filepath.Join(a.dir, "outside.md")
	os.WriteFile(outside, []byte("keep"), 0o600)
	os.Symlink(outside, filepath.Join(a.cfg.Workspace, "TOOLS.md"))
	os.Symlink("../outside-dangling.md", filepath.Join(a.cfg.Workspace, "MEMORY.md"))
	for _, tt := range []struct{ body, detail string }{
		{`{"file":"TOOLS.md","content":"x"}`, "persona file resolves outside ZEROCLAW_WORKSPACE"},
		{`{"file":"MEMORY.md","content":"x"}`, "persona file resolves outside ZEROCLAW_WORKSPACE"},
		{`{"file":"../outside.md","content":"x"}`, "file must be one of ['AGENTS.md', 'BOOTSTRAP.md', 'HEARTBEAT.md', 'IDENTITY.md', 'MEMORY.md', 'SOUL.md', 'TOOLS.md', 'USER.md']"},
		{`{"file":"soul.md","content":"x"}`, "file must be one of"},
	} {
		if code, body := a.post("/admin/persona", tt.body); code != 400 || !strings.Contains(body, tt.detail) {
			t.Errorf("%s: %d %s", tt.body, code, body)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "outside-dangling.md")); err == nil {
		t.Error("dangling link target created")
	}
	// A link through a symlinked directory: the path reads as inside, the
	// directory leads out.
	outDir := filepath.Join(a.dir, "outside-dir")
	os.MkdirAll(outDir, 0o700)
	os.Symlink(outDir, filepath.Join(a.cfg.Workspace, "sub"))
	os.Symlink("sub/escaped.md", filepath.Join(a.cfg.Workspace, "IDENTITY.md"))
	if code, body := a.post("/admin/persona", `{"file":"IDENTITY.md","content":"x"}`); code != 400 || !strings.Contains(body, "persona file resolves outside ZEROCLAW_WORKSPACE") {
		t.Errorf("link through a symlinked directory: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(outDir, "escaped.md")); err == nil {
		t.Error("a write escaped the workspace through a symlinked directory")
	}
	if code, _ := a.post("/admin/persona", `{"file":"SOUL.md"}`); code != 422 {
		t.Errorf("missing content: %d", code)
	}
	// Temporary files a crash left behind are removed at start.
	stale := filepath.Join(a.cfg.Workspace, ".SOUL.md.0a1b2c3d4e5f.new")
	os.WriteFile(stale, []byte("half"), 0o600)
	NewHandler(a.cfg)
	if _, err := os.Stat(stale); err == nil {
		t.Error("stale temporary file kept")
	}
	if entries, _ := os.ReadDir(a.cfg.Workspace); len(entries) == 0 {
		t.Error("workspace emptied")
	}
}

const profileTOML = `[providers]
fallback = "custom:https://openrouter.ai/api/v1"

[providers.models."local"]
model = "qwen3.5:4b"

[providers.models."custom:https://openrouter.ai/api/v1"]
model = "anthropic/claude-sonnet-4-6"
`

func TestModel(t *testing.T) {
	a := newAdminEnv(t, nil)
	if code, body := a.post("/admin/model", `{"daemon":"voice","model":"x"}`); code != 404 || body != `{"detail":"config not found: `+a.cfg.VoiceConfig+`"}` {
		t.Errorf("missing config: %d %s", code, body)
	}
	os.WriteFile(a.cfg.VoiceConfig, []byte(legacyTOML), 0o600)
	for _, tt := range []struct {
		body   string
		status int
		detail string
	}{
		{`{"daemon":"telegram","model":"x"}`, 400, `daemon must be one of ['discord', 'voice']`},
		{`{"daemon":"voice","model":"bad model\"\n[x]"}`, 400, `model id has invalid chars`},
		{`{"daemon":"voice","model":""}`, 400, `model id has invalid chars`},
	} {
		if code, body := a.post("/admin/model", tt.body); code != tt.status || body != `{"detail":"`+strings.ReplaceAll(tt.detail, `"`, `\"`)+`"}` {
			t.Errorf("%s: %d %s", tt.body, code, body)
		}
	}
	if b, _ := os.ReadFile(a.cfg.VoiceConfig); string(b) != legacyTOML {
		t.Error("a refused change touched the config")
	}
	code, body := a.post("/admin/model", `{"daemon":"voice","model":"openai/gpt-5.1:free"}`)
	if code != 200 || body != `{"ok":true,"daemon":"voice","model":"openai/gpt-5.1:free","config":"`+a.cfg.VoiceConfig+`","restart":"zeroclaw-bridge"}` {
		t.Errorf("%d %s", code, body)
	}
	if b, _ := os.ReadFile(a.cfg.VoiceConfig); !strings.Contains(string(b), `model = "openai/gpt-5.1:free"  # voice`) || !strings.Contains(string(b), `model = "keep-me"`) {
		t.Errorf("config:\n%s", b)
	}
	// Discord: its own file, its unit restarted.
	os.WriteFile(a.cfg.DiscordConfig, []byte(legacyTOML), 0o600)
	if code, _ := a.post("/admin/model", `{"daemon":"discord","model":"m1"}`); code != 200 || len(a.units) != 1 || a.units[0] != "zeroclaw-discord" {
		t.Errorf("discord: %d, units %v", code, a.units)
	}
	if len(a.agent.restarts) != 1 {
		t.Errorf("agent restarts %v", a.agent.restarts)
	}
	// A config without the section answers 500 and is left alone.
	os.WriteFile(a.cfg.DiscordConfig, []byte("[memory]\nmodel = \"x\"\n"), 0o600)
	if code, body := a.post("/admin/model", `{"daemon":"discord","model":"m2"}`); code != 500 || body != `{"detail":"provider section not found"}` {
		t.Errorf("%d %s", code, body)
	}
}

func TestModelProfiles(t *testing.T) {
	a := newAdminEnv(t, func(c *Config) { c.LocalProfileKey = "local" })
	os.WriteFile(a.cfg.VoiceConfig, []byte(profileTOML), 0o600)
	if code, body := a.post("/admin/model", `{"daemon":"voice","model":"qwen3.5:4b"}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	b, _ := os.ReadFile(a.cfg.VoiceConfig)
	if !strings.Contains(string(b), `fallback = "local"`) {
		t.Errorf("fallback not switched:\n%s", b)
	}
	if code, _ := a.post("/admin/model", `{"daemon":"voice","model":"google/gemini-3-pro"}`); code != 200 {
		t.Fatal(code)
	}
	b, _ = os.ReadFile(a.cfg.VoiceConfig)
	want := strings.Replace(profileTOML, `model = "anthropic/claude-sonnet-4-6"`, `model = "google/gemini-3-pro"`, 1)
	if string(b) != want {
		t.Errorf("config:\n%s\nwant:\n%s", b, want)
	}
	a2 := newAdminEnv(t, func(c *Config) { c.LocalProfileKey = "local"; c.CloudProfileKey = "missing" })
	os.WriteFile(a2.cfg.VoiceConfig, []byte(profileTOML), 0o600)
	if code, body := a2.post("/admin/model", `{"daemon":"voice","model":"m"}`); code != 500 || body != `{"detail":"profile section not found: [providers.models.\"missing\"]"}` {
		t.Errorf("%d %s", code, body)
	}
}

func TestSafety(t *testing.T) {
	a := newAdminEnv(t, nil)
	n := len(DefaultAllowList)
	code, body := a.post("/admin/safety", `{"action":"add","tool":"camera.take_photo"}`)
	if code != 200 || body != `{"ok":true,"action":"add","tool":"camera.take_photo","size_before":`+strconv.Itoa(n)+`,"size_after":`+strconv.Itoa(n+1)+`,"restart":"zeroclaw-bridge"}` {
		t.Fatalf("%d %s", code, body)
	}
	a.post("/admin/safety", `{"action":"add","tool":"camera.take_photo"}`) // idempotent
	a.post("/admin/safety", `{"action":"remove","tool":"get_device_status"}`)
	list := a.cfg.Safety.List()
	if len(list) != n || list[0] != "audio_speaker.set_volume" || list[1] != "camera.take_photo" {
		t.Errorf("live list %v", list)
	}
	b, _ := os.ReadFile(filepath.Join(a.dir, "state", "tool-allowlist"))
	if !strings.HasPrefix(string(b), "audio_speaker.set_volume\ncamera.take_photo\nrobot.create_reminder\n") {
		t.Errorf("file:\n%s", b)
	}
	reloaded, err := NewSafety(filepath.Join(a.dir, "state", "tool-allowlist"))
	if err != nil || strings.Join(reloaded.List(), ",") != strings.Join(list, ",") {
		t.Errorf("reload %v %v", reloaded.List(), err)
	}
	for _, tt := range []struct{ body, detail string }{
		{`{"action":"toggle","tool":"x"}`, "action must be 'add' or 'remove'"},
		{`{"action":"add","tool":"rm -rf"}`, "tool name has invalid chars"},
		{`{"action":"add","tool":"../x"}`, "tool name has invalid chars"},
	} {
		if code, body := a.post("/admin/safety", tt.body); code != 400 || body != `{"detail":"`+tt.detail+`"}` {
			t.Errorf("%s: %d %s", tt.body, code, body)
		}
	}
}

// TestKidModeFlipsDenyListLive: the permission policy reads kid mode from
// the same store the route writes, so the next permission request sees it.
func TestKidModeFlipsDenyListLive(t *testing.T) {
	a := newAdminEnv(t, nil)
	policy := &agentconn.Policy{KidMode: a.modes.KidMode, AllowLive: a.cfg.Safety.List}
	photo := agentconn.PermissionRequest{Tool: "self.camera.take_photo", ToolCallID: "call-1"}
	if d := policy.Decide(context.Background(), photo); d != agentconn.Deny {
		t.Fatalf("kid mode on by default: %v", d)
	}
	a.post("/admin/kid-mode", `{"enabled":false}`)
	if d := policy.Decide(context.Background(), photo); d != agentconn.Allow {
		t.Errorf("after kid mode off: %v", d)
	}
	a.post("/admin/kid-mode", `{"enabled":true}`)
	if d := policy.Decide(context.Background(), photo); d != agentconn.Deny {
		t.Errorf("after kid mode on: %v", d)
	}
}

func TestReconcileAgentModel(t *testing.T) {
	a := newAdminEnv(t, nil)
	h := NewHandler(a.cfg)
	os.WriteFile(a.cfg.VoiceConfig, []byte(legacyTOML), 0o600)
	h.ReconcileAgentModel(false) // DefaultModel qwen3.5:4b differs: rewritten, no restart
	b, _ := os.ReadFile(a.cfg.VoiceConfig)
	if !strings.Contains(string(b), `model = "qwen3.5:4b"  # voice`) || len(a.agent.restarts) != 0 {
		t.Errorf("reconcile off:\n%s\nrestarts %v", b, a.agent.restarts)
	}
	fi1, _ := os.Stat(a.cfg.VoiceConfig)
	h.ReconcileAgentModel(false) // already right: untouched
	if fi2, _ := os.Stat(a.cfg.VoiceConfig); !fi2.ModTime().Equal(fi1.ModTime()) {
		t.Error("a matching config was rewritten")
	}
	h.ReconcileAgentModel(true)
	if b, _ := os.ReadFile(a.cfg.VoiceConfig); !strings.Contains(string(b), `model = "anthropic/claude-sonnet-4-6"  # voice`) {
		t.Errorf("reconcile on:\n%s", b)
	}
	t1 := newAdminEnv(t, func(c *Config) { c.Provider = "tier1slim" })
	os.WriteFile(t1.cfg.VoiceConfig, []byte(legacyTOML), 0o600)
	NewHandler(t1.cfg).ReconcileAgentModel(true)
	if b, _ := os.ReadFile(t1.cfg.VoiceConfig); string(b) != legacyTOML {
		t.Error("the tier1slim path touched the agent config")
	}
}

func TestReconcileProfiles(t *testing.T) {
	a := newAdminEnv(t, func(c *Config) { c.LocalProfileKey = "local" })
	os.WriteFile(a.cfg.VoiceConfig, []byte(profileTOML), 0o600)
	h := NewHandler(a.cfg)
	h.ReconcileAgentModel(true) // cloud profile already the fallback with the smart model
	if b, _ := os.ReadFile(a.cfg.VoiceConfig); string(b) != profileTOML {
		t.Errorf("matching profile config rewritten:\n%s", b)
	}
	h.ReconcileAgentModel(false)
	if b, _ := os.ReadFile(a.cfg.VoiceConfig); !strings.Contains(string(b), `fallback = "local"`) {
		t.Errorf("fallback not switched to the local profile:\n%s", b)
	}
}

// A web page on the bridge's host reaches it from a loopback peer; the
// guard still refuses its forged origin, a rebinding Host and a body that
// is not declared JSON, and nothing changes.
func TestAdminRefusesBrowserRequests(t *testing.T) {
	a := newAdminEnv(t, nil)
	const foreign = `{"detail":"admin requests must come from this host, not a web page or another name"}`
	for _, tt := range []struct {
		name    string
		headers []string
		code    int
		body    string
	}{
		{"forged origin", []string{"Origin", "http://evil.example"}, 403, foreign},
		{"null origin", []string{"Origin", "null"}, 403, foreign},
		{"rebinding host", []string{"Host", "evil.example:8080"}, 403, foreign},
		{"rebinding host and origin", []string{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"}, 403, foreign},
		{"text/plain", []string{"Content-Type", "text/plain"}, 415, `{"detail":"admin requests must be application/json"}`},
		{"form", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, `{"detail":"admin requests must be application/json"}`},
		{"no content type", []string{"Content-Type", ""}, 415, `{"detail":"admin requests must be application/json"}`},
	} {
		code, body := a.do("/admin/kid-mode", `{"enabled":false}`, "127.0.0.1:5555", tt.headers...)
		if code != tt.code || body != tt.body {
			t.Errorf("%s: %d %s", tt.name, code, body)
		}
	}
	if !a.modes.KidMode() {
		t.Fatal("a refused request changed kid mode")
	}
	for _, ok := range [][]string{
		{"Host", "localhost:8080", "Origin", "http://localhost:8080"},
		{"Host", "[::1]:8080", "Content-Type", "application/json; charset=utf-8"},
	} {
		if code, body := a.do("/admin/kid-mode", `{"enabled":true}`, "127.0.0.1:5555", ok...); code != 200 {
			t.Errorf("%v: %d %s", ok, code, body)
		}
	}
}

// Run restarts a queued unit RestartDelay after it was asked for, and a
// restart still waiting at shutdown is dropped rather than run late.
func TestRunRestartsQueuedUnits(t *testing.T) {
	clk := clockwork.NewFakeClock()
	a := newAdminEnv(t, func(c *Config) { c.RestartUnit, c.Clock = nil, clk })
	ran := make(chan string, 4)
	a.h.exec = func(_ context.Context, name string, args ...string) (string, error) {
		ran <- strings.Join(append([]string{name}, args...), " ")
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.h.Run(runCtx) }()

	a.h.cfg.RestartUnit("zeroclaw-discord")
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("Run never waited for the restart delay:", err)
	}
	clk.Advance(2*time.Second - time.Millisecond)
	select {
	case got := <-ran:
		t.Fatalf("%q ran before the delay was over", got)
	default:
	}
	clk.Advance(time.Millisecond)
	select {
	case got := <-ran:
		if got != "systemctl restart zeroclaw-discord" {
			t.Errorf("ran %q", got)
		}
	case <-ctx.Done():
		t.Fatal("the restart never ran")
	}

	a.h.cfg.RestartUnit("zeroclaw-discord")
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after its context ended")
	}
	select {
	case got := <-ran:
		t.Errorf("%q ran after shutdown", got)
	default:
	}
}

// TestUnsavableStateFilesAreHealthConditions: a mode state file and the
// tool allow list that cannot be saved are /health problems, each logged
// once with its error once however often it is tried. Once their
// directory can be made, its re-check clears them, saying so once each,
// without a save. A cause that is not the directory's (a directory in
// the file's place) is not re-checked: the next save that succeeds
// clears it.
func TestUnsavableStateFilesAreHealthConditions(t *testing.T) {
	blocker := testkit.Blocker(t, filepath.Join(t.TempDir(), "state"))
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	conds := healthtest.New(t, nil)
	modes := NewModes(ModesConfig{KidStatePath: filepath.Join(blocker, "kid-mode"), SmartStatePath: filepath.Join(blocker, "smart-mode"),
		Logger: log, Health: conds.Conditions})
	safety, _ := NewSafety(filepath.Join(blocker, "tool-allowlist")) // unreadable: the default list
	a := &adminEnv{e: echo.New(), modes: modes}
	a.e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	NewHandler(Config{Modes: modes, Safety: safety, Robot: xiaozhi.New(xiaozhi.Config{}), Logger: log, Health: conds.Conditions}).Routes(a.e)
	for range 2 {
		if code, body := a.post("/admin/kid-mode", `{"enabled":false}`); code != 500 || !strings.Contains(body, "could not save kid mode") {
			t.Errorf("kid mode: %d %s", code, body)
		}
		if code, body := a.post("/admin/safety", `{"action":"add","tool":"camera.take_photo"}`); code != 500 || !strings.Contains(body, "could not save the tool allow list") {
			t.Errorf("safety: %d %s", code, body)
		}
	}
	notDir := "mkdir " + blocker + ": not a directory"
	if got, want := conds.Problems(), []string{"kid mode state: " + notDir, "tool allow list: " + notDir}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems %q, want %q", got, want)
	}
	var lines []string // the saves' lines (reading the kid mode state at start says its own once)
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(l, "cannot stat mode state file") {
			lines = append(lines, l)
		}
	}
	testkit.SaidOnce(t, lines, "not a directory", "[ERROR] cannot save the kid mode state", "[ERROR] cannot save the tool allow list")
	// The directory can be made: the re-check clears both, no save needed.
	conds.Recovers(t, 2, func() error { logs.Reset(); return os.Remove(blocker) })
	for _, want := range []string{"[INFO]  kid mode state recovered: its re-check passed", "[INFO]  tool allow list recovered: its re-check passed"} {
		if strings.Count(logs.String(), want) != 1 {
			t.Errorf("want one %q line, got:\n%s", want, logs.String())
		}
	}
	logs.Reset()
	if code, body := a.post("/admin/kid-mode", `{"enabled":false}`); code != 200 {
		t.Errorf("kid mode after the fix: %d %s", code, body)
	}
	if code, body := a.post("/admin/safety", `{"action":"add","tool":"camera.take_photo"}`); code != 200 {
		t.Errorf("safety after the fix: %d %s", code, body)
	}
	if conds.Problems() != nil || strings.Contains(logs.String(), "saved again") {
		t.Errorf("problems %q; the saves after the re-check have no recovery to say:\n%s", conds.Problems(), logs.String())
	}

	// A directory in the kid mode file's place: the file's own cause, not
	// re-checked; the save after its removal clears it.
	kid := filepath.Join(blocker, "kid-mode")
	if err := os.Remove(kid); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(kid, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kid, "x"), nil, 0o600); err != nil { // a rename cannot replace it
		t.Fatal(err)
	}
	if code, _ := a.post("/admin/kid-mode", `{"enabled":true}`); code != 500 {
		t.Errorf("kid mode over a directory: %d", code)
	}
	conds.Recheck(t)
	if got := conds.Problems(); len(got) != 1 || !strings.HasPrefix(got[0], "kid mode state: ") {
		t.Errorf("problems %q after a re-check, want the kid mode state's kept", got)
	}
	if err := os.RemoveAll(kid); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if code, body := a.post("/admin/kid-mode", `{"enabled":true}`); code != 200 {
		t.Errorf("kid mode after the fix: %d %s", code, body)
	}
	if conds.Problems() != nil || strings.Count(logs.String(), "[INFO]  kid mode state saved again") != 1 {
		t.Errorf("problems %q, logs:\n%s", conds.Problems(), logs.String())
	}
}

// TestReadOnlyStateDirectoryRechecked: a state directory on a read-only
// file system (root cannot write it either) is the state files'
// condition, re-checked by probing the directory: it clears once the file
// system is writable again, without a save.
func TestReadOnlyStateDirectoryRechecked(t *testing.T) {
	if !testkit.InMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 1<<20)
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	conds := healthtest.New(t, nil)
	modes := NewModes(ModesConfig{KidStatePath: filepath.Join(mnt, "kid-mode"), SmartStatePath: filepath.Join(mnt, "smart-mode"),
		Logger: log, Health: conds.Conditions})
	safety, _ := NewSafety(filepath.Join(mnt, "tool-allowlist"))
	a := &adminEnv{e: echo.New(), modes: modes}
	a.e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	NewHandler(Config{Modes: modes, Safety: safety, Robot: xiaozhi.New(xiaozhi.Config{}), Logger: log, Health: conds.Conditions}).Routes(a.e)

	testkit.Remount(t, mnt, true)
	for range 2 {
		if code, _ := a.post("/admin/smart-mode", `{"enabled":false}`); code != 500 {
			t.Errorf("smart mode on a read-only file system: %d", code)
		}
		if code, _ := a.post("/admin/safety", `{"action":"add","tool":"camera.take_photo"}`); code != 500 {
			t.Errorf("safety on a read-only file system: %d", code)
		}
	}
	got := conds.Problems()
	if len(got) != 2 || !strings.HasPrefix(got[0], "smart mode state: ") || !strings.HasPrefix(got[1], "tool allow list: ") ||
		!strings.HasSuffix(got[0], "read-only file system") || !strings.HasSuffix(got[1], "read-only file system") {
		t.Errorf("problems %q, want the smart mode state's and the allow list's, read-only", got)
	}
	conds.Recovers(t, 2, func() error { testkit.Remount(t, mnt, false); logs.Reset(); return nil })
	if n := strings.Count(logs.String(), "recovered: its re-check passed"); n != 2 {
		t.Errorf("%d recovery lines, want 2:\n%s", n, logs.String())
	}
}
