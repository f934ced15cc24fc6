package social

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// TestValidateNamesTheField: each range error is a fieldcheck.Error on
// its field, under "Settings." when Config reports it.
func TestValidateNamesTheField(t *testing.T) {
	s := DefaultSettings()
	s.DreamWindow, s.DreamCount, s.GreetPerDayMax, s.GreetMaxWords, s.GreetCooldown = 0, maxDreamCount+1, 0, 0, -time.Hour
	var got []string
	for _, err := range fieldcheck.Split(Config{Settings: s}.Validate()) {
		fe, ok := err.(*fieldcheck.Error)
		if !ok {
			t.Fatalf("%v is not a fieldcheck.Error", err)
		}
		got = append(got, fe.Field+": want "+fe.Want)
	}
	want := []string{"Settings.DreamWindow: want more than 0", "Settings.DreamCount: want 0 to 100",
		"Settings.GreetPerDayMax: want at least 1", "Settings.GreetMaxWords: want at least 1", "Settings.GreetCooldown: want 0 or more"}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("(-got +want):\n%s", d)
	}
}
