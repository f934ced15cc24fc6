package memstore

import (
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's person-memory setting (moved from cmd's
// defaults test, which now takes it from here); a range error is a
// fieldcheck.Error naming its field.
func TestDefaultConfig(t *testing.T) {
	if got := DefaultConfig().PersonMaxFacts; got != 8 {
		t.Errorf("PersonMaxFacts %d, want bridge.py's 8", got)
	}
	if got := (Config{}).withDefaults().PersonMaxFacts; got != 8 {
		t.Errorf("zero PersonMaxFacts defaults to %d, want 8", got)
	}
	testkit.CheckFieldErrors(t, "Config", Config{Path: "x", PersonMaxFacts: MaxPersonFacts + 1}.Validate(), "PersonMaxFacts 101: want at most 100")
}
