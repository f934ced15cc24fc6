package tier1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's think_hard endpoint and song directory
// (moved from cmd's defaults test, which now takes them from here); each
// range error is a fieldcheck.Error naming its field.
func TestDefaultConfig(t *testing.T) {
	def := DefaultConfig()
	thinker := ThinkerConfig{URL: "http://localhost:8080/v1/chat/completions", Model: "qwen3.6:27b-think", Timeout: 30 * time.Second}
	if d := cmp.Diff(def.Thinker, thinker); d != "" || def.SongAssetBase != "/opt/xiaozhi-esp32-server/config/assets/songs" {
		t.Errorf("DefaultConfig: songs %q, thinker (-got +want):\n%s", def.SongAssetBase, d)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
	bad := DefaultConfig()
	bad.Thinker.URL, bad.Thinker.Timeout = "llm.lan", 0
	testkit.CheckFieldErrors(t, "Config", bad.Validate(), "Thinker.URL llm.lan: want an http or https URL", "Thinker.Timeout 0s: want more than 0")
}

// TestThinkerDefaultsPerField: the thinker defaults each field on its own.
func TestThinkerDefaultsPerField(t *testing.T) {
	def := DefaultConfig().Thinker
	got := newThinker(ThinkerConfig{Model: "big"}).cfg
	if got.Model != "big" || got.URL != def.URL || got.Timeout != def.Timeout {
		t.Errorf("one field set: %+v", got)
	}
}
