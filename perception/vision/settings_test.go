package vision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's models, URLs, timeouts and room-view
// timings (moved from cmd's defaults test, which now takes them from here).
func TestDefaultConfig(t *testing.T) {
	want := Config{MaxWaiters: 128,
		Vision:           Model{Model: "google/gemini-2.0-flash-001", URL: "https://openrouter.ai/api/v1/chat/completions", Timeout: 15 * time.Second},
		Audio:            Model{Model: "google/gemini-2.5-flash", URL: "https://openrouter.ai/api/v1/chat/completions", Timeout: 20 * time.Second},
		RoomViewCooldown: 120 * time.Second, TalkKickoffGrace: 5 * time.Second}
	if d := cmp.Diff(DefaultConfig(), want, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("DefaultConfig (-got +want):\n%s", d)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	c := DefaultConfig()
	c.Vision.Timeout, c.Audio.URL, c.RoomViewCooldown, c.MaxWaiters = 0, "openrouter.ai", -time.Second, 0
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "Vision.Timeout 0s: want more than 0", "Audio.URL openrouter.ai: want an http or https URL",
		"RoomViewCooldown -1s: want more than 0", "MaxWaiters 0: want at least 1")
}
