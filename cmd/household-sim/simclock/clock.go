// Package simclock is the household simulator's clock: a clockwork.Clock
// that knows its live deadlines, and a driver that moves it through a
// simulated week as fast as the world it drives allows.
//
// # The clock
//
// Clock wraps a clockwork FakeClock. Every wait taken from it (NewTimer,
// AfterFunc, NewTicker, After, Sleep) is a live deadline until it fires or
// is stopped; Reset moves it. NextDeadline is the earliest one and Waiters
// counts them. Nothing is recorded: the clock holds one entry per live
// wait, one per fired channel not yet read (at most one per wait) and a
// count of AfterFunc callbacks still running, so a week of a 3 s ticker
// (200 000 firings) costs no more memory than a minute of it.
//
// A ticker's Reset stops it before setting the new period, so a ticker is
// never due twice (clockwork v0.5.0's own Reset adds a second entry).
//
// # The driver
//
// Drive moves the clock from now to a given instant by these rules:
//
//  1. A script event due now (Options.Next reports a time at or before
//     now) is started first, by Options.Start, with the clock at exactly
//     its time; Start must move Next on.
//  2. The world is settled when Options.Settled holds, every fired timer,
//     ticker or After channel has been read (or its timer stopped or
//     reset), no AfterFunc callback is running, and all of this held on two
//     polls in a row with no wait created, stopped, reset or fired in
//     between.
//  3. When the world is settled, the clock steps to the earliest of the
//     next deadline, the next script event and the end: exactly there,
//     never beyond, because the goroutines a big FakeClock.Advance wakes
//     all run after it, at its end time, whatever their own.
//  4. When the world has been unsettled for Options.Budget of real time
//     (Settled false, a callback running, or waits changing between every
//     two looks), not only for an unread channel (rule 5), the clock
//     creeps Options.Creep (100 ms) forward, but never past the next
//     deadline or script event: a fake-clock wait the world is blocked on
//     (a grace period, a reply wait, a backoff) then comes due, while a
//     fake-clock timeout that guards real I/O in flight is reached only
//     after Budget of real time per Creep of simulated time.
//  5. A fired channel unread for Options.Abandon of real time is taken as
//     abandoned (an After in a select whose other case won) and forgotten,
//     with a log line; waiting for it never creeps.
//
// Whether a step waits for the world is decided by polling in real time,
// so how long a simulated day takes depends on the machine; where the
// clock stops and which deadlines fire in which order does not, as long as
// Settled tells the truth about the world.
package simclock

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// kind is what a deadline wakes.
type kind uint8

const (
	kindChan kind = iota // a timer's or After's channel
	kindFunc             // an AfterFunc callback
	kindTick             // a ticker's channel
)

// deadline mirrors one clockwork waiter: when it is due and what it does
// then. It is in Clock.live while clockwork holds it as a waiter.
type deadline struct {
	at     time.Time
	period time.Duration // tickers only
	kind   kind
	ch     <-chan time.Time // kindChan and kindTick
	// pending is set while the channel holds a value the clock sent and
	// nobody has read yet.
	pending bool
	firedAt time.Time // real time of the send behind pending
	// calls counts the AfterFunc callbacks the clock started that have not
	// returned.
	calls int
}

// Clock is a clockwork.Clock on a FakeClock that tracks its live
// deadlines. All moves of the clock go through Advance or Drive.
type Clock struct {
	mu      sync.Mutex
	fake    *clockwork.FakeClock
	live    map[*deadline]struct{}
	unread  map[*deadline]struct{} // fired channels not yet read
	running int                    // AfterFunc callbacks started and not returned
	gen     uint64                 // bumped by every change of live, unread or running
}

var _ clockwork.Clock = (*Clock)(nil)

// New is a Clock at t.
func New(t time.Time) *Clock {
	return &Clock{
		fake:   clockwork.NewFakeClockAt(t),
		live:   make(map[*deadline]struct{}),
		unread: make(map[*deadline]struct{}),
	}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return c.fake.Now() }

// Since is the time elapsed on the clock since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.fake.Since(t) }

// Until is the time left on the clock until t.
func (c *Clock) Until(t time.Time) time.Duration { return c.fake.Until(t) }

// After is a channel that receives the clock's time once d has passed.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep blocks until d has passed on the clock.
func (c *Clock) Sleep(d time.Duration) { <-c.After(d) }

// NewTimer is a timer on the clock.
func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	inner := c.fake.NewTimer(d)
	dl := &deadline{kind: kindChan, ch: inner.Chan()}
	c.schedule(dl, d)
	return &timer{c: c, inner: inner, dl: dl}
}

// AfterFunc runs f in its own goroutine once d has passed on the clock.
// Until f returns, the world is not settled.
func (c *Clock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	dl := &deadline{kind: kindFunc}
	inner := c.fake.AfterFunc(d, func() {
		defer c.funcDone(dl)
		f()
	})
	c.schedule(dl, d)
	return &timer{c: c, inner: inner, dl: dl}
}

// NewTicker is a ticker on the clock; d must be positive, as for
// time.NewTicker.
func (c *Clock) NewTicker(d time.Duration) clockwork.Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	inner := c.fake.NewTicker(d) // panics on d <= 0, as time.NewTicker does
	dl := &deadline{kind: kindTick, period: d, ch: inner.Chan()}
	c.schedule(dl, d)
	return &ticker{c: c, inner: inner, dl: dl}
}

// NextDeadline is the earliest live deadline; false when there is none.
func (c *Clock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextLocked()
}

// Waiters is the number of live deadlines: timers, tickers and After or
// Sleep calls not yet due and not stopped.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live)
}

// Advance moves the clock d forward, firing what comes due on the way, as
// FakeClock.Advance does (each at its own time, but all before Advance
// returns). Drive steps to exact deadlines instead.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fake.Advance(d)
	c.fireLocked(c.fake.Now())
}

// nextLocked is the earliest live deadline. c.mu must be held.
func (c *Clock) nextLocked() (time.Time, bool) {
	var next time.Time
	found := false
	for dl := range c.live {
		if !found || dl.at.Before(next) {
			next, found = dl.at, true
		}
	}
	return next, found
}

// schedule mirrors clockwork's setExpirer: a positive d is a live
// deadline d from now; any other fires at once. c.mu must be held.
func (c *Clock) schedule(dl *deadline, d time.Duration) {
	c.gen++
	if d > 0 {
		dl.at = c.fake.Now().Add(d)
		c.live[dl] = struct{}{}
		return
	}
	c.fired(dl)
}

// unschedule mirrors clockwork's stopExpirer: the deadline is no longer
// live and its owner has given up on any value left in the channel.
// c.mu must be held.
func (c *Clock) unschedule(dl *deadline) {
	c.gen++
	delete(c.live, dl)
	c.clearUnread(dl)
}

// fireLocked mirrors the firings of a move to now: every live deadline at
// or before now fires; a ticker comes due again a period later, as often
// as it takes to pass now. c.mu must be held.
func (c *Clock) fireLocked(now time.Time) {
	for dl := range c.live {
		if dl.at.After(now) {
			continue
		}
		c.gen++
		c.fired(dl)
		if dl.kind != kindTick {
			delete(c.live, dl)
			continue
		}
		for !dl.at.After(now) {
			dl.at = dl.at.Add(dl.period)
		}
	}
}

// fired notes what a firing leaves behind: an unread channel or a running
// callback. c.mu must be held.
func (c *Clock) fired(dl *deadline) {
	switch dl.kind {
	case kindFunc:
		dl.calls++
		c.running++
	default:
		if len(dl.ch) > 0 && !dl.pending {
			dl.pending = true
			dl.firedAt = time.Now()
			c.unread[dl] = struct{}{}
		}
	}
}

// funcDone is the end of an AfterFunc callback.
func (c *Clock) funcDone(dl *deadline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dl.calls > 0 {
		dl.calls--
		c.running--
		c.gen++
	}
}

// clearUnread forgets dl's unread value. c.mu must be held.
func (c *Clock) clearUnread(dl *deadline) {
	if dl.pending {
		dl.pending = false
		delete(c.unread, dl)
		c.gen++
	}
}

// timer is a Timer whose Stop and Reset keep the deadline table true.
type timer struct {
	c     *Clock
	inner clockwork.Timer
	dl    *deadline
}

func (t *timer) Chan() <-chan time.Time { return t.inner.Chan() }

// Stop stops the timer; false when it had already fired or stopped.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	stopped := t.inner.Stop()
	t.c.unschedule(t.dl)
	return stopped
}

// Reset makes the timer due d from now; false when it had already fired
// or stopped.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	stopped := t.inner.Reset(d)
	t.c.unschedule(t.dl)
	t.c.schedule(t.dl, d)
	return stopped
}

// ticker is a Ticker whose Stop and Reset keep the deadline table true.
type ticker struct {
	c     *Clock
	inner clockwork.Ticker
	dl    *deadline
}

func (t *ticker) Chan() <-chan time.Time { return t.inner.Chan() }

// Stop stops the ticker.
func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.inner.Stop()
	t.c.unschedule(t.dl)
}

// Reset makes the ticker tick every d from now; d must be positive, as
// for time.Ticker.Reset.
func (t *ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("non-positive interval for Ticker.Reset")
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.inner.Stop() // clockwork's Reset alone would leave the old entry due too
	t.inner.Reset(d)
	t.c.unschedule(t.dl)
	t.dl.period = d
	t.c.schedule(t.dl, d)
}
