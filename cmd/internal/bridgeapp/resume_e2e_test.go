package bridgeapp

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestACPConversationSurvivesRestart: the binary drives the ZeroClaw
// stand-in with its session store (this test binary, ZEROCLAW_BIN); a
// conversation survives a kill -9 of the agent and a model change through
// /admin/model (which restarts it): each time the key's next turn resumes
// the same agent session (session/resume), and the agent, asked to
// recall, answers with the earlier turns. /health and the metrics count
// the sessions resumed and none lost.
func TestACPConversationSurvivesRestart(t *testing.T) {
	bin, _, env := acptest.Command("zeroclaw-v1", "ZCB_ACPTEST_STORE="+t.TempDir())
	p := startBridge(t, append([]string{"ZEROCLAW_BIN=" + bin}, env...)...)
	_, h := p.health("the agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	if a := agentOf(h); a["dialect"] != "v1" || a["agent_name"] != "zeroclaw-acp" {
		t.Fatalf("/health agent %v, want the ZeroClaw stand-in", a)
	}
	turn := func(content string) string { t.Helper(); return realTurn(t, p, "kitchen", content) }
	replaced := func(what string, pid any) {
		t.Helper()
		p.health(what, func(h map[string]any) bool { return agentOf(h)["state"] == "ready" && agentOf(h)["pid"] != pid })
	}

	if r := turn("my name is Ada"); !strings.Contains(r, "my name is Ada") {
		t.Fatalf("first turn answered %q", r)
	}
	_, h = p.health("the agent", func(h map[string]any) bool { return agentOf(h)["pid"] != 0.0 })
	pid := agentOf(h)["pid"]
	if err := syscall.Kill(int(pid.(float64)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	replaced("a new agent after the kill", pid)
	if r := turn("do you recall my name?"); !strings.HasPrefix(r, "😊 recall: 1 earlier turns; last: ") || !strings.Contains(r, "my name is Ada") {
		t.Errorf("after the kill the agent answered %q, want the first turn recalled", r)
	}

	// A model change restarts the agent on purpose.
	_, h = p.health("the agent", func(h map[string]any) bool { return agentOf(h)["pid"] != 0.0 })
	pid = agentOf(h)["pid"]
	cfg := filepath.Join(p.stateDir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[providers.models.\"custom:https://openrouter.ai/api/v1\"]\nmodel = \"old/model\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := p.post("/admin/model", `{"daemon":"voice","model":"new/model"}`); code != http.StatusOK {
		t.Fatalf("model change: %d %s", code, body)
	}
	replaced("a new agent after the model change", pid)
	if r := turn("recall once more"); !strings.HasPrefix(r, "😊 recall: 2 earlier turns; last: ") || !strings.Contains(r, "do you recall my name?") {
		t.Errorf("after the model change the agent answered %q, want both earlier turns", r)
	}

	p.restoredSessions("resumed", 2)
	// The agent's stderr is read apart from its answers: its line may come
	// after the turn's answer.
	testkit.Within(testkit.MinWait, func() bool { return strings.Count(p.log(), "acptest: session/resume ") >= 2 })
	if n := strings.Count(p.log(), "acptest: session/resume "); n != 2 {
		t.Errorf("%d session/resume logged by the agent, want 2", n)
	}
}
