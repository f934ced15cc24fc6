package periphery

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
)

// Periphery caches the weather and today's calendar for the context line.
type Periphery struct {
	cfg     Config
	log     hclog.Logger
	running atomic.Bool

	mu sync.RWMutex
	// weather cache.
	weatherText string
	weatherAt   time.Time
	// calendar cache: each calendar's last good result, by id.
	cals        map[string]calEntry
	calFetched  time.Time // last successful fetch of any calendar
	calFailures int       // consecutive failed refresh rounds

	// refreshMu guards the calendar refresh coordination below, so the
	// loop and the requests never run two refreshes at once.
	refreshMu sync.Mutex
	inflight  *refreshRound // the refresh running now; nil when none
	reqFailAt time.Time     // when the last on-request refresh failed
	reqFail   error         // its error; nil after any good refresh
}

// calEntry is one calendar's last good fetch.
type calEntry struct {
	date    string // YYYY-MM-DD in Location the events are for
	fetched time.Time
	events  []event
}

// event is one privacy-filtered calendar event.
type event struct {
	allDay bool
	start  time.Time
	bucket string // lowercased person, or the household bucket
	name   string // the person as written in the summary; "" for household
	text   string // the summary after the funnel, without the person tag
}

// New returns a Periphery with cfg's defaults applied; call cfg.Validate
// first. An invalid PersonPrefix falls back to the default.
func New(cfg Config) *Periphery {
	cfg = cfg.withDefaults()
	return &Periphery{cfg: cfg, log: cfg.Logger, cals: make(map[string]calEntry)}
}

// sleep waits d on the clock, or until ctx ends.
func (p *Periphery) sleep(ctx context.Context, d time.Duration) error {
	t := p.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

// errRunning is returned by a second Run.
var errRunning = errors.New("periphery: already running")

// Run refreshes the caches until ctx ends, then returns nil once every
// goroutine it started has ended. With weather and calendar both disabled it
// only waits for ctx.
func (p *Periphery) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errRunning
	}
	defer p.running.Store(false)
	defer p.cfg.HTTPClient.CloseIdleConnections()
	p.log.Info("context refresher started", "weather", p.cfg.WeatherLocation != "", "calendars", len(p.cfg.CalendarIDs))

	var wg sync.WaitGroup
	if p.cfg.WeatherLocation != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.weatherLoop(ctx)
		}()
	}
	if len(p.cfg.CalendarIDs) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.calendarLoop(ctx)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	p.log.Debug("context refresher stopped")
	return nil
}

// Weather is "<WeatherLocation>: <text>" from a reading younger than
// WeatherTTL, or "" when there is none.
func (p *Periphery) Weather() string {
	if p.cfg.WeatherLocation == "" {
		return ""
	}
	now := p.cfg.Clock.Now()
	p.mu.RLock()
	text, at := p.weatherText, p.weatherAt
	p.mu.RUnlock()
	if text == "" || now.Sub(at) >= p.cfg.WeatherTTL {
		return ""
	}
	return p.cfg.WeatherLocation + ": " + text
}

// Today returns today's privacy-filtered event strings, all-day events
// first, then by start time; nil when there are none or the cache is stale.
// person "" gives every event, person events tagged "[Name] "; otherwise the
// events of that person (case-insensitive), plus the household's when
// includeHousehold.
func (p *Periphery) Today(person string, includeHousehold bool) []string {
	v := p.calendarView()
	return p.formatEvents(v.events, person, includeHousehold)
}

// PersonEventsToday calls fn for each of today's events tagged with a
// person, all-day events first, then by start time: the person as the tag
// wrote it ("Alex"), the start, and whether the event lasts all day (its
// start is then local midnight). Household events carry no person and are
// left out. It reads the cache Today serves, so a stale cache gives
// nothing; an event shared by two calendars comes once per calendar. fn
// runs with no lock held. The speaker resolver uses it to guess who is
// about at this hour.
func (p *Periphery) PersonEventsToday(fn func(person string, start time.Time, allDay bool)) {
	evs := p.calendarView().events
	sort.SliceStable(evs, func(i, j int) bool { return eventLess(evs[i], evs[j]) })
	for _, e := range evs {
		if e.name == "" || e.bucket == p.cfg.HouseholdBucket {
			continue
		}
		fn(e.name, e.start, e.allDay)
	}
}

// calView is the calendar cache as served at one instant.
type calView struct {
	date     string    // today's date when some calendar is usable, else ""
	fetched  time.Time // last successful fetch of any calendar
	failures int       // consecutive failed refresh rounds
	events   []event   // the usable calendars' events, a private copy
}

// calendarView reads the cache under one lock, so the date, the events and
// the counters agree with each other.
func (p *Periphery) calendarView() calView {
	now := p.cfg.Clock.Now()
	today := dateKey(now.In(p.cfg.Location))
	var v calView
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, id := range p.cfg.CalendarIDs {
		if e, ok := p.cals[id]; ok && p.usableLocked(e, today, now) {
			v.date = today
			v.events = append(v.events, e.events...)
		}
	}
	v.fetched, v.failures = p.calFetched, p.calFailures
	return v
}

// usableLocked reports whether e may be served at now (today's date key).
func (p *Periphery) usableLocked(e calEntry, today string, now time.Time) bool {
	return e.date == today && now.Sub(e.fetched) <= p.cfg.CalendarTTL
}

// formatEvents filters, sorts, formats and de-duplicates evs (a private copy).
func (p *Periphery) formatEvents(evs []event, person string, includeHousehold bool) []string {
	person = strings.ToLower(strings.TrimSpace(person))
	sort.SliceStable(evs, func(i, j int) bool { return eventLess(evs[i], evs[j]) })
	var out []string
	seen := make(map[string]bool, len(evs))
	for _, e := range evs {
		var text string
		switch {
		case person == "":
			text = e.text
			if e.name != "" {
				text = "[" + e.name + "] " + e.text
			}
		case e.bucket == person || (includeHousehold && e.bucket == p.cfg.HouseholdBucket):
			text = e.text
		default:
			continue
		}
		when := "all-day"
		if !e.allDay {
			when = e.start.In(p.cfg.Location).Format("15:04")
		}
		s := when + " " + text
		if seen[s] {
			continue // the same event shared by two calendars
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// eventLess orders all-day events first, then by start time.
func eventLess(a, b event) bool {
	if a.allDay != b.allDay {
		return a.allDay
	}
	return a.start.Before(b.start)
}

// ContextParts are the context line's parts after the date: the weather
// part if any, then "Today: " and today's events joined with "; " if any,
// cut to prompttext.Calendar. Both come made safe for a prompt line (the
// fetch and the funnel run prompttext.Line).
func (p *Periphery) ContextParts() []string {
	var parts []string
	if w := p.Weather(); w != "" {
		parts = append(parts, w)
	}
	if evs := p.Today("", true); len(evs) > 0 {
		parts = append(parts, prompttext.Cut("Today: "+strings.Join(evs, "; "), prompttext.Calendar))
	}
	return parts
}

// CalendarStatus reports the date the served events are for ("" when no
// calendar's events are usable now), the last successful fetch (zero when
// none), and the number of consecutive failed refresh rounds.
func (p *Periphery) CalendarStatus() (date string, fetched time.Time, consecutiveFailures int) {
	v := p.calendarView()
	return v.date, v.fetched, v.failures
}

func dateKey(t time.Time) string { return t.Format(time.DateOnly) }
