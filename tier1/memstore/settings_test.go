package memstore

import (
	"errors"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
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
	var fe *fieldcheck.Error
	err := Config{Path: "x", PersonMaxFacts: MaxPersonFacts + 1}.Validate()
	if !errors.As(err, &fe) || err.Error() != "PersonMaxFacts 101: want at most 100" {
		t.Errorf("Validate() = %v, want a fieldcheck.Error on PersonMaxFacts", err)
	}
}
