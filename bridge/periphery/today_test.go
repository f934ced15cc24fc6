package periphery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// observations counts what the route observes into its duration histogram.
type observations struct {
	mu sync.Mutex
	n  int
}

func (o *observations) Observe(float64) {
	o.mu.Lock()
	o.n++
	o.mu.Unlock()
}

func (o *observations) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// routeFixture serves a calFixture's Periphery through echo with the
// bridge's error handler on a real HTTP server.
type routeFixture struct {
	*calFixture
	srv      *httptest.Server
	client   *http.Client
	observed *observations
	errs     prometheus.Counter
	httpLogs *testkit.LogBuffer
}

func newRouteFixture(t *testing.T, mutate func(*Config), ids ...string) *routeFixture {
	t.Helper()
	r := &routeFixture{
		observed: &observations{},
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "dotty_request_errors_total",
			Help:        "Request errors, partitioned by endpoint and error kind.",
			ConstLabels: prometheus.Labels{"endpoint": EndpointCalendarToday, "kind": "exception"},
		}),
		httpLogs: &testkit.LogBuffer{},
	}
	r.calFixture = newCalFixture(t, func(c *Config) {
		c.RequestDuration, c.RequestErrors = r.observed, r.errs
		if mutate != nil {
			mutate(c)
		}
	}, ids...)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.New(&hclog.LoggerOptions{Output: r.httpLogs}))
	r.p.Routes(e)
	r.srv = httptest.NewServer(e)
	tr := &http.Transport{}
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		r.srv.Close()
	})
	return r
}

// answer is a response as the client saw it.
type answer struct {
	status int
	ctype  string
	body   string
}

// fetch GETs /api/calendar/today?query under ctx.
func (r *routeFixture) fetch(ctx context.Context, query string) (answer, error) {
	u := r.srv.URL + "/api/calendar/today"
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return answer{}, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}, nil
}

// fetchLater GETs today's events in the background; the answer arrives
// on the channel, and a failed request fails the test (what names it).
func (r *routeFixture) fetchLater(t testing.TB, what string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		a, err := r.fetch(context.Background(), "")
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		out <- a
	}()
	return out
}

func (r *routeFixture) get(t testing.TB, query string) answer {
	t.Helper()
	a, err := r.fetch(context.Background(), query)
	if err != nil {
		t.Fatalf("GET ?%s: %v", query, err)
	}
	return a
}

// getToday GETs and decodes a 200 answer (the raw bodies' keys and order
// are pinned by TestCalendarTodayBody's exact bodies).
func (r *routeFixture) getToday(t testing.TB, query string) todayResponse {
	t.Helper()
	a := r.get(t, query)
	if a.status != http.StatusOK || a.ctype != httpapi.MIMEJSON {
		t.Fatalf("GET ?%s = %d %q %s, want 200 JSON", query, a.status, a.ctype, a.body)
	}
	var d todayResponse
	if err := json.Unmarshal([]byte(a.body), &d); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
	return d
}

func (r *routeFixture) errors() float64 { return testutil.ToFloat64(r.errs) }

// refreshWaiters is how many callers wait for the running refresh.
func (p *Periphery) refreshWaiters() int {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	if p.inflight == nil {
		return 0
	}
	return p.inflight.waiters
}

func strPtr(s string) *string { return &s }

var okEvents = []string{
	"all-day Bin night",
	"07:45 Breakfast",
	"09:30 [Alex] Swimming",
	"14:00 Call [email] re invoice",
	"16:15 [sam] Piano",
}

var contextEvents = []string{"all-day Bin night", "09:30 [Alex] Swimming"}

func TestCalendarTodayDisabled(t *testing.T) {
	r := newRouteFixture(t, nil)
	a := r.get(t, "")
	want := `{"ok":true,"date":"","fetched":0,"consecutive_failures":0,"person":null,"include_household":true,"events":[],"count":0}`
	if a.status != http.StatusOK || a.ctype != httpapi.MIMEJSON || a.body != want {
		t.Errorf("got %d %q %s\nwant 200 %q %s", a.status, a.ctype, a.body, httpapi.MIMEJSON, want)
	}
	if n := r.observed.count(); n != 1 {
		t.Errorf("%d durations observed, want 1", n)
	}
	if got := r.errors(); got != 0 {
		t.Errorf("errors %v, want 0", got)
	}
	if calls := readCalls(t, r.sa); len(calls) != 0 {
		t.Errorf("gws ran %d times with no calendar", len(calls))
	}
}

// TestCalendarTodayBody pins the exact bytes: key order, compact JSON,
// fetched in fractional epoch seconds.
func TestCalendarTodayBody(t *testing.T) {
	r := newRouteFixture(t, nil, "ok")
	at := morning.Add(250 * time.Millisecond)
	r.clock.Set(at)
	a := r.get(t, "person=")
	// 2026-05-17 08:00:00.25 AEST is 1778968800.25.
	want := `{"ok":true,"date":"2026-05-17","fetched":1778968800.25,"consecutive_failures":0,"person":"","include_household":true,` +
		`"events":["all-day Bin night","07:45 Breakfast","09:30 [Alex] Swimming","14:00 Call [email] re invoice","16:15 [sam] Piano"],"count":5}`
	if a.status != http.StatusOK || a.ctype != httpapi.MIMEJSON || a.body != want {
		t.Errorf("got %d %q\n %s\nwant\n %s", a.status, a.ctype, a.body, want)
	}

	// The keys in order, read as a stream of tokens.
	dec := json.NewDecoder(strings.NewReader(a.body))
	var keys []string
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && dec.More() {
				keys = append(keys, v)
				// Skip the value that follows the key.
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	wantKeys := []string{"ok", "date", "fetched", "consecutive_failures", "person", "include_household", "events", "count"}
	if diff := cmp.Diff(keys, wantKeys); diff != "" {
		t.Errorf("key order (-got +want):\n%s", diff)
	}
}

// TestCalendarTodayFilter: person and include_household through the privacy
// funnel, the [Name] tag only without a person, person echoed as given.
func TestCalendarTodayFilter(t *testing.T) {
	r := newRouteFixture(t, nil, "ok")
	tests := []struct {
		query     string
		person    *string
		household bool
		events    []string
	}{
		{"", nil, true, okEvents},
		{"include_household=false", nil, false, okEvents},
		{"person=", strPtr(""), true, okEvents},
		{"person=%20", strPtr(" "), true, okEvents},
		{"person=alex", strPtr("alex"), true, []string{
			"all-day Bin night", "07:45 Breakfast", "09:30 Swimming", "14:00 Call [email] re invoice"}},
		{"person=ALEX&include_household=false", strPtr("ALEX"), false, []string{"09:30 Swimming"}},
		{"person=Sam&include_household=0", strPtr("Sam"), false, []string{"16:15 Piano"}},
		{"person=robin", strPtr("robin"), true, []string{"all-day Bin night", "07:45 Breakfast", "14:00 Call [email] re invoice"}},
		{"person=robin&include_household=no", strPtr("robin"), false, []string{}},
		{"person=a&person=alex&include_household=off", strPtr("alex"), false, []string{"09:30 Swimming"}},
	}
	for _, tc := range tests {
		t.Run("?"+tc.query, func(t *testing.T) {
			got := r.getToday(t, tc.query)
			want := todayResponse{OK: true, Date: "2026-05-17", Fetched: float64(morning.Unix()), Person: tc.person,
				IncludeHousehold: tc.household, Events: tc.events, Count: len(tc.events)}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
		})
	}
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Errorf("%d gws runs, want 1 (the cache is fresh after the first)", len(calls))
	}
	if n := r.observed.count(); n != len(tests) {
		t.Errorf("%d durations observed, want %d", n, len(tests))
	}
}

// TestCalendarTodayFailure: gws fails with nothing cached → FastAPI's
// plain-text 500, one exception counted, one Warn with the cause.
func TestCalendarTodayFailure(t *testing.T) {
	r := newRouteFixture(t, nil, "fail")
	a := r.get(t, "")
	if a.status != http.StatusInternalServerError || a.ctype != httpapi.MIMEText || a.body != "Internal Server Error" {
		t.Errorf("got %d %q %q, want 500 %q \"Internal Server Error\"", a.status, a.ctype, a.body, httpapi.MIMEText)
	}
	if got := r.errors(); got != 1 {
		t.Errorf("errors %v, want 1", got)
	}
	if n := r.observed.count(); n != 1 {
		t.Errorf("%d durations observed, want 1", n)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, "[WARN]"); n != 1 || !strings.Contains(logs, "permission denied") {
		t.Errorf("want one Warn naming the cause, got:\n%s", logs)
	}
	if got := r.failures(KindOther); got != 1 {
		t.Errorf("calendar failures{other} = %v, want 1", got)
	}
	if !strings.Contains(r.httpLogs.String(), "permission denied") {
		t.Errorf("the error handler did not get the cause:\n%s", r.httpLogs.String())
	}
}

// TestCalendarTodayPartialFailure: one calendar fails, another is usable →
// 200 with what is usable; consecutive_failures shows the failure.
func TestCalendarTodayPartialFailure(t *testing.T) {
	r := newRouteFixture(t, nil, "context", "fail")
	got := r.getToday(t, "")
	want := todayResponse{OK: true, Date: "2026-05-17", Fetched: float64(morning.Unix()), ConsecutiveFailures: 1,
		IncludeHousehold: true, Events: contextEvents, Count: 2}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
	if e := r.errors(); e != 0 {
		t.Errorf("errors %v, want 0", e)
	}
	// Within the hold the failed calendar is not asked again; the good one
	// is still served.
	if got := r.getToday(t, ""); !cmp.Equal(got.Events, contextEvents) {
		t.Errorf("events %q", got.Events)
	}
	if calls := readCalls(t, r.sa); len(calls) != 2 {
		t.Errorf("%d gws runs, want 2 (one round of two calendars)", len(calls))
	}
}

// TestCalendarTodayStaleRefresh: a cache past CalendarTTL, or of another
// day, is refreshed on request; a fresh one is not.
func TestCalendarTodayStaleRefresh(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	if got := r.getToday(t, ""); !cmp.Equal(got.Events, okEvents) {
		t.Fatalf("events %q, want the ok set", got.Events)
	}
	r.setMode(t, "context")

	r.clock.Set(morning.Add(DefaultCalendarTTL)) // at the TTL: still fresh
	if got := r.getToday(t, ""); !cmp.Equal(got.Events, okEvents) || got.Fetched != float64(morning.Unix()) {
		t.Errorf("at the TTL: %+v, want the cached ok set", got)
	}
	if n := len(readCalls(t, r.sa)); n != 1 {
		t.Errorf("%d gws runs within the TTL, want 1", n)
	}

	later := morning.Add(DefaultCalendarTTL + time.Second)
	r.clock.Set(later)
	got := r.getToday(t, "")
	if !cmp.Equal(got.Events, contextEvents) || got.Fetched != float64(later.Unix()) || got.Date != "2026-05-17" {
		t.Errorf("past the TTL: %+v, want the new events fetched at %d", got, later.Unix())
	}
	if n := len(readCalls(t, r.sa)); n != 2 {
		t.Errorf("%d gws runs, want 2", n)
	}

	// Fetched at 23:59:59, the cache is within the TTL two seconds later,
	// but the date has rolled.
	beforeMidnight := time.Date(2026, 5, 17, 23, 59, 59, 0, aest)
	r.clock.Set(beforeMidnight)
	if got := r.getToday(t, ""); got.Date != "2026-05-17" || got.Fetched != float64(beforeMidnight.Unix()) {
		t.Fatalf("before midnight: %+v", got)
	}
	r.setMode(t, "ok")
	r.clock.Set(beforeMidnight.Add(2 * time.Second))
	got = r.getToday(t, "")
	if got.Date != "2026-05-18" || !cmp.Equal(got.Events, okEvents) {
		t.Errorf("after midnight: %+v, want the new day's events", got)
	}
	calls := readCalls(t, r.sa)
	if len(calls) != 4 || !strings.Contains(calls[3].Args[4], `"timeMin":"2026-05-18T00:00:00+10:00"`) {
		t.Errorf("gws calls %v, want a 4th for the new day", calls)
	}
}

// TestCalendarTodayConcurrent: requests arriving while a slow refresh runs
// wait for it and share its result; gws runs once.
func TestCalendarTodayConcurrent(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	r.setMode(t, "gate")
	gate := newGate(t, r.calFixture)

	const n = 8
	answers := make(chan answer, n+1)
	failed := make(chan error, n+1)
	ask := func() {
		a, err := r.fetch(context.Background(), "person=alex&include_household=false")
		if err != nil {
			failed <- err
			return
		}
		answers <- a
	}
	go ask()
	run := gate.arrive(t) // the first request's refresh is under way
	for range n {
		go ask()
	}
	testkit.WaitFor(t, 5*time.Second, "the other requests to join the refresh", func() bool { return r.p.refreshWaiters() == n })
	gate.release(t, run, "context")

	want := `{"ok":true,"date":"2026-05-17","fetched":1778968800,"consecutive_failures":0,"person":"alex","include_household":false,"events":["09:30 Swimming"],"count":1}`
	for i := range n + 1 {
		select {
		case a := <-answers:
			if a.status != http.StatusOK || a.body != want {
				t.Errorf("answer %d: %d %s", i, a.status, a.body)
			}
		case err := <-failed:
			t.Errorf("request %d: %v", i, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d answers within 10s", i, n+1)
		}
	}
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Errorf("%d gws runs, want 1", len(calls))
	}
	if got := r.observed.count(); got != n+1 {
		t.Errorf("%d durations observed, want %d", got, n+1)
	}
}

// TestCalendarTodayFailureHold: after an on-request refresh failed, a
// flood of requests gets the remembered failure for 5 s and starts no gws.
func TestCalendarTodayFailureHold(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	r.setMode(t, "fail")
	if a := r.get(t, ""); a.status != http.StatusInternalServerError {
		t.Fatalf("first request: %d %s, want 500", a.status, a.body)
	}

	// A flood, in turn and at once.
	const flood = 20
	for range flood {
		if a := r.get(t, ""); a.status != http.StatusInternalServerError || a.body != "Internal Server Error" {
			t.Fatalf("flood: %d %s, want 500", a.status, a.body)
		}
	}
	var wg sync.WaitGroup
	statuses := make(chan int, flood)
	for range flood {
		wg.Go(func() {
			a, err := r.fetch(context.Background(), "")
			if err != nil {
				t.Errorf("flood: %v", err)
				return
			}
			statuses <- a.status
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusInternalServerError {
			t.Errorf("concurrent flood: %d, want 500", s)
		}
	}
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Fatalf("%d gws runs during the hold, want 1", len(calls))
	}

	// gws would succeed now, but the hold still answers for it.
	r.setMode(t, "context")
	r.clock.Advance(requestRefreshHold - time.Millisecond)
	if a := r.get(t, ""); a.status != http.StatusInternalServerError {
		t.Errorf("just inside the hold: %d, want 500", a.status)
	}
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Errorf("%d gws runs just inside the hold, want 1", len(calls))
	}

	r.clock.Advance(time.Millisecond)
	got := r.getToday(t, "")
	if !cmp.Equal(got.Events, contextEvents) || got.ConsecutiveFailures != 0 {
		t.Errorf("after the hold: %+v, want a good refresh", got)
	}
	if calls := readCalls(t, r.sa); len(calls) != 2 {
		t.Errorf("%d gws runs after the hold, want 2", len(calls))
	}

	answered500 := 1 + 2*flood + 1
	if e := r.errors(); e != float64(answered500) {
		t.Errorf("errors %v, want %d", e, answered500)
	}
	if n := r.observed.count(); n != answered500+1 {
		t.Errorf("%d durations observed, want %d", n, answered500+1)
	}
	if n := strings.Count(r.logs.String(), "[WARN]"); n != 1 {
		t.Errorf("%d Warn lines for one failed refresh, want 1:\n%s", n, r.logs.String())
	}
	if _, _, fails := r.p.CalendarStatus(); fails != 0 {
		t.Errorf("consecutive failures %d after the good refresh", fails)
	}
}

func TestCalendarTodayBadBool(t *testing.T) {
	r := newRouteFixture(t, nil, "ok")
	for _, v := range []string{"maybe", "", "2", "truee", "1.0"} {
		a := r.get(t, "person=alex&include_household="+v)
		want := fmt.Sprintf(`{"detail":[{"type":"bool_parsing","loc":["query","include_household"],`+
			`"msg":"Input should be a valid boolean, unable to interpret input","input":%q}]}`, v)
		if a.status != http.StatusUnprocessableEntity || a.ctype != httpapi.MIMEJSON || a.body != want {
			t.Errorf("include_household=%s: %d %q %s\nwant 422 %s", v, a.status, a.ctype, a.body, want)
		}
	}
	if n := r.observed.count(); n != 0 {
		t.Errorf("%d durations observed for 422s, want 0", n)
	}
	if calls := readCalls(t, r.sa); len(calls) != 0 {
		t.Errorf("gws ran %d times for invalid requests", len(calls))
	}
}

// TestCalendarTodayLaxBools: pydantic's lax boolean words, any case.
func TestCalendarTodayLaxBools(t *testing.T) {
	r := newRouteFixture(t, nil, "ok")
	household := []string{"all-day Bin night", "07:45 Breakfast", "14:00 Call [email] re invoice"}
	for v, want := range map[string]bool{
		"true": true, "True": true, "TRUE": true, "1": true, "t": true, "T": true, "y": true, "yes": true, "YeS": true, "on": true, "ON": true,
		"false": false, "False": false, "0": false, "f": false, "F": false, "n": false, "no": false, "NO": false, "off": false, "Off": false,
	} {
		got := r.getToday(t, "person=robin&include_household="+v)
		wantEvents := []string{}
		if want {
			wantEvents = household
		}
		if got.IncludeHousehold != want || !cmp.Equal(got.Events, wantEvents) {
			t.Errorf("include_household=%s: %v %q, want %v %q", v, got.IncludeHousehold, got.Events, want, wantEvents)
		}
	}
}

// TestCalendarTodayAbandonedRefresh: when the request that started a
// refresh goes away, its gws is killed and a waiting request refreshes
// itself; the gone request records nothing.
func TestCalendarTodayAbandonedRefresh(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	r.setMode(t, "gate")
	gate := newGate(t, r.calFixture)

	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	doneA := make(chan error, 1)
	go func() {
		_, err := r.fetch(ctxA, "")
		doneA <- err
	}()
	runA := gate.arrive(t)
	defer runA.Close()

	doneB := r.fetchLater(t, "request B")
	testkit.WaitFor(t, 5*time.Second, "request B to join", func() bool { return r.p.refreshWaiters() == 1 })

	cancelA()
	if err := testkit.Recv(t, 5*time.Second, doneA, "request A did not end within 5s of its cancel"); err == nil {
		t.Error("request A answered after its cancel")
	}
	runB := gate.arrive(t) // B's own refresh, after A's gws was killed
	gate.release(t, runB, "context")
	if a := testkit.Recv(t, 10*time.Second, doneB, "request B did not answer within 10s"); a.status != http.StatusOK || !strings.Contains(a.body, `"events":["all-day Bin night","09:30 [Alex] Swimming"]`) {
		t.Errorf("request B: %d %s", a.status, a.body)
	}
	if calls := readCalls(t, r.sa); len(calls) != 2 {
		t.Errorf("%d gws runs, want 2", len(calls))
	}
	if n := r.observed.count(); n != 1 {
		t.Errorf("%d durations observed, want 1 (B's)", n)
	}
	for _, k := range FailureKinds {
		if got := r.failures(k); got != 0 {
			t.Errorf("failures{%s} = %v: a killed gws is not a calendar failure", k, got)
		}
	}
	if e := r.errors(); e != 0 {
		t.Errorf("errors %v, want 0", e)
	}
	if _, _, fails := r.p.CalendarStatus(); fails != 0 {
		t.Errorf("consecutive failures %d, want 0", fails)
	}
}

// TestRunSharesRefreshWithRequests: a request arriving while the loop's
// refresh runs takes that refresh's result instead of starting another.
func TestRunSharesRefreshWithRequests(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	r.setMode(t, "gate")
	gate := newGate(t, r.calFixture)
	stop := runPeriphery(t, r.p)
	defer stop()

	run := gate.arrive(t) // the loop's first round
	done := r.fetchLater(t, "request")
	testkit.WaitFor(t, 5*time.Second, "the request to join the loop's refresh", func() bool { return r.p.refreshWaiters() == 1 })
	gate.release(t, run, "context")
	if a := testkit.Recv(t, 10*time.Second, done, "no answer within 10s"); a.status != http.StatusOK || !strings.Contains(a.body, `"count":2`) {
		t.Errorf("request: %d %s", a.status, a.body)
	}
	if d := r.sleeper.next(t); d != DefaultCalendarPoll {
		t.Errorf("loop waits %v after the shared round, want the poll", d)
	}
	stop()
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Errorf("%d gws runs, want 1", len(calls))
	}
}

// TestRunJoinsFailedRequestRefresh: the loop that takes a request's failed
// refresh backs off without a second Warn for the same failure.
func TestRunJoinsFailedRequestRefresh(t *testing.T) {
	r := newRouteFixture(t, nil, "toggle")
	r.setMode(t, "gate")
	gate := newGate(t, r.calFixture)

	done := r.fetchLater(t, "request")
	run := gate.arrive(t) // the request's refresh
	stop := runPeriphery(t, r.p)
	defer stop()
	testkit.WaitFor(t, 5*time.Second, "the loop to join the request's refresh", func() bool { return r.p.refreshWaiters() == 1 })
	gate.release(t, run, "fail")
	if a := testkit.Recv(t, 10*time.Second, done, "no answer within 10s"); a.status != http.StatusInternalServerError {
		t.Errorf("request: %d %s, want 500", a.status, a.body)
	}
	if d := r.sleeper.next(t); d != 60*time.Second {
		t.Errorf("loop waits %v after the failed round, want the 60s backoff", d)
	}
	stop()
	if n := strings.Count(r.logs.String(), "[WARN]"); n != 1 {
		t.Errorf("%d Warn lines for one failure, want 1:\n%s", n, r.logs.String())
	}
	if calls := readCalls(t, r.sa); len(calls) != 1 {
		t.Errorf("%d gws runs, want 1", len(calls))
	}
}
