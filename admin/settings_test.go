package admin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: bridge.py's voice provider, smart mode's models,
// ZeroClaw's files and units and the mode state files (moved from cmd's
// defaults test, which now takes them from here), valid as they are; a
// range error is a fieldcheck.Error naming its field.
func TestDefaultSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{Provider: "zeroclaw",
		SmartOn:      Target{Model: "anthropic/claude-sonnet-4-6", URL: "https://openrouter.ai/api/v1"},
		SmartOff:     Target{Model: "qwen3.5:4b", URL: "http://localhost:8080/v1", APIKey: "dotty-voice"},
		DefaultModel: "mistralai/mistral-small-3.2-24b-instruct", CloudProfileKey: "custom:https://openrouter.ai/api/v1",
		Workspace: "/root/.zeroclaw/workspace", VoiceConfig: "/root/.zeroclaw/config.toml", VoiceUnit: "zeroclaw-bridge",
		DiscordConfig: "/root/.zeroclaw-discord/config.toml", DiscordUnit: "zeroclaw-discord", RestartDelay: 2 * time.Second})
	want := ModesConfig{KidDefault: true, KidStatePath: "/root/zeroclaw-bridge/state/kid-mode", SmartStatePath: "/root/zeroclaw-bridge/state/smart-mode"}
	if d := cmp.Diff(DefaultModesConfig(), want); d != "" {
		t.Errorf("DefaultModesConfig (-got +want):\n%s", d)
	}
	c := DefaultConfig()
	c.RestartDelay = -time.Second
	testkit.CheckFieldErrors(t, "Config", c.Validate(), "RestartDelay -1s: want 0 or more")
	if got := NewHandler(Config{}).cfg.RestartDelay; got != 2*time.Second {
		t.Errorf("NewHandler's restart delay %s, want the default 2s", got)
	}
}
