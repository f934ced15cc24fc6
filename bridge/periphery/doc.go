// Package periphery keeps the voice prompt's context extras fresh: the
// weather line (wttr.in) and today's calendar events (Google Calendar via the
// gws CLI). bridge.py refreshed both on the request path and could hold a
// voice turn for ~15 s; here [Periphery.Run] refreshes them in the background
// and the request path only reads the caches.
//
// # Usage
//
//	p := periphery.New(cfg)          // cfg.Validate() first, in cmd
//	go p.Run(ctx)                    // or as an actor of the run group
//	parts := p.ContextParts()        // "Brisbane: …", "Today: …"
//	p.Routes(e)                      // GET /api/calendar/today
//
// # Concurrency properties
//
// The read methods ([Periphery.Weather], [Periphery.Today],
// [Periphery.ContextParts], [Periphery.CalendarStatus]) take a read lock,
// copy, and return; they never block on I/O and are safe for concurrent use.
// [Periphery.Run] owns two goroutines (weather and calendar), each doing its
// I/O outside the lock and storing the result under it; Run returns only after
// both have ended. Run may be called once.
//
// Calendar refreshes, from the loop or from the route, run one at a time: a
// caller that finds one running waits for it (bounded by its own context)
// and takes its result. A refresh ends with the context of the caller that
// started it; callers still waiting then refresh under their own.
//
// # Weather
//
// GET <WeatherURL>/<escaped location>?format=%C+%t+%h+%w with a 10 s request
// and 15 s overall bound. A non-empty body without "Unknown" or "Sorry" is
// cached with its fetch time and served while younger than WeatherTTL. It is
// refreshed at start and then shortly before it expires; failures retry after
// 60 s, doubling, capped at WeatherTTL.
//
// # Calendar
//
// For each calendar id, $GWS_BIN calendar events list --params <json> runs
// with GOOGLE_APPLICATION_CREDENTIALS=$CALENDAR_SA_PATH and a 15 s limit.
// Failures count dotty_calendar_fetch_failures_total{kind} with kind timeout,
// parse or other (orchestrator is pre-created and never used here). Summaries
// pass a privacy funnel (ISO timestamps removed, e-mail addresses replaced by
// "[email]", "[Name] rest" tagged to person Name, the rest in the household
// bucket). Each calendar's last good events are served until they are older
// than CalendarTTL or the local date has changed. Polls run every
// CalendarPoll (and just after local midnight); consecutive failed rounds
// back off 60/120/300/600 s.
//
// # GET /api/calendar/today
//
// Query: person (optional string) and include_household (lax boolean,
// default true; a bad value is a 422 located at ["query",
// "include_household"]). When some calendar has no usable entry for today,
// the request refreshes the cache first, bounded by its context and the
// per-calendar timeout. It answers 200 with
// {"ok","date","fetched","consecutive_failures","person",
// "include_household","events","count"}, events from the same funnel as the
// prompt: with person unset (or "") every event, person events tagged
// "[Name] "; otherwise that person's, plus the household's when asked. A
// failed refresh with no calendar usable is a plain-text 500 (counted as
// dotty_request_errors_total{endpoint="calendar_today",kind="exception"});
// with some calendars usable it is a 200 with those. A failed on-request
// refresh answers for the next 5 s instead of a new gws run, so a client
// polling the route cannot start one process per request.
//
// # Environment (parsed by cmd)
//
//	WEATHER_LOCATION           Brisbane ("" disables weather)
//	WEATHER_URL                https://wttr.in (Go only)
//	WEATHER_TTL_SEC            1800
//	CALENDAR_ID                "" (comma list; empty disables the calendar)
//	CALENDAR_SA_PATH           /root/.zeroclaw/secrets/google-calendar-sa.json
//	GWS_BIN                    /usr/local/bin/gws
//	CALENDAR_TTL_SEC           7200
//	CALENDAR_POLL_SEC          900
//	CALENDAR_HOUSEHOLD_BUCKET  _household
//	CALENDAR_PERSON_PREFIX_RE  ^\s*\[(?P<person>[A-Za-z][A-Za-z0-9_-]{0,31})\]\s*(?P<rest>.+)$
//	TZ                         zone of "today" and event times
package periphery
