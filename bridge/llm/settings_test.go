package llm

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// TestDefaultNarrativeConfig: bridge.py's narrative model and timeout
// (moved from cmd's defaults test, which now takes them from here); each
// range error names its field.
func TestDefaultNarrativeConfig(t *testing.T) {
	if d := cmp.Diff(DefaultNarrativeConfig(), NarrativeConfig{Model: "anthropic/claude-sonnet-4-6", Timeout: time.Minute}); d != "" {
		t.Errorf("DefaultNarrativeConfig (-got +want):\n%s", d)
	}
	var fe *fieldcheck.Error
	if err := (NarrativeConfig{}).Validate(); !errors.As(err, &fe) || err.Error() != "Timeout 0s: want more than 0" {
		t.Errorf("zero timeout: %v, want a fieldcheck.Error on Timeout", err)
	}
}
