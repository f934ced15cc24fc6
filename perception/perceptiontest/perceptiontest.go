// Package perceptiontest lets a test watch a perception bus and wait for
// the events it expects, in order, with a bounded wait and a failure that
// lists what was published instead.
package perceptiontest

import (
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// queue is the watcher's queue; a test publishing more without reading
// would see drops counted under the consumer name "perceptiontest".
const queue = 4096

// Matcher accepts the event a test is waiting for.
type Matcher func(perception.Event) bool

// Named matches events of one name.
func Named(name string) Matcher {
	return func(ev perception.Event) bool { return ev.Name == name }
}

// Watcher records a bus's events from the moment it was made.
type Watcher struct {
	t   testing.TB
	sub *perception.Subscription
	// skipped are events read while waiting that matched nothing, for the
	// failure message.
	skipped []string
}

// NewWatcher subscribes to b until the test ends.
func NewWatcher(t testing.TB, b *perception.Bus) *Watcher {
	t.Helper()
	w := &Watcher{t: t, sub: b.Consume("perceptiontest", queue)}
	t.Cleanup(w.sub.Close)
	return w
}

// Expect waits up to d for one event matching each matcher, in order;
// events in between that the next matcher does not accept are skipped. It
// returns the matched events, or fails the test naming what it saw.
func (w *Watcher) Expect(d time.Duration, ms ...Matcher) []perception.Event {
	w.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	out := make([]perception.Event, 0, len(ms))
	for len(out) < len(ms) {
		select {
		case ev := <-w.sub.C:
			if ms[len(out)](ev) {
				out = append(out, ev)
			} else {
				w.skipped = append(w.skipped, ev.Name)
			}
		case <-timer.C:
			w.t.Fatalf("perceptiontest: matched %d of %d events within %v; skipped: %s",
				len(out), len(ms), d, strings.Join(w.skipped, ", "))
			return nil
		}
	}
	return out
}

// ExpectNoMore fails the test if an event already published and not yet
// read matches m. It does not wait: it checks what is queued now.
func (w *Watcher) ExpectNoMore(m Matcher) {
	w.t.Helper()
	for {
		select {
		case ev := <-w.sub.C:
			if m(ev) {
				w.t.Errorf("perceptiontest: unexpected %s event %+v", ev.Name, ev.Data)
			}
		default:
			return
		}
	}
}
