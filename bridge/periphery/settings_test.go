package periphery

import (
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestDefaultConfig: bridge.py's weather and calendar settings (moved from
// cmd's defaults test, which now takes them from here).
func TestDefaultConfig(t *testing.T) {
	want := Config{WeatherLocation: "Brisbane", WeatherURL: "https://wttr.in", WeatherTTL: 1800 * time.Second,
		GWSBin: "/usr/local/bin/gws", CalendarTTL: 7200 * time.Second, CalendarPoll: 900 * time.Second, HouseholdBucket: "_household",
		PersonPrefix: regexp.MustCompile(`^\s*\[(?P<person>[A-Za-z][A-Za-z0-9_-]{0,31})\]\s*(?P<rest>.+)$`)}
	opts := cmp.Options{cmpopts.IgnoreUnexported(Config{}), cmpopts.EquateEmpty(),
		cmp.Comparer(func(a, b *regexp.Regexp) bool { return a.String() == b.String() })}
	if d := cmp.Diff(DefaultConfig(), want, opts); d != "" {
		t.Errorf("DefaultConfig (-got +want):\n%s", d)
	}
}

// TestConfigDefaultsPerField: New defaults each field on its own: a Config
// that sets one field keeps it, and the others a zero means nothing for
// take DefaultConfig's value; the weather place stays empty (off).
func TestConfigDefaultsPerField(t *testing.T) {
	def := DefaultConfig()
	c := Config{CalendarPoll: time.Minute}.withDefaults()
	if c.CalendarPoll != time.Minute || c.WeatherTTL != def.WeatherTTL || c.CalendarTTL != def.CalendarTTL ||
		c.WeatherURL != def.WeatherURL || c.GWSBin != def.GWSBin || c.HouseholdBucket != def.HouseholdBucket || c.WeatherLocation != "" {
		t.Errorf("one field set: %+v", c)
	}
}
