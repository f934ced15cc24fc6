package periphery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// EndpointCalendarToday is the endpoint label of GET /api/calendar/today in
// dotty_request_duration_seconds and dotty_request_errors_total.
const EndpointCalendarToday = "calendar_today"

// Routes mounts GET /api/calendar/today behind Access.Private: the
// family's day is the household's.
func (p *Periphery) Routes(e *echo.Echo) {
	e.GET("/api/calendar/today", p.calendarToday, p.cfg.Access.Private)
}

// todayResponse is the body of GET /api/calendar/today; the field order is
// the key order callers see.
type todayResponse struct {
	OK                  bool     `json:"ok"`
	Date                string   `json:"date"`
	Fetched             float64  `json:"fetched"`
	ConsecutiveFailures int      `json:"consecutive_failures"`
	Person              *string  `json:"person"`
	IncludeHousehold    bool     `json:"include_household"`
	Events              []string `json:"events"`
	Count               int      `json:"count"`
}

// calendarToday answers today's privacy-filtered events, refreshing a stale
// cache first. A refresh failure is a 500 only when nothing usable is
// cached: partial data beats none for a wall display.
func (p *Periphery) calendarToday(c echo.Context) error {
	b := httpapi.BindQuery(c.QueryParams())
	person, hasPerson := b.OptString("person")
	household := b.BoolOr("include_household", true)
	if err := b.Err(); err != nil {
		return err
	}
	start := p.cfg.Clock.Now()
	ctx := c.Request().Context()
	err := p.refreshIfStale(ctx)
	if err != nil && ctx.Err() != nil {
		// The client left or the server is stopping: nothing is answered,
		// so nothing is recorded.
		return fmt.Errorf("calendar today: %w", err)
	}
	v := p.calendarView()
	if err != nil && v.date == "" {
		p.recordRequest(start, true)
		return fmt.Errorf("calendar today: refresh failed and no calendar is usable: %w", err)
	}
	events := p.formatEvents(v.events, person, household)
	if events == nil {
		events = []string{}
	}
	resp := todayResponse{
		OK:                  true,
		Date:                v.date,
		Fetched:             epochSeconds(v.fetched),
		ConsecutiveFailures: v.failures,
		IncludeHousehold:    household,
		Events:              events,
		Count:               len(events),
	}
	if hasPerson {
		resp.Person = &person
	}
	p.recordRequest(start, false)
	return httpapi.WriteJSON(c, http.StatusOK, resp)
}

// recordRequest observes the route's duration and, for a 500, counts an
// exception.
func (p *Periphery) recordRequest(start time.Time, failed bool) {
	if o := p.cfg.RequestDuration; o != nil {
		o.Observe(p.cfg.Clock.Since(start).Seconds())
	}
	if failed && p.cfg.RequestErrors != nil {
		p.cfg.RequestErrors.Inc()
	}
}

// epochSeconds is t as fractional Unix seconds, 0 for the zero time.
func epochSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// refreshRound is one calendar refresh that later callers may wait for.
type refreshRound struct {
	done chan struct{} // closed when the refresh has ended
	// err and abandoned are set before done is closed.
	err       error
	abandoned bool // cut short by its starter's context: no result
	waiters   int  // callers waiting for it; guarded by refreshMu
}

// errAbandoned is a joined refresh that its starter's context cut short;
// it says nothing about the calendars, so the joiner tries again.
var errAbandoned = errors.New("calendar refresh abandoned by its starter")

// errRefreshAborted is the result of a refresh that never returned (a
// panic), so its waiters do not take it for a success.
var errRefreshAborted = errors.New("calendar refresh aborted")

// sharedRefresh runs a calendar refresh, or, while one is running, waits
// for it (bounded by ctx) and returns its result: there is never more than
// one gws round at a time. ran reports whether this call ran it. onRequest
// marks a request's refresh: within requestRefreshHold of the last failed
// one, that failure is returned instead of starting another.
func (p *Periphery) sharedRefresh(ctx context.Context, onRequest bool) (ran bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	p.refreshMu.Lock()
	if r := p.inflight; r != nil {
		r.waiters++
		p.refreshMu.Unlock()
		defer func() {
			p.refreshMu.Lock()
			r.waiters--
			p.refreshMu.Unlock()
		}()
		select {
		case <-r.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if r.abandoned {
			return false, errAbandoned
		}
		return false, r.err
	}
	if onRequest && p.reqFail != nil && p.cfg.Clock.Since(p.reqFailAt) < requestRefreshHold {
		err := p.reqFail
		p.refreshMu.Unlock()
		return false, err
	}
	r := &refreshRound{done: make(chan struct{})}
	p.inflight = r
	p.refreshMu.Unlock()

	err = errRefreshAborted // replaced unless refreshCalendar panics
	defer p.finishRefresh(ctx, r, onRequest, &err)
	err = p.refreshCalendar(ctx)
	return true, err
}

// finishRefresh publishes r's result to its waiters and remembers a failed
// on-request refresh for the hold.
func (p *Periphery) finishRefresh(ctx context.Context, r *refreshRound, onRequest bool, errp *error) {
	err := *errp
	r.err = err
	r.abandoned = err != nil && ctx.Err() != nil
	hold := onRequest && err != nil && !r.abandoned
	p.refreshMu.Lock()
	p.inflight = nil
	switch {
	case err == nil:
		p.reqFail = nil
	case hold:
		p.reqFail, p.reqFailAt = err, p.cfg.Clock.Now()
	}
	p.refreshMu.Unlock()
	close(r.done)
	if hold {
		// Once per failed refresh: the requests answered from the hold
		// share this line.
		p.log.Warn("calendar refresh on request failed", "error", err, "hold", requestRefreshHold)
	}
}

// refreshIfStale refreshes the calendar while some configured calendar has
// no usable entry for today, sharing a running refresh. A joined refresh
// that its starter abandoned is retried under ctx.
func (p *Periphery) refreshIfStale(ctx context.Context) error {
	for p.calendarStale() {
		_, err := p.sharedRefresh(ctx, true)
		if !errors.Is(err, errAbandoned) {
			return err
		}
	}
	return nil
}

// calendarStale reports whether some configured calendar has no entry
// usable now (never fetched, failed, another day's, or past CalendarTTL).
func (p *Periphery) calendarStale() bool {
	now := p.cfg.Clock.Now()
	today := dateKey(now.In(p.cfg.Location))
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, id := range p.cfg.CalendarIDs {
		if e, ok := p.cals[id]; !ok || !p.usableLocked(e, today, now) {
			return true
		}
	}
	return false
}
