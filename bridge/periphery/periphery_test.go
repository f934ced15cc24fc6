package periphery

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(c *Config)
		wantErr []string
	}{
		{name: "defaults", edit: func(*Config) {}},
		{name: "full", edit: func(c *Config) {
			*c = Config{WeatherLocation: "Brisbane", WeatherURL: "https://wttr.in", WeatherTTL: time.Minute,
				CalendarIDs: []string{"a@group.calendar.google.com"}, CalendarTTL: time.Hour, CalendarPoll: time.Minute,
				PersonPrefix: regexp.MustCompile(DefaultPersonPrefix)}
		}},
		{name: "url without scheme", edit: func(c *Config) { c.WeatherURL = "wttr.in" }, wantErr: []string{"WeatherURL wttr.in: want an http or https URL"}},
		{name: "ftp url", edit: func(c *Config) { c.WeatherURL = "ftp://wttr.in" }, wantErr: []string{"WeatherURL ftp://wttr.in: want an http or https URL"}},
		{name: "negative weather ttl", edit: func(c *Config) { c.WeatherTTL = -time.Second }, wantErr: []string{"WeatherTTL -1s: want more than 0"}},
		{name: "zero weather ttl", edit: func(c *Config) { c.WeatherTTL = 0 }, wantErr: []string{"WeatherTTL 0s: want more than 0"}},
		{name: "negative calendar ttl", edit: func(c *Config) { c.CalendarTTL = -time.Second }, wantErr: []string{"CalendarTTL -1s: want more than 0"}},
		{name: "negative poll", edit: func(c *Config) { c.CalendarPoll = -time.Second }, wantErr: []string{"CalendarPoll -1s: want more than 0"}},
		{name: "blank calendar id", edit: func(c *Config) { c.CalendarIDs = []string{"a", " "} }, wantErr: []string{"CalendarIDs [a  ]: want no blank calendar id"}},
		{name: "pattern without rest", edit: func(c *Config) { c.PersonPrefix = regexp.MustCompile(`^\[(?P<person>\w+)\]`) },
			wantErr: []string{`PersonPrefix ^\[(?P<person>\w+)\]: want a regular expression with named groups person and rest`}},
		{name: "pattern without person", edit: func(c *Config) { c.PersonPrefix = regexp.MustCompile(`^\[(\w+)\] (?P<rest>.+)`) },
			wantErr: []string{`PersonPrefix ^\[(\w+)\] (?P<rest>.+): want a regular expression with named groups person and rest`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			testkit.CheckFieldErrors(t, "Config", cfg.Validate(), tc.wantErr...)
		})
	}
	testkit.CheckFieldErrors(t, "Config with three errors", Config{WeatherURL: "x", WeatherTTL: -1, CalendarTTL: time.Hour, CalendarPoll: time.Hour,
		CalendarIDs: []string{""}}.Validate(), "WeatherURL x: want an http or https URL", "WeatherTTL -1ns: want more than 0", "CalendarIDs []: want no blank calendar id")
}

func TestConfigDefaults(t *testing.T) {
	c := Config{CalendarIDs: []string{" a ", "", "b"}, WeatherURL: "http://x/"}.withDefaults()
	if c.Location != time.Local || c.WeatherURL != "http://x" || c.WeatherTTL != DefaultWeatherTTL ||
		c.GWSBin != DefaultGWSBin || c.CalendarTTL != DefaultCalendarTTL || c.CalendarPoll != DefaultCalendarPoll ||
		c.HouseholdBucket != DefaultHouseholdBucket || c.PersonPrefix.String() != DefaultPersonPrefix ||
		c.HTTPClient == nil || c.HTTPClient.Timeout != 10*time.Second ||
		c.calendarTimeout != 15*time.Second || c.weatherTimeout != 15*time.Second {
		t.Errorf("defaults not applied: %+v", c)
	}
	if diff := cmp.Diff(c.CalendarIDs, []string{"a", "b"}); diff != "" {
		t.Errorf("ids (-got +want):\n%s", diff)
	}
	if c := (Config{}).withDefaults(); c.WeatherURL != DefaultWeatherURL {
		t.Errorf("WeatherURL %q", c.WeatherURL)
	}
}

func TestContextParts(t *testing.T) {
	tests := []struct {
		name     string
		weather  bool
		calendar bool
		want     []string
	}{
		{name: "neither"},
		{name: "weather only", weather: true, want: []string{"Brisbane: " + brisbaneWeather}},
		{name: "calendar only", calendar: true, want: []string{"Today: all-day Bin night; 09:30 [Alex] Swimming"}},
		{name: "both", weather: true, calendar: true, want: []string{
			"Brisbane: " + brisbaneWeather,
			"Today: all-day Bin night; 09:30 [Alex] Swimming",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWeatherServer(t, plainText(brisbaneWeather+"\n"))
			defer ws.Close()
			f := newCalFixture(t, func(c *Config) {
				c.WeatherLocation = "Brisbane"
				c.WeatherURL = ws.URL
			}, "context")
			if tc.weather {
				if err := f.p.refreshWeather(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
			if tc.calendar {
				if err := f.p.refreshCalendar(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(f.p.ContextParts(), tc.want); diff != "" {
				t.Errorf("ContextParts (-got +want):\n%s", diff)
			}
		})
	}
}

// TestRunBoth runs both loops with the real sleeper and checks the caches
// fill and Run ends its goroutines.
func TestRunBoth(t *testing.T) {
	defer goleak.VerifyNone(t)
	ws := newWeatherServer(t, plainText(brisbaneWeather))
	defer ws.Close()
	f := newCalFixture(t, func(c *Config) {
		c.WeatherLocation = "Brisbane"
		c.WeatherURL = ws.URL
		c.Clock = nil // the fixture's clock with real timers; the hour-long waits are cut by cancel
	}, "context")
	stop := runPeriphery(t, f.p)
	defer stop()
	want := []string{"Brisbane: " + brisbaneWeather, "Today: all-day Bin night; 09:30 [Alex] Swimming"}
	testkit.WaitFor(t, 5*time.Second, "both caches", func() bool { return cmp.Equal(f.p.ContextParts(), want) })
	stop()
}

func TestRunDisabled(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := New(Config{})
	stop := runPeriphery(t, p)
	stop()
	if got := p.ContextParts(); got != nil {
		t.Errorf("ContextParts = %q, want nil", got)
	}
	if date, fetched, fails := p.CalendarStatus(); date != "" || !fetched.IsZero() || fails != 0 {
		t.Errorf("CalendarStatus = %q, %v, %d", date, fetched, fails)
	}
}

// TestPersonEventsToday: the speaker resolver's view of the calendar is
// the tagged events of the usable cache, all-day first, household events
// left out, and nothing once the cache is stale.
func TestPersonEventsToday(t *testing.T) {
	f := newCalFixture(t, func(c *Config) { c.CalendarTTL = time.Hour }, "people")
	type got struct {
		Person string
		Start  string
		AllDay bool
	}
	collect := func() []got {
		var out []got
		f.p.PersonEventsToday(func(person string, start time.Time, allDay bool) {
			out = append(out, got{person, start.In(aest).Format("15:04"), allDay})
		})
		return out
	}
	if evs := collect(); evs != nil {
		t.Errorf("before any fetch: %v, want none", evs)
	}
	if err := f.p.refreshCalendar(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []got{{"Alex", "00:00", true}, {"Alex", "09:30", false}, {"Sam", "16:15", false}}
	if d := cmp.Diff(collect(), want); d != "" {
		t.Errorf("events (-got +want):\n%s", d)
	}
	f.clock.Set(morning.Add(time.Hour + time.Second))
	if evs := collect(); evs != nil {
		t.Errorf("past the TTL: %v, want none", evs)
	}
}
