package xiaozhi

import (
	"errors"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
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
	var fe *fieldcheck.Error
	if err := (Config{Port: 65536}).Validate(); !errors.As(err, &fe) || err.Error() != "Port 65536: want a port from 1 to 65535" {
		t.Errorf("Validate() = %v, want a fieldcheck.Error on Port", err)
	}
}
