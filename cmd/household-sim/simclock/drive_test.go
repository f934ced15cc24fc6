package simclock

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// hangBound bounds every Drive of these tests against a hang; it is never
// a timing assertion.
const hangBound = 2 * time.Minute

// drive runs c.Drive to until within hangBound and fails the test on error.
func drive(t *testing.T, c *Clock, until time.Time, o Options) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangBound)
	defer cancel()
	stats, err := c.Drive(ctx, until, o)
	if err != nil {
		t.Fatalf("Drive: %v (stats %+v)", err, stats)
	}
	return stats
}

// script is a list of event times, started in order.
type script struct {
	mu      sync.Mutex
	at      []time.Time
	started []time.Time // the clock's time at each Start
	run     func(now time.Time)
}

func (s *script) Next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) == 0 {
		return time.Time{}, false
	}
	return s.at[0], true
}

func (s *script) Start(now time.Time) {
	s.mu.Lock()
	for len(s.at) > 0 && !s.at[0].After(now) {
		s.at = s.at[1:]
		s.started = append(s.started, now)
		if s.run != nil {
			s.run(now)
		}
	}
	s.mu.Unlock()
}

// consume reads ch in a goroutine of its own until ctx ends, handing f
// each value.
func consume(ctx context.Context, ch <-chan time.Time, f func(time.Time)) {
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case at := <-ch:
				f(at)
			}
		}
	}()
}

// A ticker loop that reads every tick: with nothing to settle but the
// unread channel, the clock steps tick by tick and the loop sees each one.
func TestDriveTickerLoop(t *testing.T) {
	c := New(t0)
	tk := c.NewTicker(3 * time.Second)
	defer tk.Stop()
	var (
		mu  sync.Mutex
		got []time.Time
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	consume(ctx, tk.Chan(), func(at time.Time) {
		mu.Lock()
		got = append(got, at)
		mu.Unlock()
	})
	stats := drive(t, c, t0.Add(time.Hour), Options{Abandon: hangBound})
	if stats.Steps != 1200 || stats.Creeps != 0 || stats.Abandoned != 0 {
		t.Fatalf("stats %+v, want 1200 steps, no creep, nothing abandoned", stats)
	}
	testkit.WaitFor(t, time.Minute, "the loop to record the last tick", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1200
	})
	mu.Lock()
	defer mu.Unlock()
	for i, at := range got {
		if want := t0.Add(time.Duration(i+1) * 3 * time.Second); !at.Equal(want) {
			t.Fatalf("tick %d at %v, want %v", i, at, want)
		}
	}
	if !c.Now().Equal(t0.Add(time.Hour)) {
		t.Fatalf("clock at %v after the drive, want %v", c.Now(), t0.Add(time.Hour))
	}
}

// A daily-rollover loop (next midnight by time.Date(y, m, d+1, …)) and an
// hourly ticker in Europe/London across the spring change of 2026-03-29,
// with script events on both sides of it: every midnight fires at local
// 00:00, the short day is 23 hours, events start at their exact times.
func TestDriveDailyRolloverAcrossDST(t *testing.T) {
	london := testkit.Zone("Europe/London")
	start := time.Date(2026, 3, 26, 12, 0, 0, 0, london)
	until := time.Date(2026, 4, 2, 12, 0, 0, 0, london)
	c := New(start)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var (
		mu        sync.Mutex
		midnights []time.Time
		ticks     int
	)
	tk := c.NewTicker(time.Hour)
	defer tk.Stop()
	consume(ctx, tk.Chan(), func(time.Time) {
		mu.Lock()
		ticks++
		mu.Unlock()
	})
	go func() {
		for {
			now := c.Now().In(london)
			midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, london)
			var at time.Time
			select {
			case <-ctx.Done():
				return
			case at = <-c.After(c.Until(midnight)):
			}
			mu.Lock()
			midnights = append(midnights, at)
			mu.Unlock()
		}
	}()
	// Settled: both loops wait on the clock (the rollover loop has taken
	// its next wait after waking).
	testkit.WaitFor(t, time.Minute, "both loops to wait", func() bool { return c.Waiters() == 2 })

	s := &script{at: []time.Time{
		time.Date(2026, 3, 29, 0, 30, 0, 0, london), // GMT
		time.Date(2026, 3, 29, 2, 30, 0, 0, london), // BST, an hour after the change
		time.Date(2026, 3, 30, 0, 0, 0, 0, london),  // with a midnight
	}}
	want := append([]time.Time(nil), s.at...)
	stats := drive(t, c, until, Options{
		Next:    s.Next,
		Start:   s.Start,
		Settled: func() bool { return c.Waiters() == 2 },
		Abandon: hangBound,
	})

	// The drive ends settled: the last tick has been read, if not yet counted.
	testkit.WaitFor(t, time.Minute, "the hourly loop to count its last tick", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ticks >= 7*24-1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(midnights) != 7 {
		t.Fatalf("%d midnights %v, want 7", len(midnights), midnights)
	}
	for i, m := range midnights {
		l := m.In(london)
		if l.Hour() != 0 || l.Minute() != 0 || l.Second() != 0 || l.Nanosecond() != 0 || l.Day() != start.AddDate(0, 0, i+1).Day() {
			t.Fatalf("midnight %d at %v, want local 00:00 of day %d", i, l, start.AddDate(0, 0, i+1).Day())
		}
		if i == 0 {
			continue
		}
		day := 24 * time.Hour
		if l.Day() == 30 { // the day of the change ends here
			day = 23 * time.Hour
		}
		if got := m.Sub(midnights[i-1]); got != day {
			t.Fatalf("day before %v lasted %v, want %v", l, got, day)
		}
	}
	if hours := int(until.Sub(start) / time.Hour); ticks != hours || hours != 7*24-1 {
		t.Fatalf("%d hourly ticks over %d hours, want %d", ticks, hours, 7*24-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.started) != len(want) || stats.Events != len(want) {
		t.Fatalf("started %v (%d Start calls), want %v", s.started, stats.Events, want)
	}
	for i := range want {
		if !s.started[i].Equal(want[i]) {
			t.Fatalf("event %d started at %v, want %v", i, s.started[i], want[i])
		}
	}
}

// A chain of AfterFunc callbacks, each setting the next: the clock counts
// a running callback as unsettled, so it never steps past the next link
// before the callback has set it.
func TestDriveAfterFuncChain(t *testing.T) {
	c := New(t0)
	var (
		mu  sync.Mutex
		got []time.Time
	)
	var link func()
	link = func() {
		mu.Lock()
		got = append(got, c.Now())
		n := len(got)
		mu.Unlock()
		if n < 10 {
			c.AfterFunc(time.Second, link)
		}
	}
	c.AfterFunc(time.Second, link)
	// A budget of a minute: a callback not yet run is never crept past
	// (a bound against a hang, as testkit.MinWait).
	stats := drive(t, c, t0.Add(time.Minute), Options{Budget: time.Minute})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 10 {
		t.Fatalf("%d links ran, want 10 (stats %+v)", len(got), stats)
	}
	for i, at := range got {
		if want := t0.Add(time.Duration(i+1) * time.Second); !at.Equal(want) {
			t.Fatalf("link %d at %v, want %v", i, at, want)
		}
	}
}

// fetcher is a toy component that guards a real HTTP request with a
// fake-clock timeout, as the bridge's greeter and photo waits do.
type fetcher struct {
	c        *Clock
	url      string
	timeout  time.Duration
	inflight atomic.Int32
	mu       sync.Mutex
	result   string
	doneAt   time.Time // the clock when the result came
	fired    time.Time // the timeout's own time, when it fired
}

// start begins one fetch; the fetch counts as in flight from here.
func (f *fetcher) start(ctx context.Context) {
	f.inflight.Add(1)
	go func() {
		defer f.inflight.Add(-1)
		reply := make(chan string, 1)
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
			if err != nil {
				reply <- err.Error()
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				reply <- err.Error()
				return
			}
			resp.Body.Close()
			reply <- resp.Status
		}()
		tm := f.c.NewTimer(f.timeout)
		defer tm.Stop()
		var (
			r     string
			fired time.Time
		)
		select {
		case r = <-reply:
		case fired = <-tm.Chan():
			r = "timeout"
		}
		f.mu.Lock()
		f.result, f.doneAt, f.fired = r, f.c.Now(), fired
		f.mu.Unlock()
	}()
}

func (f *fetcher) outcome() (result string, doneAt, fired time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.result, f.doneAt, f.fired
}

// A fake-clock timeout around real I/O: while the request is in flight the
// clock only creeps, never past a deadline, so a wait the server is
// blocked on comes due, and a reply is taken before a timeout 10 minutes
// of creeping away (6 000 creeps of a 20 ms budget: two minutes of real
// time, a bound against a hang, never a timing assertion); a server that
// never answers meets the timeout on a step of its own.
func TestDriveTimeoutAroundRealIO(t *testing.T) {
	cases := []struct {
		name    string
		serve   func(c *Clock) http.HandlerFunc
		timeout time.Duration
		budget  time.Duration
		result  string
	}{
		{
			name: "answers at once",
			serve: func(*Clock) http.HandlerFunc {
				return func(http.ResponseWriter, *http.Request) {}
			},
			timeout: 10*time.Minute + 50*time.Millisecond,
			budget:  20 * time.Millisecond,
			result:  "200 OK",
		},
		{
			name: "answers after a 2 s fake-clock wait",
			serve: func(c *Clock) http.HandlerFunc {
				return func(http.ResponseWriter, *http.Request) { c.Sleep(2 * time.Second) }
			},
			timeout: 10*time.Minute + 50*time.Millisecond,
			budget:  20 * time.Millisecond,
			result:  "200 OK",
		},
		{
			name: "never answers",
			serve: func(*Clock) http.HandlerFunc {
				return func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
			},
			timeout: 3*time.Second + 50*time.Millisecond,
			budget:  time.Millisecond,
			result:  "timeout",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(t0)
			srv := httptest.NewServer(tc.serve(c))
			defer srv.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			f := &fetcher{c: c, url: srv.URL, timeout: tc.timeout}
			begin := t0.Add(time.Second)
			s := &script{at: []time.Time{begin}, run: func(time.Time) { f.start(ctx) }}
			var steps []Step
			stats := drive(t, c, begin.Add(tc.timeout+time.Minute), Options{
				Next:    s.Next,
				Start:   s.Start,
				Settled: func() bool { return f.inflight.Load() == 0 },
				Budget:  tc.budget,
				Abandon: hangBound,
				OnStep:  func(st Step) { steps = append(steps, st) },
			})
			result, at, fired := f.outcome()
			t.Logf("%s at +%v; stats %+v", result, at.Sub(begin), stats)
			if result != tc.result {
				t.Fatalf("result %q at +%v, want %q", result, at.Sub(begin), tc.result)
			}
			for i, st := range steps {
				if st.Kind == StepCreep && st.To.Sub(st.From) > DefaultCreep {
					t.Fatalf("step %d creeps %v", i, st.To.Sub(st.From))
				}
			}
			switch {
			case result == "timeout":
				// The timeout came due on a step of its own, none passed it.
				landed := false
				for i, st := range steps {
					landed = landed || st.To.Equal(fired)
					if st.From.Before(fired) && st.To.After(fired) {
						t.Fatalf("step %d %v → %v passes the timeout at %v", i, st.From, st.To, fired)
					}
				}
				if !landed || fired.Sub(begin) < tc.timeout {
					t.Fatalf("timed out at +%v (a step there: %v), want at least +%v on a step", fired.Sub(begin), landed, tc.timeout)
				}
				if stats.Creeps < 31 {
					t.Fatalf("%d creeps, want at least 31 to reach +3.05 s", stats.Creeps)
				}
			case strings.Contains(tc.name, "2 s"):
				// Only creeping moves the clock while the request is in flight.
				if at.Before(begin.Add(2*time.Second)) || stats.Creeps < 20 {
					t.Fatalf("answered at +%v after %d creeps, want at or after +2s, 20 creeps", at.Sub(begin), stats.Creeps)
				}
			}
		})
	}
}

// Channels fired and never read (an After whose select went the other
// way) are forgotten after Abandon, and the drive goes on.
func TestDriveAbandonsUnreadChannels(t *testing.T) {
	c := New(t0)
	for range 1000 {
		c.After(time.Second)
	}
	stats := drive(t, c, t0.Add(time.Minute), Options{Abandon: time.Millisecond})
	if stats.Abandoned != 1000 || stats.Steps != 2 {
		t.Fatalf("stats %+v, want 1000 abandoned in 2 steps (the deadline, the end)", stats)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unread) != 0 || len(c.live) != 0 {
		t.Fatalf("%d unread, %d live after the drive", len(c.unread), len(c.live))
	}
}

func TestDriveRefusesBadOptions(t *testing.T) {
	c := New(t0)
	for _, tc := range []struct {
		o     Options
		until time.Time
		want  string
	}{
		{Options{Next: func() (time.Time, bool) { return time.Time{}, false }}, t0, "Options.Start"},
		{Options{Budget: -time.Second}, t0, "Options.Budget"},
		{Options{Creep: -time.Second}, t0, "Options.Creep"},
		{Options{Abandon: -time.Second}, t0, "Options.Abandon"},
		{Options{Poll: -time.Second}, t0, "Options.Poll"},
		{Options{}, t0.Add(-time.Second), "before the clock's time"},
	} {
		_, err := c.Drive(t.Context(), tc.until, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %q", err, tc.want)
		}
	}

	stuck := Options{
		Next:  func() (time.Time, bool) { return t0, true },
		Start: func(time.Time) {},
	}
	if _, err := c.Drive(t.Context(), t0.Add(time.Second), stuck); !errors.Is(err, ErrScriptStuck) {
		t.Errorf("a Start that does not move Next: %v, want ErrScriptStuck", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Drive(ctx, t0.Add(time.Second), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v, want context.Canceled", err)
	}
}

// A component that resets a timer all the time, in real time, never lets
// two looks agree; the drive still reaches its end, by creeping.
func TestDriveProgressesThroughChurn(t *testing.T) {
	c := New(t0)
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tm := c.NewTimer(time.Hour)
		defer tm.Stop()
		for ctx.Err() == nil {
			tm.Reset(time.Hour)
			runtime.Gosched()
		}
	}()
	stats := drive(t, c, t0.Add(time.Second), Options{Budget: time.Millisecond})
	cancel()
	testkit.Recv(t, time.Minute, stopped, "the churning goroutine did not stop")
	if !c.Now().Equal(t0.Add(time.Second)) || stats.Steps+stats.Creeps == 0 {
		t.Fatalf("clock at %v, stats %+v; want at +1s", c.Now(), stats)
	}
	t.Logf("stats %+v", stats)
}

// A world that never settles: at the end the drive returns, marked
// Unsettled, instead of waiting for it.
func TestDriveReturnsUnsettledAtTheEnd(t *testing.T) {
	c := New(t0)
	stats := drive(t, c, t0.Add(time.Second), Options{
		Settled: func() bool { return false },
		Budget:  time.Millisecond,
	})
	if !stats.Unsettled || stats.Creeps != 10 || !c.Now().Equal(t0.Add(time.Second)) {
		t.Fatalf("stats %+v, clock at %v; want unsettled after 10 creeps at +1s", stats, c.Now())
	}
}

// BenchmarkDriveTicker3s prints the cost of one settled step of a 3 s
// ticker loop and what a simulated day of it (28 800 steps) takes in real
// time; nothing about speed is asserted.
func BenchmarkDriveTicker3s(b *testing.B) {
	c := New(t0)
	tk := c.NewTicker(3 * time.Second)
	defer tk.Stop()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	consume(ctx, tk.Chan(), func(time.Time) {})
	b.ResetTimer()
	begin := time.Now()
	stats, err := c.Drive(ctx, t0.Add(time.Duration(b.N)*3*time.Second), Options{})
	elapsed := time.Since(begin)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	perStep := elapsed / time.Duration(max(stats.Steps, 1))
	day := perStep * (24 * 3600 / 3)
	b.ReportMetric(float64(perStep.Nanoseconds()), "ns/step")
	b.ReportMetric(day.Seconds(), "s/simday")
	b.Logf("%d steps: %v a step, a simulated day of a 3 s ticker ≈ %v real", stats.Steps, perStep, day.Round(time.Millisecond))
}
