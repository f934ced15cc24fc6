package llm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultNarrativeConfig: bridge.py's narrative model and timeout
// (moved from cmd's defaults test, which now takes them from here); each
// range error names its field.
func TestDefaultNarrativeConfig(t *testing.T) {
	if d := cmp.Diff(DefaultNarrativeConfig(), NarrativeConfig{Model: "anthropic/claude-sonnet-4-6", Timeout: time.Minute}); d != "" {
		t.Errorf("DefaultNarrativeConfig (-got +want):\n%s", d)
	}
	testkit.CheckFieldErrors(t, "zero timeout", NarrativeConfig{}.Validate(), "Timeout 0s: want more than 0")
}
