package sidecar

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's firmware path, deadline and transcription
// settings (moved from cmd's defaults test, which now takes them from
// here); each range error is a fieldcheck.Error naming its field.
func TestDefaultConfig(t *testing.T) {
	want := Config{Path: "/v1/listen", Deadline: 12 * time.Second, STT: STT{Model: "whisper-1", Language: "en", Timeout: 5 * time.Second}}
	if d := cmp.Diff(DefaultConfig(), want); d != "" {
		t.Errorf("DefaultConfig (-got +want):\n%s", d)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v (no STT URL: no token needed)", err)
	}
	bad := DefaultConfig()
	bad.Path, bad.STT.URL, bad.STT.Timeout, bad.Deadline = "listen", "https://whisper.lan", 0, 15*time.Second
	testkit.CheckFieldErrors(t, "Config", bad.Validate(), "Path listen: want a path starting with /",
		"STT.Timeout 0s: want more than 0", "Deadline 15s: want at most 14 (the firmware gives up at 15)",
		"Token false: want a token for the firmware sidecar (or SIDECAR_ALLOW_NO_TOKEN=1 on a trusted LAN)")
	bad = DefaultConfig()
	bad.STT.URL = "whisper.lan"
	testkit.CheckFieldErrors(t, "Config with a bad URL alone", bad.Validate(), "STT.URL whisper.lan: want an http or https URL")
}
