package voice

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultSettings: bridge.py's turn timeout and sentence cap, with the
// voice routes' other bounds, valid as they are.
func TestDefaultSettings(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{Timeout: 90 * time.Second, MaxSentences: 6,
		Heartbeat: 15 * time.Second, PersonMemoryWait: 500 * time.Millisecond, MaxBodyBytes: 1 << 20, MaxContentRunes: 16 << 10})
}

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field.
func TestValidateNamesTheField(t *testing.T) {
	v := DefaultConfig()
	v.Timeout, v.MaxSentences = -time.Second, 0
	testkit.CheckFieldErrors(t, "Config", v.Validate(), "Timeout -1s: want more than 0", "MaxSentences 0: want at least 1")
}

// TestDefaultsPerField: New fills each bound left zero on its own,
// keeping the fields that are set.
func TestDefaultsPerField(t *testing.T) {
	v := Config{MaxSentences: 2}.withDefaults()
	want := DefaultConfig()
	want.MaxSentences = 2
	got := Config{Timeout: v.Timeout, MaxSentences: v.MaxSentences, Heartbeat: v.Heartbeat,
		PersonMemoryWait: v.PersonMemoryWait, MaxBodyBytes: v.MaxBodyBytes, MaxContentRunes: v.MaxContentRunes}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("Config (-got +want):\n%s", d)
	}
}
