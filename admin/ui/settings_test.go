package ui

import (
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's dashboard settings (moved from cmd's
// defaults test, which now takes them from here); each range error is a
// fieldcheck.Error naming its field.
func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.MaxClients != 64 || c.XiaozhiWSPort != 8000 || c.Operator.XiaozhiRestartTimeout != 30*time.Second {
		t.Errorf("DefaultConfig() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	c.MaxClients, c.XiaozhiWSPort, c.Operator.XiaozhiRestartTimeout = 0, 70000, 0
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "MaxClients 0: want at least 1", "XiaozhiWSPort 70000: want a port from 1 to 65535",
		"Operator.XiaozhiRestartTimeout 0s: want more than 0")
}
