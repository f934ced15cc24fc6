package steerable_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
)

// The built-in demo agent's steerable mode, as `zeroclaw-bridge demo-agent
// -protocol steerable` runs it, through the real Supervisor and Pool:
// ready, health, streamed replies quoting the user, history, barge-in and
// the graceful stop by system.shutdown.
func TestDemoAgentSteerable(t *testing.T) {
	// The pool's clock is fake and never advanced, so a barge-in that
	// waited for the cancel's grace would never return.
	h := start(t, setup{mode: "demo", env: []string{"ZCB_STEERTEST_DELAY=30ms"}, cfg: acp.Config{StopGrace: 2 * time.Second},
		pcfg: acp.PoolConfig{Clock: clockwork.NewFakeClock()}})
	health := h.WaitReady()
	if health.Dialect != "steerable" || health.AgentName != demoagent.Name || health.ProtocolVersion != "0.1.0" {
		t.Errorf("health %+v", health)
	}
	prompt := "[User] hello demo"
	res, chunks := h.MustTurn("k", prompt)
	if res.Text != demoagent.Reply(prompt) || strings.Join(chunks, "") != res.Text || len(chunks) < 3 {
		t.Errorf("text %q chunks %q, want %q streamed", res.Text, chunks, demoagent.Reply(prompt))
	}
	second, _ := h.MustTurn("k", "[User] again")
	if second.Text != demoagent.Reply("[User] again") || second.TurnIndex != 1 || second.SessionID != res.SessionID {
		t.Errorf("second turn %+v", second)
	}
	if d := cmp.Diff(h.chats()[1].Messages, msgs(prompt, res.Text, "[User] again")); d != "" {
		t.Errorf("messages (-got +want):\n%s", d)
	}
	took, err := h.BargeIn("k", "[User] a long story please")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("barge-in: %v after %s", err, took)
	}
	t.Logf("barge-in answered after %s", took.Round(time.Millisecond))
	after, _ := h.MustTurn("k", "[User] after")
	if after.SessionID != res.SessionID || after.TurnIndex != 2 {
		t.Errorf("turn after barge-in %+v", after)
	}
	if n := len(h.requests("agent.chat.cancel")); n < 1 {
		t.Error("no agent.chat.cancel sent")
	}
	// Whether the demo agent honoured system.shutdown is read from the
	// log (the ladder says when it had to go further), not from the time.
	t.Logf("stop took %s", h.stop().Round(time.Millisecond))
	if l := h.logs.String(); strings.Contains(l, "did not exit after system.shutdown") {
		t.Error("the demo agent ignored system.shutdown")
	}
}
