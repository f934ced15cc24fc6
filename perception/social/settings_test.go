package social

import (
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field, under "Settings." when Config reports it.
func TestValidateNamesTheField(t *testing.T) {
	s := DefaultSettings()
	s.DreamWindow, s.DreamCount, s.GreetPerDayMax, s.GreetMaxWords, s.GreetCooldown = 0, maxDreamCount+1, 0, 0, -time.Hour
	testkit.CheckFieldErrors(t, "Config", Config{Settings: s}.Validate(), "Settings.DreamWindow 0s: want more than 0", "Settings.DreamCount 101: want 0 to 100",
		"Settings.GreetPerDayMax 0: want at least 1", "Settings.GreetMaxWords 0: want at least 1", "Settings.GreetCooldown -1h0m0s: want 0 or more")
}
