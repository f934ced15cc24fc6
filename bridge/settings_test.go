package bridge

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: bridge.py's listener with the bridge's connection,
// body and shutdown bounds (moved from cmd's defaults test, which now
// takes them from here), valid as they are.
func TestDefaultSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{Host: "0.0.0.0", Port: 8080, IdleTimeout: 90 * time.Second,
		BodyTimeout: 10 * time.Second, UploadTimeout: time.Minute, MaxConns: 512, ShutdownGrace: 10 * time.Second, UploadBudget: 8 << 20})
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	c := DefaultConfig()
	c.Port, c.BodyTimeout, c.MaxConns, c.UploadBudget = 65536, 0, 0, 1<<20-1
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "Port 65536: want a port from 0 to 65535", "BodyTimeout 0s: want more than 0",
		"MaxConns 0: want at least 1", "UploadBudget 1048575: want at least 1 (MiB)")
}

// TestDefaultsPerField: New fills each bound left zero on its own,
// keeping the fields that are set; the listen address is used as it is
// (a free port on every interface).
func TestDefaultsPerField(t *testing.T) {
	c := Config{IdleTimeout: 5 * time.Second}.withDefaults()
	want := DefaultConfig()
	want.Host, want.Port, want.IdleTimeout = "", 0, 5*time.Second
	got := Config{Host: c.Host, Port: c.Port, IdleTimeout: c.IdleTimeout, BodyTimeout: c.BodyTimeout, UploadTimeout: c.UploadTimeout,
		MaxConns: c.MaxConns, ShutdownGrace: c.ShutdownGrace, UploadBudget: c.UploadBudget}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("Config (-got +want):\n%s", d)
	}
}
