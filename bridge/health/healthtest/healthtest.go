// Package healthtest runs a health conditions set's re-checks on a fake
// clock, for the tests of the components that mark it: a test removes the
// cause of a failure, lets one re-check interval pass (Recheck) and reads
// the set, with no real wait and no further write.
package healthtest

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// Set is a conditions set whose Run runs on a fake clock until the test
// ends.
type Set struct {
	*health.Conditions
	clock *clockwork.FakeClock
}

// New starts the set's Run; log receives the recoveries of conditions
// marked with Fail (nil discards).
func New(t testing.TB, log hclog.Logger) *Set {
	t.Helper()
	clock := clockwork.NewFakeClock()
	s := &Set{Conditions: health.NewWith(health.Config{Clock: clock, Logger: log}), clock: clock}
	testkit.Run(t, s, 10*time.Second)
	return s
}

// Recheck lets one re-check interval pass and returns once the re-checks
// it started are done (Run waits on its timer again).
func (s *Set) Recheck(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the conditions' Run is not waiting for its next re-check")
	}
	s.clock.Advance(health.RecheckInterval)
	if err := s.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the re-checks did not finish within 10 s")
	}
}

// Recovers checks a condition's recovery: a re-check while the cause is
// in place keeps the set's want problems; fix then removes the cause (an
// error from it fails the test) and the next re-check clears the set.
func (s *Set) Recovers(t testing.TB, want int, fix func() error) {
	t.Helper()
	s.Recheck(t)
	if got := s.Problems(); len(got) != want {
		t.Errorf("problems %q after a re-check with the cause in place, want %d kept", got, want)
	}
	if err := fix(); err != nil {
		t.Fatal(err)
	}
	s.Recheck(t)
	if got := s.Problems(); got != nil {
		t.Errorf("problems %q after the re-check once the cause is gone, want none", got)
	}
}
