// Package health keeps the bridge's conditions: what is failing right now
// that an operator must fix, as GET /health reports it ("status":
// "degraded" and "problems"). A component that must write (the
// conversation log and journals, the voice memory, the state files) marks
// its key failing when a write fails and clears it when a write succeeds
// again. The set also decides what is news, so a cause repeated by every
// turn or event is logged once: Failed and Recovered mark and log, Fail
// and Clear only mark and report whether that was news.
package health

import (
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Conditions is the set of failing keys, each with its problem text. One
// set is shared by every component; the zero value is not usable, use New.
// A nil *Conditions holds nothing. Safe for concurrent use.
type Conditions struct {
	mu       sync.Mutex
	problems map[string]string // key → problem
}

// New returns an empty set.
func New() *Conditions { return &Conditions{problems: map[string]string{}} }

// Fail marks key failing with problem, a short text naming the component
// and the error ("conversation log: open /x/convo-2026-11-27.ndjson:
// permission denied"); a key already failing takes the new text. It
// reports whether key was not failing before, which is when the caller
// logs the cause (a nil set: always).
func (c *Conditions) Fail(key, problem string) (news bool) {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.problems[key]
	c.problems[key] = problem
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

// Failed marks key failing with the problem "<what>: <err>" and logs msg,
// with args and the error, at level when the condition begins and at
// Debug while it lasts: a cause every write meets again is said once.
func (c *Conditions) Failed(log hclog.Logger, level hclog.Level, key, what string, err error, msg string, args ...any) {
	if !c.Fail(key, what+": "+err.Error()) {
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
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
