package steerable

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: the provider (moved from cmd's defaults test,
// which now takes it from here), the history cap, the ping rhythm and the
// bounds, valid as they are; a Config is defaulted field by field.
func TestDefaultSettings(t *testing.T) {
	want := Config{Provider: "openai_compat", HistoryChars: 24_000, PingInterval: 10 * time.Second, PingTimeout: 5 * time.Second,
		PingMisses: 3, MaxLine: 8 << 20, MaxReply: 1 << 20}
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), want)
	want.Model, want.PingMisses = "m", 5
	if d := cmp.Diff(Config{Model: "m", PingMisses: 5}.withDefaults(), want); d != "" {
		t.Errorf("one field set (-got +want):\n%s", d)
	}
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	c := DefaultConfig()
	hot := 2.5
	c.BaseURL, c.Temperature, c.PingTimeout = "ftp://x", &hot, time.Minute
	testkit.CheckFieldErrors(t, "Config", c.Validate(),
		"BaseURL ftp://x: want an http or https URL", "Temperature 2.5: want a number from 0 to 2", "PingTimeout 1m0s: want at most PingInterval")
}
