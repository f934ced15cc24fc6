package testkit

import (
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is the tests' one fake clock: clockwork's FakeClock, moved only
// by Advance, that also records every wait asked of it (After, Sleep,
// NewTimer, AfterFunc), so a test can check durations such as backoff
// delays and wait for a timer to be started.
type Clock struct {
	*clockwork.FakeClock

	mu        sync.Mutex
	requested []time.Duration
}

// NewClock is a Clock at a fixed instant (2023-11-14 22:13:20 UTC).
func NewClock() *Clock { return NewClockAt(time.Unix(1_700_000_000, 0)) }

// NewClockAt is a Clock at t.
func NewClockAt(t time.Time) *Clock { return &Clock{FakeClock: clockwork.NewFakeClockAt(t)} }

// Set moves the clock to t (Advance by the difference), firing the
// timers it passes.
func (c *Clock) Set(t time.Time) { c.Advance(t.Sub(c.Now())) }

// record notes d once its timer is registered, so a test that sees d
// in Requested can Advance past it.
func (c *Clock) record(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requested = append(c.requested, d)
}

// After records d and returns the fake clock's channel.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.record(d)
	return ch
}

// Sleep records d and sleeps on the fake clock.
func (c *Clock) Sleep(d time.Duration) {
	c.record(d)
	c.FakeClock.Sleep(d)
}

// NewTimer records d and returns the fake clock's timer.
func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	t := c.FakeClock.NewTimer(d)
	c.record(d)
	return t
}

// AfterFunc records d and returns the fake clock's timer.
func (c *Clock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := c.FakeClock.AfterFunc(d, f)
	c.record(d)
	return t
}

// Requested returns every duration waited on so far, in call order.
func (c *Clock) Requested() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requested)
}
