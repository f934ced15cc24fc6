package bridgeapp

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestBridgeAdminEndToEnd: the admin routes on the real binary, from a
// loopback client: kid mode flips the state file and pushes the toggle; a
// model change rewrites the agent's config and restarts the supervised
// child, whose next turn works.
func TestBridgeAdminEndToEnd(t *testing.T) {
	xz := xiaozhitest.New(t)
	p := startBridge(t, xiaozhiEnv(xz)...)
	_, h := p.health("the demo agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	pid := agentOf(h)["pid"]

	if code, body := p.post("/admin/kid-mode", `{"enabled":false}`); code != 200 || body != `{"ok":true,"enabled":false,"device_pushed":true,"hot_applied":true}` {
		t.Fatalf("kid mode: %d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(p.stateDir, "kid-mode")); string(b) != "false" {
		t.Errorf("kid state file %q", b)
	}
	if _, m := p.get("/metrics"); !strings.Contains(m, "\ndotty_kid_mode_active 0\n") {
		t.Error("dotty_kid_mode_active not 0")
	}
	if calls := xz.CallsTo("/xiaozhi/admin/set-toggle"); len(calls) != 1 || calls[0].Body["name"] != "kid_mode" {
		t.Errorf("set-toggle calls %+v", calls)
	}

	cfgPath := filepath.Join(p.stateDir, "config.toml")
	sample := "[providers.models.\"custom:https://openrouter.ai/api/v1\"]\nmodel = \"old/model\"\n"
	if err := os.WriteFile(cfgPath, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := p.post("/admin/model", `{"daemon":"voice","model":"new/model"}`); code != 200 || !strings.Contains(body, `"restart":"zeroclaw-bridge"`) {
		t.Fatalf("model: %d %s", code, body)
	}
	if b, _ := os.ReadFile(cfgPath); !strings.Contains(string(b), `model = "new/model"`) {
		t.Errorf("config:\n%s", b)
	}
	p.health("a new agent child", func(h map[string]any) bool {
		return agentOf(h)["state"] == "ready" && agentOf(h)["pid"] != pid
	})
	if code, body := p.post("/api/message", `{"content":"still there?"}`); code != http.StatusOK || !strings.Contains(body, "still there?") {
		t.Errorf("turn after the restart: %d %s", code, body)
	}
	// Traversal changes nothing.
	if code, _ := p.post("/admin/persona", `{"file":"../../etc/passwd","content":"x"}`); code != 400 {
		t.Errorf("traversal: %d", code)
	}
}

// TestBridgeTier1SlimStartupPush: with the tier1slim provider the bridge
// tells xiaozhi the stored smart mode's model at start (A3), and a smart
// mode flip pushes set-toggle, then set-tier1slim-model.
func TestBridgeTier1SlimStartupPush(t *testing.T) {
	xz := xiaozhitest.New(t)
	p := startBridge(t, append(xiaozhiEnv(xz), "DOTTY_VOICE_PROVIDER=tier1slim",
		"TIER1SLIM_LOCAL_MODEL=qwen-local", "TIER1SLIM_LOCAL_API_KEY=", "OPENROUTER_API_KEY=sk-or-e2e")...)
	testkit.WaitFor(t, 5*time.Second, "the start-up push", func() bool { return len(xz.CallsTo("/xiaozhi/admin/set-tier1slim-model")) == 1 })
	if c := xz.CallsTo("/xiaozhi/admin/set-tier1slim-model")[0]; c.Body["model"] != "qwen-local" || c.Body["url"] != "http://localhost:8080/v1" {
		t.Errorf("start-up push %s", c.Raw)
	}
	code, body := p.post("/admin/smart-mode", `{"enabled":true}`)
	if code != 200 || !strings.Contains(body, `"swap_ok":true,"provider":"tier1slim"`) {
		t.Fatalf("%d %s", code, body)
	}
	var paths []string
	for _, c := range xz.Calls() {
		paths = append(paths, c.Path)
	}
	if strings.Join(paths, " ") != "/xiaozhi/admin/set-tier1slim-model /xiaozhi/admin/set-toggle /xiaozhi/admin/set-tier1slim-model" {
		t.Errorf("calls %v", paths)
	}
	if last := xz.Calls()[2]; last.Body["api_key"] != "sk-or-e2e" || last.Body["model"] != "anthropic/claude-sonnet-4-6" {
		t.Errorf("smart push %s", last.Raw)
	}
	if strings.Contains(p.log(), "sk-or-e2e") {
		t.Error("the API key appears in the log")
	}
}
