package simclock

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

var t0 = time.Date(2026, 3, 26, 12, 0, 0, 0, time.UTC)

// next is c's next deadline as an offset from t0; -1 when there is none.
func next(c *Clock) time.Duration {
	at, ok := c.NextDeadline()
	if !ok {
		return -1
	}
	return at.Sub(t0)
}

func hasValue(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestClockTracksDeadlines(t *testing.T) {
	c := New(t0)
	if got := next(c); got != -1 {
		t.Fatalf("empty clock: next deadline %v", got)
	}
	tm := c.NewTimer(5 * time.Second)
	fn := c.AfterFunc(2*time.Second, func() {})
	tk := c.NewTicker(3 * time.Second)
	after := c.After(7 * time.Second)
	if got, n := next(c), c.Waiters(); got != 2*time.Second || n != 4 {
		t.Fatalf("next %v with %d waiters, want 2s with 4", got, n)
	}
	if !fn.Stop() {
		t.Fatal("AfterFunc's Stop: false before it fired")
	}
	if got, n := next(c), c.Waiters(); got != 3*time.Second || n != 3 {
		t.Fatalf("after Stop: next %v with %d waiters, want 3s with 3", got, n)
	}
	if !tm.Reset(time.Second) {
		t.Fatal("timer's Reset: false before it fired")
	}
	if got := next(c); got != time.Second {
		t.Fatalf("after Reset: next %v, want 1s", got)
	}

	c.Advance(time.Second)
	if !hasValue(tm.Chan()) {
		t.Fatal("timer did not fire at its reset deadline")
	}
	if got, n := next(c), c.Waiters(); got != 3*time.Second || n != 2 {
		t.Fatalf("after the timer fired: next %v with %d waiters, want 3s with 2", got, n)
	}

	// A ticker's Reset leaves one deadline: nothing fires at the old one.
	tk.Reset(10 * time.Second)
	if got, n := next(c), c.Waiters(); got != 7*time.Second || n != 2 {
		t.Fatalf("after ticker Reset: next %v with %d waiters, want 7s with 2", got, n)
	}
	c.Advance(2 * time.Second)
	if hasValue(tk.Chan()) {
		t.Fatal("ticker fired at its deadline from before Reset")
	}

	// A big Advance: After fires at 7 s, the ticker at 11 s and 21 s.
	c.Advance(18 * time.Second)
	if !hasValue(after) || !hasValue(tk.Chan()) {
		t.Fatal("After or ticker did not fire on a big Advance")
	}
	if got, n := next(c), c.Waiters(); got != 31*time.Second || n != 1 {
		t.Fatalf("after a big Advance: next %v with %d waiters, want 31s with 1", got, n)
	}
	tk.Stop()
	if got, n := next(c), c.Waiters(); got != -1 || n != 0 {
		t.Fatalf("after ticker Stop: next %v with %d waiters, want none", got, n)
	}
	if tm.Stop() {
		t.Fatal("timer's Stop: true after it fired")
	}
}

func TestClockZeroDurationsFireAtOnce(t *testing.T) {
	c := New(t0)
	tm := c.NewTimer(0)
	if !hasValue(tm.Chan()) {
		t.Fatal("NewTimer(0) did not fire at once")
	}
	done := make(chan struct{})
	c.AfterFunc(-time.Second, func() { close(done) })
	testkit.Recv(t, time.Minute, done, "AfterFunc(-1s) did not run at once")
	if n := c.Waiters(); n != 0 {
		t.Fatalf("%d waiters after waits that fired at once", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("Ticker.Reset(0) did not panic")
		}
	}()
	c.NewTicker(time.Second).Reset(0)
}

// A week of a 3 s ticker, read each time: the clock's tables stay at one
// live deadline and no unread channel.
func TestClockWeekOfTicksStaysBounded(t *testing.T) {
	c := New(t0)
	tk := c.NewTicker(3 * time.Second)
	const week = 7 * 24 * 3600 / 3
	for i := range week {
		c.Advance(3 * time.Second)
		if !hasValue(tk.Chan()) {
			t.Fatalf("tick %d missing", i)
		}
	}
	// A churn of timers, stopped, reset and fired, leaves nothing either.
	for range 100_000 {
		tm := c.NewTimer(time.Second)
		tm.Reset(2 * time.Second)
		tm.Stop()
		c.AfterFunc(time.Second, func() {}).Stop()
	}
	v := c.look(time.Minute, hclog.NewNullLogger(), &Stats{}) // forgets read channels, as Drive does
	c.mu.Lock()
	live, unread := len(c.live), len(c.unread)
	c.mu.Unlock()
	if live != 1 || unread != 0 || v.unread != 0 {
		t.Fatalf("after %d ticks and a churn: %d live deadlines, %d unread, want 1 and 0", week, live, unread)
	}
}
