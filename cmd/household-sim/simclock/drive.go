package simclock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Options.
const (
	DefaultBudget  = 20 * time.Millisecond
	DefaultCreep   = 100 * time.Millisecond
	DefaultAbandon = time.Second
	DefaultPoll    = 100 * time.Microsecond
)

// quickLooks is how many looks after a move are apart by a yield only.
const quickLooks = 4

// Options are Drive's script, settle test and real-time knobs.
type Options struct {
	// Next is the time of the script's next event not yet started; false
	// when there is none. Nil: no script.
	Next func() (time.Time, bool)
	// Start starts every script event due at or before now (the clock's
	// time, which is exactly the first one's time unless it was already
	// past when Drive began). It must not wait on the clock: work it
	// begins (an HTTP request, say) runs in its own goroutine and is
	// counted by Settled. Afterwards Next must report a later time.
	Start func(now time.Time)
	// Settled reports that nothing the driver cannot see is in flight:
	// requests, fakes' handlers, child processes, a component between
	// reading a tick and waiting again. Nil: always.
	Settled func() bool
	// Budget is how long in real time the world may stay unsettled
	// before the clock creeps; 0 is DefaultBudget.
	Budget time.Duration
	// Creep is how far the clock moves when it creeps; 0 is DefaultCreep.
	Creep time.Duration
	// Abandon is how long in real time a fired channel may stay unread
	// before it is taken as abandoned; 0 is DefaultAbandon.
	Abandon time.Duration
	// Poll is the real time between two looks at the world; 0 is
	// DefaultPoll.
	Poll time.Duration
	// OnStep, if set, sees every move of the clock.
	OnStep func(Step)
	// Log gets a line per abandoned channel. Nil: discarded.
	Log hclog.Logger
}

// StepKind is why the clock moved.
type StepKind uint8

// The reasons for a step.
const (
	StepDeadline StepKind = iota // settled: to the next deadline
	StepEvent                    // settled: to the next script event
	StepEnd                      // settled: to the end of the drive
	StepCreep                    // unsettled for Budget: Creep forward, or less
)

func (k StepKind) String() string {
	switch k {
	case StepDeadline:
		return "deadline"
	case StepEvent:
		return "event"
	case StepEnd:
		return "end"
	default:
		return "creep"
	}
}

// Step is one move of the clock.
type Step struct {
	From, To time.Time
	Kind     StepKind
}

// Stats counts what a Drive did.
type Stats struct {
	Steps     int // settled steps (deadline, event or end)
	Creeps    int // creeping steps
	Events    int // calls to Options.Start
	Abandoned int // fired channels forgotten unread
	// Unsettled is set when Drive returned at its end with the world
	// still unsettled after Budget.
	Unsettled bool
}

// ErrScriptStuck is Drive's error when Options.Start leaves Options.Next
// at or before the clock's time.
var ErrScriptStuck = errors.New("simclock: Start did not move Next past the clock's time")

// withDefaults fills zero knobs and checks the rest, naming the field.
func (o Options) withDefaults() (Options, error) {
	if o.Next != nil && o.Start == nil {
		return o, errors.New("simclock: Options.Start is required with Options.Next")
	}
	for _, k := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Budget", &o.Budget, DefaultBudget},
		{"Creep", &o.Creep, DefaultCreep},
		{"Abandon", &o.Abandon, DefaultAbandon},
		{"Poll", &o.Poll, DefaultPoll},
	} {
		switch {
		case *k.v < 0:
			return o, fmt.Errorf("simclock: Options.%s is negative: %v", k.name, *k.v)
		case *k.v == 0:
			*k.v = k.def
		}
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	return o, nil
}

// view is one look at what the clock can see of the world.
type view struct {
	gen     uint64
	unread  int
	running int
	next    time.Time
	hasNext bool
}

// look forgets read and abandoned channels, then reports the rest.
func (c *Clock) look(abandon time.Duration, log hclog.Logger, stats *Stats) view {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dl := range c.unread {
		switch {
		case len(dl.ch) == 0:
			c.clearUnread(dl)
		case time.Since(dl.firedAt) >= abandon:
			c.clearUnread(dl)
			stats.Abandoned++
			log.Debug("fired channel unread, taken as abandoned", "due", dl.at, "abandon", abandon)
		}
	}
	v := view{gen: c.gen, unread: len(c.unread), running: c.running}
	v.next, v.hasNext = c.nextLocked()
	return v
}

// moveTo sets the clock to t, firing what is due there.
func (c *Clock) moveTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fake.Advance(t.Sub(c.fake.Now()))
	c.fireLocked(t)
}

// Drive moves the clock to until by the rules in the package doc and
// returns what it did. It stops early with ctx's error, or with
// ErrScriptStuck.
func (c *Clock) Drive(ctx context.Context, until time.Time, o Options) (Stats, error) {
	var stats Stats
	o, err := o.withDefaults()
	if err != nil {
		return stats, err
	}
	if now := c.Now(); until.Before(now) {
		return stats, fmt.Errorf("simclock: Drive until %v, before the clock's time %v", until, now)
	}
	var (
		prevOK         bool
		prevGen        uint64
		unsettledSince time.Time // zero while settled
		looks          int       // since the last move
		poll           = time.NewTimer(o.Poll)
	)
	defer poll.Stop()
	step := func(to time.Time, k StepKind) {
		from := c.Now()
		c.moveTo(to)
		if k == StepCreep {
			stats.Creeps++
		} else {
			stats.Steps++
		}
		if o.OnStep != nil {
			o.OnStep(Step{From: from, To: to, Kind: k})
		}
		prevOK, unsettledSince, looks = false, time.Time{}, 0
	}
	for {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		now := c.Now()
		// Rule 1: a due script event starts first.
		event, hasEvent := time.Time{}, false
		if o.Next != nil {
			event, hasEvent = o.Next()
			if hasEvent && !event.After(now) {
				o.Start(now)
				stats.Events++
				if again, ok := o.Next(); ok && !again.After(now) {
					return stats, ErrScriptStuck
				}
				prevOK, unsettledSince, looks = false, time.Time{}, 0
				continue
			}
		}
		// The target: the earliest of deadline, event and end.
		v := c.look(o.Abandon, o.Log, &stats)
		target, kind := until, StepEnd
		if hasEvent && event.Before(target) {
			target, kind = event, StepEvent
		}
		if v.hasNext && !v.next.After(target) {
			target, kind = v.next, StepDeadline
		}
		// Rule 2: settled on two looks in a row, nothing changed between.
		world := o.Settled == nil || o.Settled()
		ok := world && v.unread == 0 && v.running == 0
		switch {
		case ok && prevOK && v.gen == prevGen:
			if !target.After(now) {
				return stats, nil // at the end, settled
			}
			step(target, kind) // rule 3
			continue
		case !world || v.running > 0 || (ok && prevOK):
			// Busy, or changing its waits on every look: rule 4.
			if unsettledSince.IsZero() {
				unsettledSince = time.Now()
				break
			}
			if time.Since(unsettledSince) < o.Budget {
				break
			}
			if !target.After(now) {
				stats.Unsettled = true
				return stats, nil
			}
			step(minTime(now.Add(o.Creep), target), StepCreep)
			continue
		default:
			// The first quiet look, or only unread channels: rule 5.
			unsettledSince = time.Time{}
		}
		prevOK, prevGen = ok, v.gen
		// The first looks after a move only yield to the goroutines it
		// woke; later ones sleep Poll.
		if looks++; looks <= quickLooks {
			runtime.Gosched()
			continue
		}
		poll.Reset(o.Poll)
		select {
		case <-ctx.Done():
			return stats, ctx.Err()
		case <-poll.C:
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
