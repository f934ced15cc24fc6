package periphery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/subproc"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

const (
	// maxGWSOutput bounds gws's stdout; 50 events are far below it.
	maxGWSOutput = 8 << 20
	// maxGWSStderr is how much of gws's stderr tail a failure reports.
	maxGWSStderr = 512
	// untitled replaces a summary that is empty after the funnel (Google
	// omits it for events shared as free/busy only).
	untitled = "busy"
	// midnightMargin puts the post-midnight refresh safely in the new day.
	midnightMargin = time.Second
)

// calendarBackoffSteps are the waits after 1, 2, 3 and ≥4 consecutive
// failed refresh rounds (bridge.py's schedule).
var calendarBackoffSteps = []time.Duration{60 * time.Second, 120 * time.Second, 300 * time.Second, 600 * time.Second}

// calendarBackoff is the wait after the n-th consecutive failure (n ≥ 1).
func calendarBackoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	return calendarBackoffSteps[min(n, len(calendarBackoffSteps))-1]
}

// gwsParams is the --params JSON, fields in bridge.py's order.
type gwsParams struct {
	CalendarID   string `json:"calendarId"`
	TimeMin      string `json:"timeMin"`
	TimeMax      string `json:"timeMax"`
	SingleEvents bool   `json:"singleEvents"`
	OrderBy      string `json:"orderBy"`
	MaxResults   int    `json:"maxResults"`
}

// gwsEvents is the part of the Calendar API's events.list answer we read.
type gwsEvents struct {
	Items []gwsItem       `json:"items"`
	Error json.RawMessage `json:"error"`
}

type gwsItem struct {
	Status  string  `json:"status"`
	Summary string  `json:"summary"`
	Start   gwsTime `json:"start"`
}

type gwsTime struct {
	Date     string `json:"date"`
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

// fetchError is a counted calendar failure of one kind.
type fetchError struct {
	kind string
	err  error
}

func (e *fetchError) Error() string { return e.kind + ": " + e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// failureKind is err's metric kind (other unless it says otherwise).
func failureKind(err error) string {
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe.kind
	}
	return KindOther
}

// Privacy funnel patterns.
var (
	// isoTimestampRe matches ISO 8601 dates with an optional time and zone:
	// 2026-05-17, 2026-05-17T09:30, 2026-05-17T09:30:00.5+10:00, … Z.
	isoTimestampRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?\b`)
	})
	// emailRe matches e-mail addresses.
	emailRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+`)
	})
)

// funnel runs a summary through the privacy funnel: trim, drop ISO
// timestamps, collapse spaces, split off a person tag, replace e-mail
// addresses with [email]. It returns the bucket (lowercased person or the
// household bucket), the person as written ("" for household) and the title.
// The tag is matched before e-mail replacement so "[email]" never becomes a
// person. The summary is outside text bound for prompts (the context line,
// the greeter): the person and the title are made safe with prompttext.Line
// before the bridge adds its own "[email]" markers, then the title is cut
// to prompttext.Event.
func (p *Periphery) funnel(summary string) (bucket, name, title string) {
	s := strings.Join(strings.Fields(isoTimestampRe().ReplaceAllString(summary, " ")), " ")
	bucket, title = p.cfg.HouseholdBucket, s
	re := p.cfg.PersonPrefix
	if m := re.FindStringSubmatch(s); m != nil {
		n := cleanText(prompttext.Line(m[re.SubexpIndex("person")], prompttext.Name))
		if n != "" {
			bucket, name, title = strings.ToLower(n), n, m[re.SubexpIndex("rest")]
		}
	}
	title = prompttext.Cut(cleanText(prompttext.Line(title, prompttext.Cap{})), prompttext.Event)
	if title == "" {
		title = untitled
	}
	return bucket, name, title
}

// cleanText replaces e-mail addresses and collapses whitespace.
func cleanText(s string) string {
	return strings.Join(strings.Fields(emailRe().ReplaceAllString(s, "[email]")), " ")
}

// startOfDay is local midnight of t's day in loc.
func startOfDay(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
}

// nextDay is local midnight after day (DST-safe).
func nextDay(day time.Time) time.Time {
	return time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, day.Location())
}

// calendarParams is the --params JSON for id and the day starting at day.
func calendarParams(id string, day time.Time) ([]byte, error) {
	return json.Marshal(gwsParams{
		CalendarID:   id,
		TimeMin:      day.Format(time.RFC3339),
		TimeMax:      nextDay(day).Format(time.RFC3339),
		SingleEvents: true,
		OrderBy:      "startTime",
		MaxResults:   50,
	})
}

// fetchCalendar lists one calendar's events for the day starting at day.
// A failure is a *fetchError unless ctx ended (shutdown, not counted).
func (p *Periphery) fetchCalendar(ctx context.Context, id string, day time.Time) ([]event, error) {
	params, err := calendarParams(id, day)
	if err != nil {
		return nil, &fetchError{KindOther, fmt.Errorf("encode params: %w", err)}
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.calendarTimeout)
	defer cancel()
	// #nosec G204 -- GWS_BIN is the operator's; params is our own JSON, passed as one argument (no shell)
	cmd := exec.CommandContext(cctx, p.cfg.GWSBin, "calendar", "events", "list", "--params", string(params))
	cmd.Env = os.Environ()
	if p.cfg.CalendarSAPath != "" {
		cmd.Env = append(cmd.Env, "GOOGLE_APPLICATION_CREDENTIALS="+p.cfg.CalendarSAPath)
	}
	stdout := &cappedBuffer{max: maxGWSOutput}
	stderr := &subproc.Tail{Max: maxGWSStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = processWaitDelay
	subproc.Configure(cmd)

	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("gws: %w", ctx.Err())
	}
	if runErr != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return nil, &fetchError{KindTimeout, fmt.Errorf("gws: no answer within %v", p.cfg.calendarTimeout)}
		}
		msg := ""
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			msg = ": " + tail
		}
		return nil, &fetchError{KindOther, fmt.Errorf("gws: %w%s", runErr, msg)}
	}
	if stdout.overflow {
		return nil, &fetchError{KindParse, fmt.Errorf("gws: output over %d bytes", maxGWSOutput)}
	}
	return p.parseEvents(stdout.buf.Bytes())
}

// parseEvents decodes gws's answer into funnelled events, skipping cancelled
// and unusable items.
func (p *Periphery) parseEvents(data []byte) ([]event, error) {
	var ans gwsEvents
	if err := json.Unmarshal(bytes.TrimSpace(data), &ans); err != nil {
		return nil, &fetchError{KindParse, fmt.Errorf("decode gws output: %w", err)}
	}
	if e := bytes.TrimSpace(ans.Error); len(e) > 0 && !bytes.Equal(e, []byte("null")) {
		return nil, &fetchError{KindOther, fmt.Errorf("calendar api error: %s", text.Truncate(string(e), text.Cut{Max: 200, Mark: "…"}))}
	}
	evs := make([]event, 0, len(ans.Items))
	for _, it := range ans.Items {
		if it.Status == "cancelled" {
			continue
		}
		start, allDay, ok := p.eventStart(it.Start)
		if !ok {
			p.log.Debug("calendar event without a usable start skipped")
			continue
		}
		bucket, name, title := p.funnel(it.Summary)
		evs = append(evs, event{allDay: allDay, start: start, bucket: bucket, name: name, text: title})
	}
	return evs, nil
}

// eventStart parses an event start: dateTime (RFC 3339; without an offset,
// in its timeZone or Location) or an all-day date.
func (p *Periphery) eventStart(t gwsTime) (time.Time, bool, bool) {
	if t.DateTime != "" {
		if ts, err := time.Parse(time.RFC3339, t.DateTime); err == nil {
			return ts, false, true
		}
		loc := p.cfg.Location
		if t.TimeZone != "" {
			if l, err := time.LoadLocation(t.TimeZone); err == nil {
				loc = l
			}
		}
		if ts, err := time.ParseInLocation("2006-01-02T15:04:05", t.DateTime, loc); err == nil {
			return ts, false, true
		}
		return time.Time{}, false, false
	}
	if t.Date != "" {
		if ts, err := time.ParseInLocation(time.DateOnly, t.Date, p.cfg.Location); err == nil {
			return ts, true, true
		}
	}
	return time.Time{}, false, false
}

// refreshCalendar fetches every calendar once, storing each good result. It
// fails when any calendar failed (that calendar keeps its last good events).
func (p *Periphery) refreshCalendar(ctx context.Context) error {
	day := startOfDay(p.cfg.Clock.Now(), p.cfg.Location)
	var errs []error
	for _, id := range p.cfg.CalendarIDs {
		evs, err := p.fetchCalendar(ctx, id, day)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			p.countFailure(failureKind(err))
			errs = append(errs, fmt.Errorf("calendar %s: %w", id, err))
			continue
		}
		fetched := p.cfg.Clock.Now()
		p.mu.Lock()
		p.cals[id] = calEntry{date: dateKey(day), fetched: fetched, events: evs}
		p.calFetched = fetched
		p.mu.Unlock()
	}
	err := errors.Join(errs...)
	p.mu.Lock()
	if err != nil {
		p.calFailures++
	} else {
		p.calFailures = 0
	}
	p.mu.Unlock()
	return err
}

// countFailure increments the failure counter; a metric error is ignored.
func (p *Periphery) countFailure(kind string) {
	if p.cfg.Metrics == nil {
		return
	}
	if c, err := p.cfg.Metrics.CalendarFailures.GetMetricWithLabelValues(kind); err == nil {
		c.Inc()
	}
}

// calendarLoop refreshes at start, then every CalendarPoll and just after
// local midnight; failed rounds back off 60/120/300/600 s. A round that
// finds a request's refresh running takes that refresh's result.
func (p *Periphery) calendarLoop(ctx context.Context) {
	failures := 0
	for {
		ran, err := p.sharedRefresh(ctx, false)
		for errors.Is(err, errAbandoned) {
			ran, err = p.sharedRefresh(ctx, false)
		}
		if ctx.Err() != nil {
			return
		}
		var delay time.Duration
		if err == nil {
			if failures > 0 {
				p.log.Info("calendar refresh recovered", "attempt", failures+1)
			}
			failures = 0
			delay = p.calendarPollDelay()
		} else {
			failures++
			delay = calendarBackoff(failures)
			// A request's refresh that failed has already said so.
			if failures == 1 && ran {
				p.log.Warn("calendar refresh failed", "error", err, "attempt", failures, "delay", delay)
			} else {
				p.log.Debug("calendar refresh failed", "error", err, "attempt", failures, "delay", delay)
			}
		}
		if p.sleep(ctx, delay) != nil {
			return
		}
	}
}

// calendarPollDelay is the wait after a good round: CalendarPoll, or less so
// the next round runs just after local midnight (the cache is empty from
// midnight until then).
func (p *Periphery) calendarPollDelay() time.Duration {
	now := p.cfg.Clock.Now()
	untilMidnight := nextDay(startOfDay(now, p.cfg.Location)).Add(midnightMargin).Sub(now)
	if untilMidnight > 0 && untilMidnight < p.cfg.CalendarPoll {
		return untilMidnight
	}
	return p.cfg.CalendarPoll
}

// cappedBuffer keeps the first max bytes and notes any overflow; it never
// fails a write, so the child is never blocked on a full pipe.
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.overflow = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}
