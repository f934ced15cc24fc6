package acp

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: bridge.py's handshake timeout and session rotation
// with the bridge's graces and bounds (moved from cmd's defaults test,
// which now takes them from here), valid as they are.
func TestDefaultSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{InitTimeout: 10 * time.Second, CancelGrace: 2 * time.Second,
		StopGrace: 2 * time.Second, UnavailableGrace: 2 * time.Second, BackoffInitial: 200 * time.Millisecond, BackoffMax: 30 * time.Second,
		HealthyReset: time.Minute, StderrLinesPerSecond: 200},
		cmp.Comparer(func(a, b agentconn.Protocol) bool { return a == b }))
	testkit.CheckDefaults(t, "DefaultPoolConfig", DefaultPoolConfig(), PoolConfig{KeyMode: KeyPerSession, MaxSessions: 8,
		SessionIdle: 300 * time.Second, SessionMaxTurns: 50, SessionMaxAge: 1800 * time.Second, SessionQueue: 64})
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	c := DefaultConfig()
	c.CancelGrace, c.BackoffInitial = 0, time.Hour
	testkit.CheckFieldErrors(t, "Config", c.Validate(),
		"CancelGrace 0s: want more than 0", "BackoffInitial 1h0m0s: want at most BackoffMax")
	p := DefaultPoolConfig()
	p.KeyMode, p.SessionIdle, p.SessionQueue = "per-caller", -time.Second, 0
	testkit.CheckFieldErrors(t, "PoolConfig", p.Validate(),
		"KeyMode per-caller: want session_id or shared", "SessionIdle -1s: want more than 0", "SessionQueue 0: want at least 1")
}

// TestDefaultsPerField: a field left zero takes its default on its own;
// the fields set are kept, and the derived ones follow them.
func TestDefaultsPerField(t *testing.T) {
	p := PoolConfig{MaxSessions: 300, SessionIdle: 2 * time.Second}.withDefaults()
	want := DefaultPoolConfig()
	want.MaxSessions, want.SessionIdle, want.MaxKeys, want.ReapInterval = 300, 2*time.Second, 1200, time.Second
	p.Logger, p.Clock = nil, nil
	if d := cmp.Diff(p, want); d != "" {
		t.Errorf("PoolConfig (-got +want):\n%s", d)
	}
	c := Config{Command: "agent", CancelGrace: time.Second}.withDefaults()
	if c.CancelGrace != time.Second || c.InitTimeout != 10*time.Second || c.WriteTimeout != c.InitTimeout {
		t.Errorf("Config.withDefaults() = %+v", c)
	}
}
