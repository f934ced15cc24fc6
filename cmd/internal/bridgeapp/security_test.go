package bridgeapp

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// The agent child does not get the bridge's own secrets; it keeps what it
// needs (its provider key, its workspace). Read from /proc, as an agent
// with a shell tool would.
func TestAgentEnvironmentHoldsNoBridgeSecrets(t *testing.T) {
	if _, err := os.Stat(fallbackZeroclaw); err == nil {
		t.Skip("a real zeroclaw is installed at " + fallbackZeroclaw)
	}
	p := startBridge(t, "SIDECAR_TOKEN=sidecar-secret", "DOTTY_DASHBOARD_PASS=dash-secret", "DOTTY_ADMIN_TOKEN=admin-secret",
		"STT_API_KEY=stt-secret", "STT_URL=http://127.0.0.1:9/v1/audio/transcriptions", "OPENROUTER_API_KEY=provider-key")
	_, h := p.health("agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	pid, _ := agentOf(h)["pid"].(float64)
	if pid <= 0 {
		t.Fatalf("no agent pid in %v", h)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			vars[k] = v
		}
	}
	for _, secret := range []string{"SIDECAR_TOKEN", "DOTTY_DASHBOARD_PASS", "DOTTY_ADMIN_TOKEN", "STT_API_KEY", "STT_URL", "CONVO_LOG_DIR"} {
		if v, ok := vars[secret]; ok {
			t.Errorf("agent environment has %s=%q", secret, v)
		}
	}
	for _, keep := range []string{"OPENROUTER_API_KEY", "ZEROCLAW_WORKSPACE", "PATH"} {
		if _, ok := vars[keep]; !ok {
			t.Errorf("agent environment lacks %s", keep)
		}
	}
	if strings.Contains(string(env), "-secret") {
		t.Error("a secret value reached the agent under another name")
	}
}

// On the binary: a page on the bridge's host (loopback peer) cannot turn
// kid mode off with a forged origin, a rebinding Host or a text/plain body.
func TestAdminRefusesCrossSiteOnTheBinary(t *testing.T) {
	p := startBridge(t)
	post := func(host, origin, ctype string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/admin/kid-mode", strings.NewReader(`{"enabled":false}`))
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Content-Type", ctype)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		host, origin, ctype string
		want                int
	}{
		{"", "http://evil.example", "application/json", 403},
		{"evil.example:8080", "", "application/json", 403},
		{"", "", "text/plain", 415},
	} {
		if got := post(tt.host, tt.origin, tt.ctype); got != tt.want {
			t.Errorf("host %q origin %q type %q: %d, want %d", tt.host, tt.origin, tt.ctype, got, tt.want)
		}
	}
	if b, err := os.ReadFile(p.stateDir + "/kid-mode"); err == nil && strings.TrimSpace(string(b)) == "false" {
		t.Error("a refused request turned kid mode off")
	}
	if got := post("", "", "application/json"); got != 200 {
		t.Errorf("a plain local request: %d", got)
	}
}

// kill -9 of the bridge while 8 writers store memories: every write it
// answered 204 is in brain.db once the bridge has started again.
func TestAcknowledgedMemoriesSurviveKill9(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory", "brain.db")
	p := startBridge(t, "VOICE_MEMORY_DB="+db)
	p.health("ready", func(map[string]any) bool { return true })
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"fact":"writer %d fact %d"}`, w, i)
				resp, err := httpClient.Post("http://"+p.addr+"/api/voice/remember", "application/json", strings.NewReader(body))
				if err != nil {
					return // the bridge is gone
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					acked.Add(1)
				}
			}
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "some acknowledged writes", func() bool { return acked.Load() >= 200 })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	n := acked.Load()

	startBridge(t, "VOICE_MEMORY_DB="+db)
	var rows int
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("%d rows", n), func() bool {
		r, err := memstoretest.TryRows(db)
		rows = len(r)
		return err == nil && int64(rows) >= n
	})
	t.Logf("%d writes acknowledged before kill -9, %d rows after restart", n, rows)
}

// On the binary: a persona write cannot leave the workspace through a
// symlinked directory, and a local proxy's X-Real-IP or spaced Forwarded
// header naming a LAN client is refused like X-Forwarded-For.
func TestAdminWritesAndHeadersOnTheBinary(t *testing.T) {
	p := startBridge(t)
	ws := filepath.Join(p.stateDir, "workspace")
	outside := t.TempDir()
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/escaped.md", filepath.Join(ws, "USER.md")); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string, headers ...string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/admin/persona", `{"file":"USER.md","content":"pwned"}`); code != 400 {
		t.Errorf("persona write through a symlinked directory: %d, want 400", code)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped.md")); err == nil {
		t.Error("the write escaped the workspace")
	}
	if code := post("/admin/persona", `{"file":"SOUL.md","content":"You are Dotty."}`); code != 200 {
		t.Errorf("plain persona write: %d", code)
	}
	for _, h := range [][]string{{"X-Real-IP", "192.168.1.20"}, {"Forwarded", "For = 192.168.1.20"}} {
		if code := post("/admin/state", `{"state":"idle"}`, h...); code != 403 {
			t.Errorf("%s: %s → %d, want 403", h[0], h[1], code)
		}
	}
}
