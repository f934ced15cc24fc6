package bridge

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: bridge.py's listener, turn timeout and sentence
// cap, with the bridge's connection, body and shutdown bounds (moved from
// cmd's defaults test, which now takes them from here), valid as they are.
func TestDefaultSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{Host: "0.0.0.0", Port: 8080, IdleTimeout: 90 * time.Second,
		BodyTimeout: 10 * time.Second, UploadTimeout: time.Minute, MaxConns: 512, ShutdownGrace: 10 * time.Second, UploadBudget: 8 << 20})
	testkit.CheckDefaults(t, "DefaultVoiceConfig", DefaultVoiceConfig(), VoiceConfig{Timeout: 90 * time.Second, MaxSentences: 6,
		Heartbeat: 15 * time.Second, PersonMemoryWait: 500 * time.Millisecond, MaxBodyBytes: 1 << 20, MaxContentRunes: 16 << 10})
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	c := DefaultConfig()
	c.Port, c.BodyTimeout, c.MaxConns, c.UploadBudget = 65536, 0, 0, 1<<20-1
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "Port 65536: want a port from 0 to 65535", "BodyTimeout 0s: want more than 0",
		"MaxConns 0: want at least 1", "UploadBudget 1048575: want at least 1 (MiB)")
	v := DefaultVoiceConfig()
	v.Timeout, v.MaxSentences = -time.Second, 0
	testkit.CheckFieldErrors(t, "VoiceConfig", v.Validate(), "Timeout -1s: want more than 0", "MaxSentences 0: want at least 1")
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
	v := VoiceConfig{MaxSentences: 2}.withDefaults()
	wantVoice := DefaultVoiceConfig()
	wantVoice.MaxSentences = 2
	gotVoice := VoiceConfig{Timeout: v.Timeout, MaxSentences: v.MaxSentences, Heartbeat: v.Heartbeat,
		PersonMemoryWait: v.PersonMemoryWait, MaxBodyBytes: v.MaxBodyBytes, MaxContentRunes: v.MaxContentRunes}
	if d := cmp.Diff(gotVoice, wantVoice); d != "" {
		t.Errorf("VoiceConfig (-got +want):\n%s", d)
	}
}
