package steerable_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
)

// The built-in demo agent's steerable mode, as `zeroclaw-bridge demo-agent
// -protocol steerable` runs it, through the real Supervisor and Pool:
// ready, health, streamed replies quoting the user, history, barge-in and
// the graceful stop by system.shutdown.
func TestDemoAgentSteerable(t *testing.T) {
	h := start(t, setup{mode: "demo", env: []string{"ZCB_STEERTEST_DELAY=30ms"}, cfg: acp.Config{StopGrace: 2 * time.Second}})
	health := h.waitReady()
	if health.Dialect != "steerable" || health.AgentName != demoagent.Name || health.ProtocolVersion != "0.1.0" {
		t.Errorf("health %+v", health)
	}
	prompt := "[User] hello demo"
	res, chunks := h.mustTurn("k", prompt)
	if res.Text != demoagent.Reply(prompt) || strings.Join(chunks, "") != res.Text || len(chunks) < 3 {
		t.Errorf("text %q chunks %q, want %q streamed", res.Text, chunks, demoagent.Reply(prompt))
	}
	second, _ := h.mustTurn("k", "[User] again")
	if second.Text != demoagent.Reply("[User] again") || second.TurnIndex != 1 || second.SessionID != res.SessionID {
		t.Errorf("second turn %+v", second)
	}
	if d := cmp.Diff(h.chats()[1].Messages, msgs(prompt, res.Text, "[User] again")); d != "" {
		t.Errorf("messages (-got +want):\n%s", d)
	}
	took, err := h.bargeIn("k", "[User] a long story please")
	if !errors.Is(err, context.Canceled) || took > 500*time.Millisecond {
		t.Fatalf("barge-in: %v after %s", err, took)
	}
	after, _ := h.mustTurn("k", "[User] after")
	if after.SessionID != res.SessionID || after.TurnIndex != 2 {
		t.Errorf("turn after barge-in %+v", after)
	}
	if n := len(h.requests("agent.chat.cancel")); n < 1 {
		t.Error("no agent.chat.cancel sent")
	}
	if took := h.stop(); took > time.Second {
		t.Errorf("stop took %s", took)
	}
	if l := h.logs.String(); strings.Contains(l, "did not exit after system.shutdown") {
		t.Error("the demo agent ignored system.shutdown")
	}
}
