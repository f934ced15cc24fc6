package acpclient

import (
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestSettings: the client name's default, filled per field, and the one
// range check (moved here with the settings from acp.Config).
func TestSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{ClientName: "zeroclaw-bridge", ClientVersion: "dev"})
	if c := (Config{ClientVersion: "1.2"}).withDefaults(); c.ClientName != "zeroclaw-bridge" || c.ClientVersion != "1.2" {
		t.Errorf("Config.withDefaults() = %+v", c)
	}
	c := DefaultConfig()
	c.SessionCwd = "srv/dotty"
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "SessionCwd srv/dotty: want an absolute path")
}
