package vision

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
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
	var got []string
	for _, err := range fieldcheck.Split(c.Validate()) {
		fe, ok := err.(*fieldcheck.Error)
		if !ok {
			t.Fatalf("%v is not a fieldcheck.Error", err)
		}
		got = append(got, fe.Field+": want "+fe.Want)
	}
	want := []string{"Vision.Timeout: want more than 0", "Audio.URL: want an http or https URL",
		"RoomViewCooldown: want more than 0", "MaxWaiters: want at least 1"}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("(-got +want):\n%s", d)
	}
}
