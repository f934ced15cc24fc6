package periphery

import (
	"cmp"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Defaults, bridge.py's.
const (
	DefaultWeatherURL      = "https://wttr.in"
	DefaultWeatherTTL      = 1800 * time.Second
	DefaultGWSBin          = "/usr/local/bin/gws"
	DefaultCalendarTTL     = 7200 * time.Second
	DefaultCalendarPoll    = 900 * time.Second
	DefaultHouseholdBucket = "_household"
	// DefaultPersonPrefix is CALENDAR_PERSON_PREFIX_RE's default.
	DefaultPersonPrefix = `^\s*\[(?P<person>[A-Za-z][A-Za-z0-9_-]{0,31})\]\s*(?P<rest>.+)$`
)

// Fixed bounds: what a prompt line may cost, and how long a fetch may take.
const (
	weatherRequestTimeout = 10 * time.Second
	weatherOverallTimeout = 15 * time.Second
	calendarFetchTimeout  = 15 * time.Second
	// requestRefreshHold is how long a failed on-request calendar refresh
	// answers for later requests, so a client polling the route cannot
	// start a gws process per request.
	requestRefreshHold = 5 * time.Second
	// processWaitDelay bounds Wait after a kill when a grandchild still
	// holds gws's output pipes.
	processWaitDelay = 2 * time.Second
)

var defaultPersonPrefix = regexp.MustCompile(DefaultPersonPrefix)

// Failure kinds of dotty_calendar_fetch_failures_total.
const (
	KindTimeout      = "timeout"
	KindParse        = "parse"
	KindOther        = "other"
	KindOrchestrator = "orchestrator"
)

// FailureKinds are the kind labels pre-created at zero.
var FailureKinds = []string{KindTimeout, KindParse, KindOther, KindOrchestrator}

// Config configures a Periphery: start from DefaultConfig, which holds
// bridge.py's defaults. New also takes the zero value: weather and
// calendar are both disabled and Run only waits for its context.
type Config struct {
	// Location is TZ: "today" boundaries and event times (default time.Local).
	Location *time.Location
	// WeatherLocation is WEATHER_LOCATION; "" disables weather (default
	// "Brisbane").
	WeatherLocation string
	// WeatherURL is the wttr.in-compatible base URL (default https://wttr.in).
	WeatherURL string
	// WeatherTTL is WEATHER_TTL_SEC: how long a reading is served and the
	// refresh period (default 1800 s).
	WeatherTTL time.Duration
	// CalendarIDs is CALENDAR_ID split on commas; empty disables the calendar.
	CalendarIDs []string
	// GWSBin is GWS_BIN (default /usr/local/bin/gws).
	GWSBin string
	// CalendarSAPath is CALENDAR_SA_PATH, given to gws as
	// GOOGLE_APPLICATION_CREDENTIALS ("" leaves the environment as is).
	CalendarSAPath string
	// CalendarTTL is CALENDAR_TTL_SEC: cached events older than this are not
	// used (default 7200 s).
	CalendarTTL time.Duration
	// CalendarPoll is CALENDAR_POLL_SEC: the refresh period (default 900 s).
	CalendarPoll time.Duration
	// HouseholdBucket is CALENDAR_HOUSEHOLD_BUCKET: the owner of events not
	// tagged with a person (default "_household").
	HouseholdBucket string
	// PersonPrefix is CALENDAR_PERSON_PREFIX_RE; it must have the named
	// groups person and rest (default DefaultPersonPrefix).
	PersonPrefix *regexp.Regexp
	// Logger receives refresh failures and recoveries; nil discards.
	Logger hclog.Logger
	// Access guards the routes that show the household (the calendar): the
	// Host must name this machine, and the dashboard's credentials are
	// asked for when set. Nil: this machine's names, no credentials.
	Access *httpapi.Access
	// Metrics are the calendar's series (NewMetrics); nil
	// counts nothing.
	Metrics *Metrics
	// RequestDuration is
	// dotty_request_duration_seconds{endpoint="calendar_today"}: every
	// answered GET /api/calendar/today, 500s included, 422s not; nil
	// records nothing.
	RequestDuration prometheus.Observer
	// RequestErrors is
	// dotty_request_errors_total{endpoint="calendar_today",kind="exception"}:
	// each 500 of that route; nil counts nothing.
	RequestErrors prometheus.Counter
	// HTTPClient fetches the weather; nil means a client with a 10 s timeout
	// and no keep-alive (one request every half hour).
	HTTPClient *http.Client
	// Clock gives the time of day (the calendar's day, the weather's age)
	// and times the refresh loops' waits; nil is the real clock.
	Clock clockwork.Clock

	// Test hooks; zero means the real thing.
	calendarTimeout time.Duration
	weatherTimeout  time.Duration
}

// DefaultConfig returns bridge.py's weather and calendar settings: the one
// place they are written. Its CalendarIDs is empty (no calendar) and its
// CalendarSAPath "" (gws's environment as it is).
func DefaultConfig() Config {
	return Config{
		WeatherLocation: "Brisbane", WeatherURL: DefaultWeatherURL, WeatherTTL: DefaultWeatherTTL,
		GWSBin: DefaultGWSBin, CalendarTTL: DefaultCalendarTTL, CalendarPoll: DefaultCalendarPoll,
		HouseholdBucket: DefaultHouseholdBucket, PersonPrefix: defaultPersonPrefix,
	}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("WeatherTTL"): the one range check
// of each field; the bridge's command line names the variable a value
// came from. A PersonPrefix left unset takes its default in New.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("WeatherURL", fieldcheck.HTTPURL(c.WeatherURL), c.WeatherURL, fieldcheck.WantHTTPURL)
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"WeatherTTL", c.WeatherTTL}, {"CalendarTTL", c.CalendarTTL}, {"CalendarPoll", c.CalendarPoll}} {
		errs.Check(d.field, d.v > 0, d.v, "more than 0")
	}
	errs.Check("CalendarIDs", !slices.ContainsFunc(c.CalendarIDs, func(id string) bool { return strings.TrimSpace(id) == "" }), c.CalendarIDs, "no blank calendar id")
	errs.Check("PersonPrefix", c.PersonPrefix == nil || hasPersonGroups(c.PersonPrefix), c.PersonPrefix, "a regular expression with named groups person and rest")
	return errs.Err()
}

// hasPersonGroups reports whether re has the named groups person and rest
// a calendar summary is split into.
func hasPersonGroups(re *regexp.Regexp) bool {
	return re.SubexpIndex("person") >= 0 && re.SubexpIndex("rest") >= 0
}

// withDefaults returns a copy with each field a zero cannot mean anything
// for defaulted on its own (DefaultConfig's value); WeatherLocation and
// CalendarIDs are used as they are, empty meaning off.
func (c Config) withDefaults() Config {
	def := DefaultConfig()
	if c.Location == nil {
		c.Location = time.Local
	}
	c.WeatherLocation = strings.TrimSpace(c.WeatherLocation)
	c.WeatherURL = strings.TrimRight(cmp.Or(c.WeatherURL, def.WeatherURL), "/")
	ids := make([]string, 0, len(c.CalendarIDs))
	for _, id := range c.CalendarIDs {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	c.CalendarIDs = ids
	c.GWSBin, c.HouseholdBucket = cmp.Or(c.GWSBin, def.GWSBin), cmp.Or(c.HouseholdBucket, def.HouseholdBucket)
	for _, p := range []struct{ v, d *time.Duration }{
		{&c.WeatherTTL, &def.WeatherTTL}, {&c.CalendarTTL, &def.CalendarTTL}, {&c.CalendarPoll, &def.CalendarPoll},
	} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
	if c.PersonPrefix == nil || !hasPersonGroups(c.PersonPrefix) {
		c.PersonPrefix = def.PersonPrefix
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Access == nil {
		c.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: c.Logger})
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	c.calendarTimeout = cmp.Or(c.calendarTimeout, calendarFetchTimeout)
	c.weatherTimeout = cmp.Or(c.weatherTimeout, weatherOverallTimeout)
	return c
}

func defaultHTTPClient() *http.Client {
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	tr.DisableKeepAlives = true
	return &http.Client{Timeout: weatherRequestTimeout, Transport: tr}
}
