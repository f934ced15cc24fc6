package fanout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func consume(t *testing.T, b *Bus[int], name string, size int, drops prometheus.Counter, filter func(int) bool) *Sub[int] {
	t.Helper()
	s, err := b.Consume(name, size, drops, filter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func watch(t *testing.T, b *Bus[int], size int) *Sub[int] {
	t.Helper()
	s, err := b.Watch(size)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func isDone[T any](s *Sub[T]) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// A full consumer loses the newest values, counted, and keeps its
// subscription; the others get every value in publish order.
func TestConsumerDropsAndCounts(t *testing.T) {
	b := New[int](Config{})
	drops := prometheus.NewCounter(prometheus.CounterOpts{Name: "drops"})
	slow := consume(t, b, "slow", 2, drops, nil)
	fast := consume(t, b, "fast", 10, nil, nil)
	for i := range 5 {
		b.Publish(i)
	}
	for i := range 5 {
		if got := <-fast.C; got != i {
			t.Fatalf("fast got %d, want %d", got, i)
		}
	}
	if got := []int{<-slow.C, <-slow.C}; got[0] != 0 || got[1] != 1 {
		t.Errorf("slow kept %v, want the first two", got)
	}
	if v := testutil.ToFloat64(drops); v != 3 {
		t.Errorf("drops counter %v, want 3", v)
	}
	if b.Dropped() != 3 {
		t.Errorf("Dropped %d, want 3", b.Dropped())
	}
	if isDone(slow) {
		t.Error("a consumer that fell behind was ended")
	}
}

// A filtered consumer gets (and can drop) only the values it accepts.
func TestConsumerFilter(t *testing.T) {
	b := New[int](Config{})
	even := consume(t, b, "even", 2, nil, func(v int) bool { return v%2 == 0 })
	for i := range 4 {
		b.Publish(i)
	}
	if got := []int{<-even.C, <-even.C}; got[0] != 0 || got[1] != 2 {
		t.Errorf("filtered consumer got %v", got)
	}
	if b.Dropped() != 0 {
		t.Errorf("odd values counted as drops: %d", b.Dropped())
	}
}

// A remote subscriber that falls behind is evicted: Done closes, Evicted
// is true, the eviction is counted and logged, and what it had queued is
// still readable for its final frame.
func TestWatcherEvicted(t *testing.T) {
	var logs testkit.LogBuffer
	evictions := prometheus.NewCounter(prometheus.CounterOpts{Name: "evictions"})
	b := New[int](Config{Name: "test", Evictions: evictions,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	w := watch(t, b, 2)
	keep := watch(t, b, 10)
	for i := range 3 {
		b.Publish(i)
	}
	if !isDone(w) || !w.Evicted() {
		t.Fatalf("watcher past its queue: done %v evicted %v", isDone(w), w.Evicted())
	}
	if isDone(keep) || keep.Evicted() {
		t.Error("a watcher with room was evicted")
	}
	if v := testutil.ToFloat64(evictions); v != 1 {
		t.Errorf("evictions %v", v)
	}
	if b.Watchers() != 1 || b.Subscribers() != 1 {
		t.Errorf("watchers %d subscribers %d after the eviction", b.Watchers(), b.Subscribers())
	}
	if !strings.Contains(logs.String(), "test feed client fell behind; disconnecting it") {
		t.Errorf("log %q", logs.String())
	}
	w.Close() // after eviction: no effect, no panic
	if len(w.C) != 2 {
		t.Errorf("evicted queue holds %d", len(w.C))
	}
}

// Close is idempotent; a closed bus ends every subscription without
// calling it an eviction and refuses new ones.
func TestCloseAndBusClose(t *testing.T) {
	b := New[int](Config{})
	c := consume(t, b, "c", 1, nil, nil)
	c.Close()
	c.Close()
	if !isDone(c) || c.Evicted() || b.Subscribers() != 0 {
		t.Fatalf("closed consumer: done %v evicted %v subscribers %d", isDone(c), c.Evicted(), b.Subscribers())
	}
	w := watch(t, b, 1)
	b.Close()
	if !isDone(w) || w.Evicted() {
		t.Errorf("bus close: done %v evicted %v", isDone(w), w.Evicted())
	}
	if _, err := b.Watch(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close: %v", err)
	}
	if _, err := b.Consume("late", 1, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Consume after Close: %v", err)
	}
	b.Publish(1) // no subscribers, no panic
}

// The "dropping" warning is written at most once per WarnEvery on the
// bus's clock, with the number missed since the last one.
func TestDropWarningThrottled(t *testing.T) {
	var logs testkit.LogBuffer
	clk := clockwork.NewFakeClock()
	b := New[int](Config{Name: "test", Clock: clk, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	consume(t, b, "stuck", 1, nil, nil)
	b.Publish(0) // queued
	for i := range 5 {
		b.Publish(i) // dropped: the first warns
	}
	if n := strings.Count(logs.String(), "fell behind"); n != 1 {
		t.Fatalf("%d warnings for a burst, want 1:\n%s", n, logs.String())
	}
	clk.Advance(9 * time.Second)
	b.Publish(9)
	if n := strings.Count(logs.String(), "fell behind"); n != 1 {
		t.Fatalf("warned again after 9 s:\n%s", logs.String())
	}
	clk.Advance(time.Second)
	b.Publish(10)
	if n := strings.Count(logs.String(), "fell behind"); n != 2 || !strings.Contains(logs.String(), "dropped=6") {
		t.Errorf("second warning (want dropped=6 since the first):\n%s", logs.String())
	}
}

// Subscribers that come and go while others publish leave nothing behind:
// no subscription, no goroutine, every value in order for those that
// stayed.
func TestConcurrentFlood(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := New[int](Config{})
	stay := consume(t, b, "stay", 5000, nil, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				var s *Sub[int]
				var err error
				if i%2 == 0 {
					s, err = b.Watch(1)
				} else {
					s, err = b.Consume("churn", 1, nil, nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
				s.Close()
			}
		}()
	}
	for i := range 5000 {
		b.Publish(i)
	}
	wg.Wait()
	for i := range 5000 {
		if got := <-stay.C; got != i {
			t.Fatalf("value %d arrived as %d", i, got)
		}
	}
	stay.Close()
	if n := b.Subscribers(); n != 0 {
		t.Errorf("%d subscribers left", n)
	}
}

// Run hands values to fn in order and ticks after Every of silence, a
// value starting the wait over; it ends with ctx and closes the
// subscription.
func TestRunHandsValuesAndTicks(t *testing.T) {
	b := New[int](Config{})
	clock := clockwork.NewFakeClock()
	s := consume(t, b, "run", 8, nil, nil)
	got := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, func(v int) { got <- fmt.Sprint(v) }, Idle{Every: time.Minute, Clock: clock, Fn: func() { got <- "tick" }})
	}()
	next := func() string {
		return testkit.Recv(t, 5*time.Second, got, "Run handed nothing within 5s")
	}
	b.Publish(1)
	b.Publish(2)
	if a, c := next(), next(); a != "1" || c != "2" {
		t.Fatalf("got %s, %s; want 1, 2 in order", a, c)
	}
	wait, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if err := clock.BlockUntilContext(wait, 1); err != nil {
		t.Fatalf("the idle timer was not armed: %v", err)
	}
	clock.Advance(time.Minute)
	if v := next(); v != "tick" {
		t.Fatalf("got %s after a minute of silence, want tick", v)
	}
	cancel()
	testkit.Recv(t, 5*time.Second, done, "Run did not end with its ctx")
	if !isDone(s) || b.Subscribers() != 0 {
		t.Error("Run ended without closing the subscription")
	}
}

// Run ends when the subscription does (the bus closed).
func TestRunEndsWithTheBus(t *testing.T) {
	b := New[int](Config{})
	s := consume(t, b, "run", 1, nil, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(context.Background(), func(int) {}, Idle{})
	}()
	b.Close()
	testkit.Recv(t, 5*time.Second, done, "Run did not end when the bus closed")
}

// Pending counts what the internal consumers have not finished: the
// value a Run handler holds plus the values queued behind it; a
// watcher's queue is not counted, and a finished value leaves the count.
func TestPendingCountsUnfinishedWork(t *testing.T) {
	b := New[int](Config{})
	s := consume(t, b, "slow", 8, nil, nil)
	w := watch(t, b, 8)
	defer w.Close()
	release := make(chan struct{})
	handled := make(chan int, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, func(v int) {
			if v == 1 {
				<-release
			}
			handled <- v
		}, Idle{})
	}()
	for v := 1; v <= 3; v++ {
		b.Publish(v)
	}
	testkit.WaitFor(t, 5*time.Second, "the first value held and two queued", func() bool { return b.Pending() == 3 })
	close(release)
	for range 3 {
		testkit.Recv(t, 5*time.Second, handled, "a value not handled within 5s")
	}
	testkit.WaitFor(t, 5*time.Second, "nothing pending", func() bool { return b.Pending() == 0 })
	cancel()
	testkit.Recv(t, 5*time.Second, done, "Run did not end with its ctx")
}
