package xiaozhi

import (
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's admin port (moved from cmd's defaults
// test, which now takes it from here); a port out of range is a
// fieldcheck.Error naming the field.
func TestDefaultConfig(t *testing.T) {
	if c := DefaultConfig(); c.Port != 8003 || c.Host != "" || c.Token != "" {
		t.Errorf("DefaultConfig() = %+v, want port 8003 and no host", c)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	testkit.CheckFieldErrors(t, "Config", Config{Port: 65536}.Validate(), "Port 65536: want a port from 1 to 65535")
}
