package acp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent's first start is not an outage, however much longer than the
// unavailable grace it takes: a turn arriving while it starts waits for it
// within its own ctx instead of answering ErrAgentUnavailable.
func TestFirstStartIsWaitedFor(t *testing.T) {
	cfg := fakeChild("echo")
	// A wrapper that takes half a second before it becomes the agent.
	script := filepath.Join(t.TempDir(), "slow-start")
	quoted := "'" + strings.ReplaceAll(cfg.Command, "'", `'\''`) + "'"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 0.5\nexec "+quoted+" \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.Command = script
	cfg.UnavailableGrace = 10 * time.Millisecond
	h := startHarness(t, cfg, PoolConfig{})
	res, _, err := h.Turn("k", "first")
	if errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("the first start was cut short: %v", err)
	}
	if err != nil || res.Text != echoReply("first") {
		t.Fatalf("first turn: %q, %v", res.Text, err)
	}
	if n := h.sup.Health().Restarts; n != 0 {
		t.Errorf("%d restarts; the wrapper should have started once", n)
	}
}
