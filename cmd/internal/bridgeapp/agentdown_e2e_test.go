package bridgeapp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
)

// An agent that exits at once: /api/message answers the offline fallback
// after the unavailable grace, not after the 90 s turn timeout, and the
// next turn answers at once. Logged and counted as agent_unavailable.
func TestBridgeBrokenAgentFailsFast(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "zeroclaw")
	script := "#!/bin/sh\necho 'error: config file missing' >&2\nexit 1\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil { // #nosec G306 -- a test's executable
		t.Fatal(err)
	}
	p := startBridge(t, "ZEROCLAW_BIN="+agent)
	p.health("the agent in backoff", func(h map[string]any) bool {
		r, _ := agentOf(h)["restarts"].(float64)
		return r >= 1
	})
	for i := range 2 {
		start := time.Now()
		code, body := p.post("/api/message", `{"content":"hi","session_id":"s"}`)
		took := time.Since(start)
		var out struct{ Response string }
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil || out.Response != voice.FallbackOffline {
			t.Fatalf("turn %d: %d %s, want the offline fallback", i, code, body)
		}
		t.Logf("turn %d answered the offline fallback after %v", i, took.Round(time.Millisecond))
	}
	// Each turn is recorded just after its reply is sent.
	var metrics string
	testkit.WaitFor(t, 5*time.Second, "agent_unavailable counted twice", func() bool {
		_, metrics = p.get("/metrics")
		return strings.Contains(metrics, `dotty_request_errors_total{endpoint="message",kind="agent_unavailable"} 2`)
	})
	// Only the first turn waited out the grace: the log says so once,
	// before both turns' failures (stderr keeps the order). Times are
	// printed above, not asserted.
	testkit.WaitFor(t, 5*time.Second, "both failures logged", func() bool {
		return strings.Count(p.log(), "kind=agent_unavailable") >= 2
	})
	if n := strings.Count(p.log(), "agent still down after its grace"); n != 1 {
		t.Errorf("%d turns waited out the unavailable grace, want only the first", n)
	}
	if _, err := p.stop(syscall.SIGTERM); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
