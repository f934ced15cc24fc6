package convolog

import "testing"

// TestDefaultConfig: bridge.py's log directory (moved from cmd's defaults
// test, which now takes it from here).
func TestDefaultConfig(t *testing.T) {
	if got := DefaultConfig(); got.Dir != "/root/zeroclaw-bridge/logs" || got.Location != nil || got.Logger != nil {
		t.Errorf("DefaultConfig() = %+v, want bridge.py's /root/zeroclaw-bridge/logs", got)
	}
}
