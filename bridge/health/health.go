// Package health keeps the bridge's conditions: what is failing right now
// that an operator must fix, as GET /health reports it ("status":
// "degraded" and "problems"). A component that must write (the
// conversation log and journals, the voice memory, the state files) marks
// its key failing when a write fails and clears it when a write succeeds
// again. The set also decides what is news, so a cause repeated by every
// turn or event is logged once: Failed and Recovered mark and log, Fail
// and Clear only mark and report whether that was news.
//
// A failing condition may carry a Check, a cheap re-check of its cause
// (the directory it needs takes a file again, see Writable and DirCheck).
// Run re-checks those every RecheckInterval and clears the ones that pass,
// so /health says "ok" once the operator has fixed the cause, not only at
// the component's next write, which may be a day away. A condition with
// no Check is cleared by the component's next successful write alone.
package health

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// RecheckInterval is how often Run re-checks the failing conditions that
// carry a Check.
const RecheckInterval = 15 * time.Second

// A Check re-checks the cause of a failing condition: nil means the cause
// is gone and the condition may be cleared. It must be cheap, must not
// block for long, and must not do the component's work (a probe of the
// directory, not the write itself). Run calls it from its own goroutine,
// without holding any lock of the set.
type Check func() error

// Config configures a set.
type Config struct {
	// Logger receives the recoveries Run finds for conditions marked with
	// Fail (those marked with Failed go to the component's logger). Nil
	// discards.
	Logger hclog.Logger
	// Clock times Run's re-checks; nil is the real clock.
	Clock clockwork.Clock
	// Interval is how often Run re-checks; 0 means RecheckInterval.
	Interval time.Duration
}

// Conditions is the set of failing keys, each with its problem text. One
// set is shared by every component; the zero value is not usable, use New
// or NewWith. A nil *Conditions holds nothing. Safe for concurrent use.
type Conditions struct {
	log      hclog.Logger
	clock    clockwork.Clock
	interval time.Duration

	mu       sync.Mutex
	problems map[string]condition // key → what fails
	seq      uint64               // counts Fail calls: a re-check clears only the failure it checked
}

// condition is one failing key.
type condition struct {
	problem string
	check   Check        // nil: cleared by the component alone
	log     hclog.Logger // where its recovery by a re-check is logged
	what    string       // the component, in that line
	seq     uint64       // the Fail that set it
}

// New returns an empty set with the default Config.
func New() *Conditions { return NewWith(Config{}) }

// NewWith returns an empty set configured by cfg.
func NewWith(cfg Config) *Conditions {
	c := &Conditions{log: cfg.Logger, clock: cfg.Clock, interval: cfg.Interval, problems: map[string]condition{}}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.clock == nil {
		c.clock = clockwork.NewRealClock()
	}
	if c.interval <= 0 {
		c.interval = RecheckInterval
	}
	return c
}

// Fail marks key failing with problem, a short text naming the component
// and the error ("conversation log: open /x/convo-2026-11-27.ndjson:
// permission denied"), and check, the re-check of its cause (nil: none);
// a key already failing takes the new text and check. It reports whether
// key was not failing before, which is when the caller logs the cause (a
// nil set: always).
func (c *Conditions) Fail(key, problem string, check Check) (news bool) {
	return c.fail(key, condition{problem: problem, check: check, what: key})
}

func (c *Conditions) fail(key string, cond condition) (news bool) {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.problems[key]
	c.seq++
	cond.seq = c.seq
	c.problems[key] = cond
	return !was
}

// Clear marks key healthy and reports whether it was failing (the caller
// may log the recovery then).
func (c *Conditions) Clear(key string) (was bool) {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was = c.problems[key]
	delete(c.problems, key)
	return was
}

// Failed marks key failing with the problem "<what>: <err>" and check (as
// Fail), and logs msg, with args and the error, at level when the
// condition begins and at Debug while it lasts: a cause every write meets
// again is said once. A re-check that clears it later logs to log too.
func (c *Conditions) Failed(log hclog.Logger, level hclog.Level, key, what string, err error, check Check, msg string, args ...any) {
	if !c.fail(key, condition{problem: what + ": " + err.Error(), check: check, log: log, what: what}) {
		level = hclog.Debug
	}
	log.Log(level, msg, append(args, "error", err)...)
}

// Recovered clears key and, when it was failing, logs msg with args at
// Info.
func (c *Conditions) Recovered(log hclog.Logger, key, msg string, args ...any) {
	if c.Clear(key) {
		log.Info(msg, args...)
	}
}

// Problems returns the problem texts of the failing keys, sorted; nil when
// nothing fails.
func (c *Conditions) Problems() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) == 0 {
		return nil
	}
	out := make([]string, 0, len(c.problems))
	for _, p := range c.problems {
		out = append(out, p.problem)
	}
	slices.Sort(out)
	return out
}

// Run re-checks the failing conditions that carry a Check every interval
// until ctx ends, clearing each one whose check passes with one Info line.
// It always returns nil.
func (c *Conditions) Run(ctx context.Context) error {
	if c == nil {
		<-ctx.Done()
		return nil
	}
	// A timer re-armed after each round, not a ticker: rounds never
	// overlap or pile up behind a slow check.
	t := c.clock.NewTimer(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.Chan():
			c.recheck()
			t.Reset(c.interval)
		}
	}
}

// recheck runs the checks of the failing conditions, in key order, outside
// the lock, and clears each that passes unless the component has marked it
// again meanwhile (its newer failure wins).
func (c *Conditions) recheck() {
	type due struct {
		key  string
		cond condition
	}
	var todo []due
	c.mu.Lock()
	for k, cond := range c.problems {
		if cond.check != nil {
			todo = append(todo, due{k, cond})
		}
	}
	c.mu.Unlock()
	slices.SortFunc(todo, func(a, b due) int { return strings.Compare(a.key, b.key) })
	for _, d := range todo {
		if d.cond.check() != nil {
			continue
		}
		c.mu.Lock()
		now, ok := c.problems[d.key]
		cleared := ok && now.seq == d.cond.seq
		if cleared {
			delete(c.problems, d.key)
		}
		c.mu.Unlock()
		if cleared {
			log := d.cond.log
			if log == nil {
				log = c.log
			}
			log.Info(d.cond.what+" recovered: its re-check passed", "problem", d.cond.problem)
		}
	}
}
